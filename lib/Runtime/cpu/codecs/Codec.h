//===- Codec.h - Codec descriptors and serialized code layouts --*- C++ -*-===//
//
// A ptrain_codec_t names one codec instance; its code tensors, in the order
// of the dialect's codec attribute, are serialized back to back into one
// byte buffer, each section starting at a multiple of 8 bytes:
//
//   powersgd  P f32 [batch, rows, rank], Q f32 [batch, cols, rank]
//   topk      values [k] of value_dtype (f32, or bf16 / f16 as u16), indices i32 [k]
//   randk     values [k] of value_dtype
//   quant     packed u8 [ceil(numel * bits / 8)], scales f32 [S],
//             zero points f32 [S] (asymmetric only)
//   cast      u16 [numel]
//   tahquant  packed u8 [tile (k bits + (T - k) low_bits) / 8], scales f32
//             [T], zero points f32 [T], flags u8 [T] (T = numel / tile)
//
// The compressed collectives and compressed send/recv move these buffers.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CODECS_CODEC_H
#define PTRAIN_RUNTIME_CPU_CODECS_CODEC_H

#include "common/Status.h"

namespace ptrain::runtime {

/// Byte offsets of a serialized code's sections (unused ones are 0).
struct CodeLayout {
  int64_t numel = 0;
  int64_t offset[4] = {0, 0, 0, 0};
  int64_t total = 0;
};

/// Validates `codec` (naming the bad field) and computes its code layout.
ptrain_status_t codecLayout(const char *call, const ptrain_codec_t *codec, CodeLayout &out);

/// Whether the codec's codes can be summed in compressed form (PowerSGD
/// factors, rand-k with a shared seed, casts) or must be gathered, decoded
/// and summed (top-k, quantization); Bian et al., MLSys 2024.
inline bool codecIsSummable(const ptrain_codec_t &codec) {
  return codec.kind == PTRAIN_CODEC_POWERSGD || codec.kind == PTRAIN_CODEC_RANDK || codec.kind == PTRAIN_CODEC_CAST;
}

/// Whether a (valid) descriptor's top-k or rand-k values are 16-bit (value_dtype bf16 or f16, descriptor
/// version 2): rounded to nearest even after the f32 selection, widened before the f32 decode.
inline bool isHalfValues(const ptrain_codec_t &codec) {
  return (codec.kind == PTRAIN_CODEC_TOPK || codec.kind == PTRAIN_CODEC_RANDK) &&
         (codec.value_dtype == PTRAIN_DTYPE_BF16 || codec.value_dtype == PTRAIN_DTYPE_F16);
}

/// The bytes of one sent top-k / rand-k value: 2 for 16-bit values, else 4.
inline int64_t codecValueBytes(const ptrain_codec_t &codec) { return isHalfValues(codec) ? 2 : 4; }

/// values (k floats) rounded to nearest even into the descriptor's 16-bit value_dtype.
void roundCodecValues(const ptrain_codec_t &codec, const float *values, int64_t k, uint16_t *out);

/// 16-bit values of the descriptor's value_dtype widened exactly into k floats.
void widenCodecValues(const ptrain_codec_t &codec, const uint16_t *values, int64_t k, float *out);

/// Checks a sparsifier's sizes: n in [1, INT32_MAX] (int32 indices), k in
/// [1, n]; shared by top-k and rand-k.
ptrain_status_t checkSparsity(const char *call, int64_t n, int64_t k);

/// A short description for error messages: "powersgd rank 4 on 1x64x64".
void describeCodec(const ptrain_codec_t &codec, char *buf, size_t size);

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CODECS_CODEC_H
