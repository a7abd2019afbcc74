//===- HostDevice.h - Functions both the CPU and the GPU kernels call -*- C++ -*-===//
//
// PTRAIN_HOST_DEVICE marks an inline function of lib/Runtime/common that the
// CPU kernels (lib/Runtime/cpu, host C++) and the CUDA kernels
// (lib/Runtime/cuda, nvcc) share, so both targets compute one definition:
// __host__ __device__ under nvcc, plain inline elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_HOSTDEVICE_H
#define PTRAIN_RUNTIME_COMMON_HOSTDEVICE_H

#ifdef __CUDACC__
#define PTRAIN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PTRAIN_HOST_DEVICE inline
#endif

#endif // PTRAIN_RUNTIME_COMMON_HOSTDEVICE_H
