//===- GridStride.h - The grid-stride loop of the model kernels -*- C++ -*-===//
//
// PTRAIN_GRID_STRIDE(i, n): every index i in [0, n) visited once by the
// launch's threads, whatever the grid size (the elementwise kernels of
// ModelElementwise.cu, ModelVocabParallel.cu and ModelSelection.cu).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_GRIDSTRIDE_H
#define PTRAIN_RUNTIME_CUDA_GRIDSTRIDE_H

#define PTRAIN_GRID_STRIDE(i, n)                                                                                       \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                               \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

#endif // PTRAIN_RUNTIME_CUDA_GRIDSTRIDE_H
