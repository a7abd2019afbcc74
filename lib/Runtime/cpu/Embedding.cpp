//===- Embedding.cpp - Embedding gather and scatter-add -------------------===//

#include "common/Status.h"

#include <cstring>

extern "C" ptrain_status_t ptrain_embedding_fwd_f32(const float *table,
                                                    const int32_t *ids,
                                                    int64_t n, int64_t vocab,
                                                    int64_t dim, float *out_y) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_SIZE(vocab);
  PTRAIN_CHECK_SIZE(dim);
  PTRAIN_CHECK_PTR(table);
  PTRAIN_CHECK_PTR(ids);
  PTRAIN_CHECK_PTR(out_y);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = ids[i];
    PTRAIN_CHECK_ARG(id >= 0 && id < vocab,
                     "ids[%lld] = %lld is outside the vocabulary [0, %lld)",
                     static_cast<long long>(i), static_cast<long long>(id),
                     static_cast<long long>(vocab));
    std::memcpy(out_y + i * dim, table + id * dim, sizeof(float) * dim);
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_embedding_bwd_f32(const float *dy,
                                                    const int32_t *ids,
                                                    int64_t n, int64_t vocab,
                                                    int64_t dim,
                                                    float *out_dtable) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_SIZE(vocab);
  PTRAIN_CHECK_SIZE(dim);
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(ids);
  PTRAIN_CHECK_PTR(out_dtable);
  // Validate every id first so a bad id leaves out_dtable untouched.
  for (int64_t i = 0; i < n; ++i)
    PTRAIN_CHECK_ARG(ids[i] >= 0 && ids[i] < vocab,
                     "ids[%lld] = %lld is outside the vocabulary [0, %lld)",
                     static_cast<long long>(i),
                     static_cast<long long>(ids[i]),
                     static_cast<long long>(vocab));
  for (int64_t i = 0; i < n; ++i) {
    float *row = out_dtable + static_cast<int64_t>(ids[i]) * dim;
    const float *g = dy + i * dim;
    for (int64_t d = 0; d < dim; ++d)
      row[d] += g[d];
  }
  return PTRAIN_OK;
}
