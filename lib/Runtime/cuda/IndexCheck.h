//===- IndexCheck.h - Data-dependent errors of the model kernels -*- C++ -*-===//
//
// A kernel cannot stop at an id, target, label or index outside its range, nor
// at a float that does not fit an integer: it skips the element and records the
// first one in a device flag of its translation unit (the runtime is compiled
// without relocatable device code, so each .cu that includes this header has
// its own flag). ptrain_cuda_check_indices (ModelRows.cu) takes every unit's
// flag through its take*IndexError() function, reports the first one by call,
// position, value and range, and clears them.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_INDEXCHECK_H
#define PTRAIN_RUNTIME_CUDA_INDEXCHECK_H

#include "cuda/Device.h"

namespace ptrain::cuda {

/// The call that met a bad element (0: none); ptrain_cuda_check_indices names it and words its message.
enum IndexCall : int32_t {
  kNoIndexError = 0,
  kEmbeddingFwd,
  kEmbeddingBwd,
  kCrossEntropy,
  kCastElements,
  kGatherAxis,
  kVocabEmbeddingFwd,
  kVocabEmbeddingBwd,
  kVocabCePartsFwd,
  kVocabCePartsBwd,
  kCrossEntropyBwd,
  kCrossEntropyWeightedFwd,
  kCrossEntropyWeightedBwd,
};

/// The first bad element a kernel met: `value` outside [low, bound), or (kCastElements) `real` not an int64
/// (the cross-entropy: `real` = 1 when the call had an ignore_index).
struct IndexError {
  int32_t call;
  int64_t position;
  int64_t value;
  int64_t low;
  int64_t bound;
  double real;
};

/// Each unit's flag, copied out and cleared (a DEVICE error if the copies fail).
ptrain_status_t takeRowsIndexError(IndexError &out);
ptrain_status_t takeSelectionIndexError(IndexError &out);
ptrain_status_t takeVocabParallelIndexError(IndexError &out);
ptrain_status_t takeCrossEntropyIndexError(IndexError &out);

} // namespace ptrain::cuda

#ifdef __CUDACC__
namespace {

__device__ ptrain::cuda::IndexError gIndexError;
__device__ int32_t gIndexErrorClaimed;

/// Records the first bad element of this unit's kernels (later ones are dropped).
__device__ void recordIndexError(ptrain::cuda::IndexCall call, int64_t position, int64_t value, int64_t low,
                                 int64_t bound, double real = 0.0) {
  if (atomicCAS(&gIndexErrorClaimed, 0, 1) == 0) {
    gIndexError.position = position;
    gIndexError.value = value;
    gIndexError.low = low;
    gIndexError.bound = bound;
    gIndexError.real = real;
    __threadfence();
    gIndexError.call = call;
  }
}

/// This unit's flag into `out` and cleared; call after the stream is synchronized.
ptrain_status_t takeUnitIndexError(const char *call, ptrain::cuda::IndexError &out) {
  PTRAIN_CUDA_RETURN_IF_ERROR(
      ptrain::cuda::check(call, cudaMemcpyFromSymbol(&out, gIndexError, sizeof(out)), "cudaMemcpyFromSymbol"));
  if (out.call == ptrain::cuda::kNoIndexError)
    return PTRAIN_OK;
  const ptrain::cuda::IndexError none{};
  const int32_t zero = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(
      ptrain::cuda::check(call, cudaMemcpyToSymbol(gIndexError, &none, sizeof(none)), "cudaMemcpyToSymbol"));
  return ptrain::cuda::check(call, cudaMemcpyToSymbol(gIndexErrorClaimed, &zero, sizeof(zero)), "cudaMemcpyToSymbol");
}

} // namespace
#endif // __CUDACC__

#endif // PTRAIN_RUNTIME_CUDA_INDEXCHECK_H
