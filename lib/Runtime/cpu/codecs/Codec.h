//===- Codec.h - Codec descriptors and serialized code layouts --*- C++ -*-===//
//
// A ptrain_codec_t names one codec instance; its code tensors, in the order
// of the dialect's codec attribute, are serialized back to back into one
// byte buffer, each section starting at a multiple of 8 bytes:
//
//   powersgd  P f32 [batch, rows, rank], Q f32 [batch, cols, rank]
//   topk      values f32 [k], indices i32 [k]
//   randk     values f32 [k]
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

/// Checks a sparsifier's sizes: n in [1, INT32_MAX] (int32 indices), k in
/// [1, n]; shared by top-k and rand-k.
ptrain_status_t checkSparsity(const char *call, int64_t n, int64_t k);

/// A short description for error messages: "powersgd rank 4 on 1x64x64".
void describeCodec(const ptrain_codec_t &codec, char *buf, size_t size);

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CODECS_CODEC_H
