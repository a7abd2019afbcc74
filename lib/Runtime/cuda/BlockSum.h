//===- BlockSum.h - A thread block's fp64 sum, for the model kernels -*- C++ -*-===//
//
// The tree sum (and max) over one thread block that the row kernels
// (ModelRows.cu, ModelCrossEntropy.cu, ModelVocabParallel.cu) and the
// global-norm sum (ModelOptimizer.cu) share.
// A __device__ inline function: each .cu gets its own copy (the runtime has
// no relocatable device code).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_BLOCKSUM_H
#define PTRAIN_RUNTIME_CUDA_BLOCKSUM_H

#ifdef __CUDACC__
namespace ptrain::cuda {

/// The sum of `v` over the block (every thread gets it); `shared` holds blockDim.x doubles, a power of two.
/// `shared` may be reused after the call (it ends with a barrier).
__device__ __forceinline__ double blockSum(double v, double *shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double r = shared[0];
  __syncthreads();
  return r;
}

/// The maximum of `v` over the block (NaN-free inputs; `shared` holds blockDim.x floats).
__device__ __forceinline__ float blockMax(float v, float *shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = shared[0];
  __syncthreads();
  return r;
}

} // namespace ptrain::cuda
#endif // __CUDACC__

#endif // PTRAIN_RUNTIME_CUDA_BLOCKSUM_H
