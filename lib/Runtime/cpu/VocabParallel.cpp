//===- VocabParallel.cpp - Vocabulary-parallel embedding and loss kernels ---===//
//
// The rank-local kernels of Megatron-LM's vocabulary-parallel embedding and
// cross-entropy (Shoeybi et al. 2019, section 3; megatron/core/tensor_parallel
// layers.py VocabParallelEmbedding, cross_entropy.py
// _VocabParallelCrossEntropy; PTrainVocabParallelOps.td), and the all-gather
// along one dimension of ptrain.tp_all_gather. Rank `part` of `parts` holds
// rows [part rows, (part + 1) rows) of the padded vocabulary. Sums and
// exponentials are computed in fp64 and rounded once, in the order of the
// reference interpreter's kernels (lib/Interpreter/VocabParallel.cpp), so the
// results are its bit for bit.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>

namespace {

/// Checks `part` of `parts` and that every id is in the padded vocabulary [0, rows * parts).
ptrain_status_t checkIds(const char *call, const int64_t *ids, int64_t n, int64_t rows, int64_t part, int64_t parts) {
  if (parts < 1 || part < 0 || part >= parts)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "part %lld of %lld is not a rank of the axis",
                                 static_cast<long long>(part), static_cast<long long>(parts));
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= rows * parts)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                   "ids[%lld] = %lld is outside the vocabulary [0, %lld)", static_cast<long long>(i),
                                   static_cast<long long>(ids[i]), static_cast<long long>(rows * parts));
  return PTRAIN_OK;
}

/// The arguments both cross-entropy kernels share; labels must be in the real vocabulary [0, vocab).
ptrain_status_t checkParts(const char *call, const int64_t *labels, int64_t n, int64_t cols, int64_t vocab,
                           int64_t part, int64_t parts) {
  if (parts < 1 || part < 0 || part >= parts)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "part %lld of %lld is not a rank of the axis",
                                 static_cast<long long>(part), static_cast<long long>(parts));
  if (vocab < 1 || vocab > cols * parts)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "vocab %lld is not in [1, %lld]",
                                 static_cast<long long>(vocab), static_cast<long long>(cols * parts));
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= vocab)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                   "labels[%lld] = %lld is outside the vocabulary [0, %lld)", static_cast<long long>(i),
                                   static_cast<long long>(labels[i]), static_cast<long long>(vocab));
  return PTRAIN_OK;
}

} // namespace

extern "C" ptrain_status_t ptrain_vocab_parallel_embedding_fwd_f32(const float *table, const int64_t *ids, int64_t n,
                                                                   int64_t rows, int64_t dim, int64_t part,
                                                                   int64_t parts, float *out_y) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(dim);
  PTRAIN_CHECK_PTR(table);
  PTRAIN_CHECK_PTR(ids);
  PTRAIN_CHECK_PTR(out_y);
  PTRAIN_RETURN_IF_ERROR(checkIds(__func__, ids, n, rows, part, parts));
  const int64_t first = part * rows;
  for (int64_t i = 0; i < n; ++i) {
    float *y = out_y + i * dim;
    if (ids[i] >= first && ids[i] < first + rows)
      std::memcpy(y, table + (ids[i] - first) * dim, sizeof(float) * dim);
    else
      std::memset(y, 0, sizeof(float) * dim);
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_vocab_parallel_embedding_bwd_f32(const float *dy, const int64_t *ids, int64_t n,
                                                                   int64_t rows, int64_t dim, int64_t part,
                                                                   int64_t parts, float *out_dtable) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_SIZE(dim);
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(ids);
  PTRAIN_CHECK_PTR(out_dtable);
  // Every id is checked first, so a bad one leaves out_dtable untouched.
  PTRAIN_RETURN_IF_ERROR(checkIds(__func__, ids, n, rows, part, parts));
  const int64_t first = part * rows;
  std::unique_ptr<double[]> acc(new (std::nothrow) double[rows * dim > 0 ? rows * dim : 1]());
  if (!acc)
    return ptrain::runtime::fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate %lld fp64 sums",
                                 static_cast<long long>(rows * dim));
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < first || ids[i] >= first + rows)
      continue; // the row is another rank's
    double *row = acc.get() + (ids[i] - first) * dim;
    const float *g = dy + i * dim;
    for (int64_t d = 0; d < dim; ++d)
      row[d] += g[d];
  }
  for (int64_t j = 0; j < rows * dim; ++j)
    out_dtable[j] = static_cast<float>(acc[j]);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_vocab_parallel_ce_parts_fwd_f32(const float *logits, const int64_t *labels,
                                                                  const float *max, int64_t n, int64_t cols,
                                                                  int64_t vocab, int64_t part, int64_t parts,
                                                                  float *out_sum_exp, float *out_target) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(logits);
  PTRAIN_CHECK_PTR(labels);
  PTRAIN_CHECK_PTR(max);
  PTRAIN_CHECK_PTR(out_sum_exp);
  PTRAIN_CHECK_PTR(out_target);
  PTRAIN_RETURN_IF_ERROR(checkParts(__func__, labels, n, cols, vocab, part, parts));
  const int64_t first = part * cols;
  // The rank's columns that are real vocabulary entries: the padded ones are masked out (-inf).
  const int64_t valid = std::clamp<int64_t>(vocab - first, 0, cols);
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits + i * cols;
    const double m = max[i];
    double s = 0.0;
    for (int64_t c = 0; c < valid; ++c)
      s += std::exp(static_cast<double>(row[c]) - m);
    out_sum_exp[i] = static_cast<float>(s);
    const int64_t label = labels[i];
    out_target[i] =
        label >= first && label < first + cols ? static_cast<float>(static_cast<double>(row[label - first]) - m) : 0.0f;
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_vocab_parallel_ce_parts_bwd_f32(const float *d_sum_exp, const float *d_target,
                                                                  const float *logits, const int64_t *labels,
                                                                  const float *max, int64_t n, int64_t cols,
                                                                  int64_t vocab, int64_t part, int64_t parts,
                                                                  float *out_dlogits) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_SIZE(cols);
  PTRAIN_CHECK_PTR(d_sum_exp);
  PTRAIN_CHECK_PTR(d_target);
  PTRAIN_CHECK_PTR(logits);
  PTRAIN_CHECK_PTR(labels);
  PTRAIN_CHECK_PTR(max);
  PTRAIN_CHECK_PTR(out_dlogits);
  PTRAIN_RETURN_IF_ERROR(checkParts(__func__, labels, n, cols, vocab, part, parts));
  const int64_t first = part * cols;
  const int64_t valid = std::clamp<int64_t>(vocab - first, 0, cols);
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits + i * cols;
    float *o = out_dlogits + i * cols;
    const double m = max[i], ds = d_sum_exp[i];
    const int64_t at = labels[i] >= first && labels[i] < first + cols ? labels[i] - first : -1;
    for (int64_t c = 0; c < cols; ++c) {
      double v = c < valid ? ds * std::exp(static_cast<double>(row[c]) - m) : 0.0;
      if (c == at)
        v += d_target[i];
      o[c] = static_cast<float>(v);
    }
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_all_gather_dim(ptrain_comm_t comm, const void *x, ptrain_dtype_t dtype, int32_t rank,
                                                 const int64_t *dims, int32_t dim, void *out) {
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  PTRAIN_CHECK_PTR(dims);
  PTRAIN_CHECK_ARG(dim >= 0 && dim < rank, "dim %d is not in [0, %d)", dim, rank);
  PTRAIN_CHECK_ARG(dtype == PTRAIN_DTYPE_F32 || dtype == PTRAIN_DTYPE_I64, "dtype %d is not F32 (0) or I64 (2)", dtype);
  int32_t parts = 0;
  PTRAIN_RETURN_IF_ERROR(ptrain_comm_size(comm, &parts));
  const int64_t elem = dtype == PTRAIN_DTYPE_F32 ? 4 : 8;
  int64_t outer = 1, inner = elem;
  for (int32_t d = 0; d < rank; ++d) {
    PTRAIN_CHECK_SIZE(dims[d]);
    (d < dim ? outer : inner) *= dims[d];
  }
  const int64_t count = outer * inner / elem;
  ptrain_request_t request = nullptr;
  if (outer == 1) { // rank-major is already the result's layout
    PTRAIN_RETURN_IF_ERROR(ptrain_all_gather_start(comm, x, out, count, dtype, &request));
    return ptrain_wait(request);
  }
  // Gathered as [parts][outer][inner], then interleaved to [outer][parts][inner].
  std::unique_ptr<unsigned char[]> gathered(new (std::nothrow) unsigned char[parts * outer * inner]);
  if (!gathered)
    return ptrain::runtime::fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate %lld bytes",
                                 static_cast<long long>(parts * outer * inner));
  PTRAIN_RETURN_IF_ERROR(ptrain_all_gather_start(comm, x, gathered.get(), count, dtype, &request));
  PTRAIN_RETURN_IF_ERROR(ptrain_wait(request));
  auto *o = static_cast<unsigned char *>(out);
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t i = 0; i < outer; ++i)
      std::memcpy(o + (i * parts + p) * inner, gathered.get() + (p * outer + i) * inner, inner);
  return PTRAIN_OK;
}
