//===- Attention.cpp - Multi-head attention from GEMM and softmax ---------===//
//
// Scaled dot-product attention of Vaswani et al. 2017, "Attention Is All You
// Need", eq. 1, batched over [batch, heads], composed from ptrain_gemm_f32 and
// the softmax kernels so that it has exactly their numerics:
//   forward   P = softmax(scale Q K^T [causal]),  O = P V
//   backward  dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),
//             dQ = scale dS K,  dK = scale dS^T Q.
// The probabilities are materialized ([B, H, S, S]); at the walking-skeleton
// size (S = 64) that is cheap, and a fused (flash) kernel can replace it
// behind the same call.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

namespace {
ptrain_status_t checkShape(const char *call, int64_t batch, int64_t heads,
                           int64_t seq, int64_t headDim) {
  if (batch < 0 || heads < 0 || seq < 0 || headDim < 0)
    return ptrain::runtime::fail(
        PTRAIN_ERROR_INVALID_ARGUMENT, call,
        "batch, heads, seq, head_dim must be >= 0, got %lld, %lld, %lld, %lld",
        static_cast<long long>(batch), static_cast<long long>(heads),
        static_cast<long long>(seq), static_cast<long long>(headDim));
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t
ptrain_attention_fwd_f32(const float *q, const float *k, const float *v,
                         int64_t batch, int64_t heads, int64_t seq,
                         int64_t head_dim, float scale, int32_t causal,
                         float *out_o, float *out_probs) {
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, batch, heads, seq, head_dim));
  PTRAIN_CHECK_PTR(q);
  PTRAIN_CHECK_PTR(k);
  PTRAIN_CHECK_PTR(v);
  PTRAIN_CHECK_PTR(out_o);
  PTRAIN_CHECK_PTR(out_probs);
  const int64_t bh = batch * heads, sd = seq * head_dim, ss = seq * seq;
  if (bh == 0 || seq == 0)
    return PTRAIN_OK;
  // Scores: scale * Q K^T, [bh, S, S], written straight into out_probs.
  PTRAIN_RETURN_IF_ERROR(ptrain_gemm_f32(0, 1, bh, seq, seq, head_dim, scale,
                                         q, sd, k, sd, 0.0f, out_probs, ss));
  // Softmax in place: the kernel reads each element before writing it.
  PTRAIN_RETURN_IF_ERROR(
      ptrain_softmax_fwd_f32(out_probs, bh * seq, seq, causal, out_probs));
  return ptrain_gemm_f32(0, 0, bh, seq, head_dim, seq, 1.0f, out_probs, ss, v,
                         sd, 0.0f, out_o, sd);
}

extern "C" ptrain_status_t
ptrain_attention_bwd_f32(const float *d_o, const float *q, const float *k,
                         const float *v, const float *probs, int64_t batch,
                         int64_t heads, int64_t seq, int64_t head_dim,
                         float scale, float *workspace, float *out_dq,
                         float *out_dk, float *out_dv) {
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, batch, heads, seq, head_dim));
  PTRAIN_CHECK_PTR(d_o);
  PTRAIN_CHECK_PTR(q);
  PTRAIN_CHECK_PTR(k);
  PTRAIN_CHECK_PTR(v);
  PTRAIN_CHECK_PTR(probs);
  PTRAIN_CHECK_PTR(workspace);
  PTRAIN_CHECK_PTR(out_dq);
  PTRAIN_CHECK_PTR(out_dk);
  PTRAIN_CHECK_PTR(out_dv);
  const int64_t bh = batch * heads, sd = seq * head_dim, ss = seq * seq;
  if (bh == 0 || seq == 0)
    return PTRAIN_OK;
  // dV = P^T dO.
  PTRAIN_RETURN_IF_ERROR(ptrain_gemm_f32(1, 0, bh, seq, head_dim, seq, 1.0f,
                                         probs, ss, d_o, sd, 0.0f, out_dv, sd));
  // dP = dO V^T into the workspace, then dS = softmax_bwd(dP, P) in place.
  PTRAIN_RETURN_IF_ERROR(ptrain_gemm_f32(0, 1, bh, seq, seq, head_dim, 1.0f,
                                         d_o, sd, v, sd, 0.0f, workspace, ss));
  PTRAIN_RETURN_IF_ERROR(
      ptrain_softmax_bwd_f32(workspace, probs, bh * seq, seq, workspace));
  // dQ = scale dS K, dK = scale dS^T Q.
  PTRAIN_RETURN_IF_ERROR(ptrain_gemm_f32(0, 0, bh, seq, head_dim, seq, scale,
                                         workspace, ss, k, sd, 0.0f, out_dq,
                                         sd));
  return ptrain_gemm_f32(1, 0, bh, seq, head_dim, seq, scale, workspace, ss, q,
                         sd, 0.0f, out_dk, sd);
}
