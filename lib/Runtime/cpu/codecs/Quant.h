//===- Quant.h - Uniform 2/4/8-bit quantization kernels ----------*- C++ -*-===//
//
// The quantization codec (#ptrain.quant; Bian et al., MLSys 2024, "The
// compressors"): round-to-nearest-even uniform quantization of a tensor seen
// as `rows x cols` (the matrix view), one scale per tensor, per column
// (channel) or per `block` consecutive elements, packed 8 / bits values per
// byte, element i at bits [(i * bits) % 8, ...) of byte (i * bits) / 8 (LSB
// first).
//
//   symmetric:  q = 2^(bits-1) - 1, s = amax / q, code u = rn(v / s) + 2^(bits-1)
//               in [1, 2^bits - 1], decode (u - 2^(bits-1)) * s;
//   asymmetric: s = (max - min) / (2^bits - 1), zero point z = min,
//               u = rn((v - z) / s) in [0, 2^bits - 1], decode u * s + z;
//
// where v / s is computed as v * (1 / s) and clamped to the code range before
// rounding, and s = 0 (a constant group) encodes every value as the zero code.
// With error feedback the encoder quantizes v = g + e and leaves
// e = v - decode(u).
//
// Two implementations share these formulas: quantEncodeGeneric /
// quantDecodeGeneric (bits at run time, one element at a time: the
// reference), and quantEncode<Bits> / quantDecode<Bits> (whole bytes at a
// time; block granularity with blocks a multiple of 8 / bits elements runs in
// one pass over memory, computing each block's scale while it is in cache).
// The tests check every instance against the generic kernel bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CODECS_QUANT_H
#define PTRAIN_RUNTIME_CPU_CODECS_QUANT_H

#include "ptrain/Runtime/ptrain_runtime.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ptrain::runtime {

/// What a quantization call quantizes: `numel` = rows * cols elements.
struct QuantLayout {
  int64_t numel = 0;
  int64_t cols = 1;
  int32_t bits = 8;
  int32_t granularity = PTRAIN_QUANT_CHANNEL;
  int64_t block = 0;
  bool symmetric = true;

  int64_t numScales() const {
    switch (granularity) {
    case PTRAIN_QUANT_TENSOR:
      return numel > 0 ? 1 : 0;
    case PTRAIN_QUANT_CHANNEL:
      return cols;
    default:
      return (numel + block - 1) / block;
    }
  }
  int64_t packedBytes() const { return (numel * bits + 7) / 8; }
  int64_t group(int64_t i) const {
    return granularity == PTRAIN_QUANT_TENSOR ? 0 : granularity == PTRAIN_QUANT_CHANNEL ? i % cols : i / block;
  }
};

/// Round to nearest, ties to even, for |t| <= 2^22 (code values are at most
/// 255): adding and subtracting 1.5 * 2^23 leaves the rounded integer (IEEE
/// arithmetic in the default rounding mode; the project never builds with
/// -ffast-math, which would fold it away).
inline float roundEven(float t) {
  const float magic = 12582912.0f;
  return (t + magic) - magic;
}

/// One group's quantizer: everything the formulas above need.
struct QuantGroup {
  float scale, inv, zero;
  float maxCode; // 2^bits - 1 (asymmetric) or q (symmetric)
  float minCode; // 0 (asymmetric) or -q (symmetric)
  float offset;  // 2^(bits-1) (symmetric) or 0
  bool symmetric;

  static QuantGroup make(int bits, bool symmetric, float lo, float hi) {
    QuantGroup g;
    g.symmetric = symmetric;
    if (symmetric) {
      const float q = static_cast<float>((1 << (bits - 1)) - 1);
      const float amax = std::fmax(std::fabs(lo), std::fabs(hi));
      g.scale = amax / q;
      g.zero = 0.0f;
      g.maxCode = q;
      g.minCode = -q;
      g.offset = static_cast<float>(1 << (bits - 1));
    } else {
      g.scale = (hi - lo) / static_cast<float>((1 << bits) - 1);
      g.zero = lo;
      g.maxCode = static_cast<float>((1 << bits) - 1);
      g.minCode = 0.0f;
      g.offset = 0.0f;
    }
    g.inv = g.scale > 0.0f ? 1.0f / g.scale : 0.0f;
    return g;
  }
  uint32_t encode(float v) const {
    float t = (v - zero) * inv;
    t = t < minCode ? minCode : (t > maxCode ? maxCode : t);
    return static_cast<uint32_t>(static_cast<int32_t>(roundEven(t) + offset));
  }
  float decode(uint32_t u) const {
    return symmetric ? (static_cast<float>(u) - offset) * scale : static_cast<float>(u) * scale + zero;
  }
  /// The stored zero point (asymmetric codes only).
  float zeroPoint() const { return zero; }
};

/// Group statistics, shared by both implementations: min and max of every
/// group into lo[numScales], hi[numScales]; with a residual, v = g + e is
/// written back into it first. Returns the first non-finite element or -1.
inline int64_t quantStats(const QuantLayout &l, const float *g, float *residual, float *lo, float *hi) {
  const int64_t groups = l.numScales();
  for (int64_t s = 0; s < groups; ++s) {
    lo[s] = FLT_MAX;
    hi[s] = -FLT_MAX;
  }
  bool bad = false;
  const float *v = residual ? residual : g;
  auto visit = [&](int64_t begin, int64_t end, int64_t s) {
    float a = lo[s], b = hi[s];
    for (int64_t i = begin; i < end; ++i) {
      float x = v[i];
      if (residual) {
        x += g[i];
        residual[i] = x;
      }
      bad |= !(std::fabs(x) <= FLT_MAX);
      a = x < a ? x : a;
      b = x > b ? x : b;
    }
    lo[s] = a;
    hi[s] = b;
  };
  if (l.granularity == PTRAIN_QUANT_CHANNEL) {
    for (int64_t r = 0; r < l.numel / l.cols; ++r) {
      const int64_t base = r * l.cols;
      for (int64_t c = 0; c < l.cols; ++c) {
        float x = v[base + c];
        if (residual) {
          x += g[base + c];
          residual[base + c] = x;
        }
        bad |= !(std::fabs(x) <= FLT_MAX);
        lo[c] = x < lo[c] ? x : lo[c];
        hi[c] = x > hi[c] ? x : hi[c];
      }
    }
  } else if (l.granularity == PTRAIN_QUANT_TENSOR) {
    visit(0, l.numel, 0);
  } else {
    for (int64_t s = 0; s < groups; ++s)
      visit(s * l.block, std::min<int64_t>((s + 1) * l.block, l.numel), s);
  }
  if (!bad)
    return -1;
  for (int64_t i = 0; i < l.numel; ++i)
    if (!(std::fabs(v[i]) <= FLT_MAX))
      return i;
  return -1;
}

/// Turns (lo, hi) into the stored scales and zero points (in place: lo
/// becomes the zero point, hi the scale).
inline void quantFinishScales(const QuantLayout &l, float *lo, float *hi) {
  for (int64_t s = 0; s < l.numScales(); ++s) {
    const QuantGroup q = QuantGroup::make(l.bits, l.symmetric, lo[s], hi[s]);
    hi[s] = q.scale;
    lo[s] = q.zero;
  }
}

/// The group quantizer from stored scales (and zero points when asymmetric).
inline QuantGroup quantGroupFromScale(const QuantLayout &l, float scale, float zero) {
  QuantGroup q;
  if (l.symmetric) {
    q = QuantGroup::make(l.bits, true, 0.0f, 0.0f);
  } else {
    q = QuantGroup::make(l.bits, false, 0.0f, 0.0f);
    q.zero = zero;
  }
  q.scale = scale;
  q.inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  return q;
}

//===----------------------------------------------------------------------===//
// The generic (reference) kernels: bits at run time, one element at a time.
//===----------------------------------------------------------------------===//

/// The reference encoder: statistics, scales, then quantizePackGeneric.
/// `loScratch` holds numScales() floats when there are no zero points.
inline void quantPackGeneric(const QuantLayout &l, const float *g, float *residual, const float *scales,
                             const float *zeros, uint8_t *packed);
inline int64_t quantEncodeGeneric(const QuantLayout &l, const float *g, float *residual, uint8_t *packed, float *scales,
                                  float *zeros, float *loScratch) {
  float *lo = zeros ? zeros : loScratch;
  const int64_t badAt = quantStats(l, g, residual, lo, scales);
  if (badAt >= 0)
    return badAt;
  quantFinishScales(l, lo, scales);
  quantPackGeneric(l, g, residual, scales, zeros, packed);
  return -1;
}

/// Quantizes v = g (+ e) with already computed scales / zero points and
/// packs; with a residual (holding v), writes e = v - decode(u).
inline void quantPackGeneric(const QuantLayout &l, const float *g, float *residual, const float *scales,
                             const float *zeros, uint8_t *packed) {
  std::memset(packed, 0, static_cast<size_t>(l.packedBytes()));
  const float *v = residual ? residual : g;
  for (int64_t i = 0; i < l.numel; ++i) {
    const int64_t s = l.group(i);
    const QuantGroup q = quantGroupFromScale(l, scales[s], zeros ? zeros[s] : 0.0f);
    const uint32_t u = q.encode(v[i]);
    const int64_t bit = i * l.bits;
    packed[bit / 8] |= static_cast<uint8_t>(u << (bit % 8));
    if (residual)
      residual[i] = v[i] - q.decode(u);
  }
}

inline void quantDecodeGeneric(const QuantLayout &l, const uint8_t *packed, const float *scales, const float *zeros,
                               float *out) {
  const uint32_t mask = (1u << l.bits) - 1u;
  for (int64_t i = 0; i < l.numel; ++i) {
    const int64_t s = l.group(i);
    const QuantGroup q = quantGroupFromScale(l, scales[s], zeros ? zeros[s] : 0.0f);
    const int64_t bit = i * l.bits;
    out[i] = q.decode((packed[bit / 8] >> (bit % 8)) & mask);
  }
}

//===----------------------------------------------------------------------===//
// The specialized kernels: Bits fixed, whole bytes at a time.
//===----------------------------------------------------------------------===//

/// Packs elements [begin, end) (begin a multiple of 8 / Bits) whose groups
/// are given by `groupOf`, from v (== residual when error feedback is on).
template <int Bits, typename GroupOf>
void quantPackRange(const QuantLayout &l, const float *v, float *residual, const QuantGroup *groups, GroupOf groupOf,
                    int64_t begin, int64_t end, uint8_t *packed) {
  constexpr int kPerByte = 8 / Bits;
  for (int64_t i = begin; i < end; i += kPerByte) {
    uint32_t byte = 0;
    const int count = static_cast<int>(std::min<int64_t>(kPerByte, end - i));
    for (int j = 0; j < count; ++j) {
      const QuantGroup &q = groups[groupOf(i + j)];
      const float x = v[i + j];
      const uint32_t u = q.encode(x);
      byte |= u << (j * Bits);
      if (residual)
        residual[i + j] = x - q.decode(u);
    }
    packed[i / kPerByte] = static_cast<uint8_t>(byte);
  }
}

/// Codes of one group's elements [begin, begin + count) into u8[count], and
/// with error feedback e = v - decode(u): the arithmetic of QuantGroup, with
/// r = rn(clamp(t)) and u = r + offset, so decode(u) = r * scale (+ zero when
/// asymmetric) exactly (small integers are exact in fp32). Branch-free, so
/// the loop vectorizes.
template <bool Symmetric, bool Feedback>
void quantCodes(const QuantGroup &group, const float *v, float *residual, int64_t count, uint8_t *u8) {
  const float zero = group.zero, inv = group.inv, scale = group.scale;
  const float minCode = group.minCode, maxCode = group.maxCode;
  const float offset = group.offset;
  const float add = Symmetric ? 0.0f : zero;
  for (int64_t i = 0; i < count; ++i) {
    const float x = v[i];
    float t = (x - zero) * inv;
    t = std::min(std::max(t, minCode), maxCode);
    const float r = roundEven(t);
    u8[i] = static_cast<uint8_t>(static_cast<int32_t>(r + offset));
    if (Feedback)
      residual[i] = x - (r * scale + add);
  }
}

/// Packs one group's elements [begin, end) (begin a multiple of 8 / Bits),
/// in chunks of 256 codes kept in a stack buffer.
template <int Bits>
void quantPackGroupAny(const QuantGroup &q, const float *v, float *residual, int64_t begin, int64_t end,
                       uint8_t *packed) {
  constexpr int kPerByte = 8 / Bits;
  constexpr int64_t kChunk = 256;
  uint8_t u8[kChunk];
  for (int64_t c = begin; c < end; c += kChunk) {
    const int64_t count = std::min(kChunk, end - c);
    uint8_t *dst = Bits == 8 ? packed + c : u8;
    float *res = residual ? residual + c : nullptr;
    if (q.symmetric)
      res ? quantCodes<true, true>(q, v + c, res, count, dst) : quantCodes<true, false>(q, v + c, res, count, dst);
    else
      res ? quantCodes<false, true>(q, v + c, res, count, dst) : quantCodes<false, false>(q, v + c, res, count, dst);
    if (Bits == 8)
      continue;
    int64_t i = 0;
    for (; i + kPerByte <= count; i += kPerByte) {
      uint32_t byte = 0;
      for (int j = 0; j < kPerByte; ++j)
        byte |= static_cast<uint32_t>(u8[i + j]) << (j * Bits);
      packed[(c + i) / kPerByte] = static_cast<uint8_t>(byte);
    }
    if (i < count) {
      uint32_t byte = 0;
      for (int j = 0; i + j < count; ++j)
        byte |= static_cast<uint32_t>(u8[i + j]) << (j * Bits);
      packed[(c + i) / kPerByte] = static_cast<uint8_t>(byte);
    }
  }
}

/// Encodes with Bits fixed. `groups` and `loScratch` are scratch for
/// numScales() quantizers and floats.
/// Returns the first non-finite element or -1 (then outputs are unspecified).
template <int Bits>
int64_t quantEncode(const QuantLayout &l, const float *g, float *residual, uint8_t *packed, float *scales, float *zeros,
                    QuantGroup *groups, float *loScratch) {
  static_assert(Bits == 2 || Bits == 4 || Bits == 8, "bits is 2, 4 or 8");
  constexpr int kPerByte = 8 / Bits;
  const float *v = residual ? residual : g;
  if (l.granularity == PTRAIN_QUANT_BLOCK && l.block % kPerByte == 0) {
    // One pass: each block's statistics, scale and codes while it is in cache.
    const int64_t blocks = l.numScales();
    for (int64_t s = 0; s < blocks; ++s) {
      const int64_t begin = s * l.block;
      const int64_t end = std::min<int64_t>(begin + l.block, l.numel);
      // probe = sum of x * 0 is NaN exactly when some x is inf or NaN, and
      // unlike a flag it keeps the loop vectorizable.
      float lo = FLT_MAX, hi = -FLT_MAX, probe = 0.0f;
      if (residual) {
        for (int64_t i = begin; i < end; ++i) {
          const float x = v[i] + g[i];
          residual[i] = x;
          probe += x * 0.0f;
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        }
      } else {
        for (int64_t i = begin; i < end; ++i) {
          const float x = g[i];
          probe += x * 0.0f;
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        }
      }
      if (probe != 0.0f)
        for (int64_t i = begin; i < end; ++i)
          if (!(std::fabs(v[i]) <= FLT_MAX))
            return i;
      const QuantGroup q = QuantGroup::make(Bits, l.symmetric, lo, hi);
      scales[s] = q.scale;
      if (zeros)
        zeros[s] = q.zero;
      quantPackGroupAny<Bits>(q, v, residual, begin, end, packed);
    }
    return -1;
  }
  float *lo = zeros ? zeros : loScratch;
  const int64_t badAt = quantStats(l, g, residual, lo, scales);
  if (badAt >= 0)
    return badAt;
  quantFinishScales(l, lo, scales);
  for (int64_t s = 0; s < l.numScales(); ++s)
    groups[s] = quantGroupFromScale(l, scales[s], lo[s]);
  if (l.granularity == PTRAIN_QUANT_TENSOR) {
    quantPackGroupAny<Bits>(groups[0], v, residual, 0, l.numel, packed);
  } else if (l.granularity == PTRAIN_QUANT_CHANNEL && l.cols % kPerByte == 0) {
    // Row by row, so the group is the column without a division.
    for (int64_t base = 0; base < l.numel; base += l.cols)
      quantPackRange<Bits>(
          l, v, residual, groups, [base](int64_t i) { return i - base; }, base, base + l.cols, packed);
  } else if (l.granularity == PTRAIN_QUANT_CHANNEL) {
    const int64_t cols = l.cols;
    quantPackRange<Bits>(
        l, v, residual, groups, [cols](int64_t i) { return i % cols; }, 0, l.numel, packed);
  } else {
    const int64_t block = l.block;
    quantPackRange<Bits>(
        l, v, residual, groups, [block](int64_t i) { return i / block; }, 0, l.numel, packed);
  }
  return -1;
}

template <int Bits>
void quantDecode(const QuantLayout &l, const uint8_t *packed, const float *scales, const float *zeros, float *out) {
  constexpr int kPerByte = 8 / Bits;
  constexpr uint32_t kMask = (1u << Bits) - 1u;
  auto groupAt = [&](int64_t s) { return quantGroupFromScale(l, scales[s], zeros ? zeros[s] : 0.0f); };
  if (l.granularity == PTRAIN_QUANT_TENSOR || (l.granularity == PTRAIN_QUANT_BLOCK && l.block % kPerByte == 0)) {
    // Whole bytes of one group at a time: decode is code * scale + bias.
    const int64_t span = l.granularity == PTRAIN_QUANT_TENSOR ? l.numel : l.block;
    for (int64_t s = 0; s < l.numScales(); ++s) {
      const QuantGroup q = groupAt(s);
      const float scale = q.scale;
      const float bias = q.symmetric ? -q.offset * q.scale : q.zero;
      const int64_t begin = s * span;
      const int64_t end = std::min<int64_t>(begin + span, l.numel);
      // Whole bytes with a fixed count, then the tail of the group.
      const float offset = q.symmetric ? q.offset : 0.0f;
      const float add = q.symmetric ? 0.0f : bias;
      auto decodeOne = [&](uint32_t u) {
        return q.symmetric ? (static_cast<float>(u) - offset) * scale : static_cast<float>(u) * scale + add;
      };
      int64_t i = begin;
      if (q.symmetric) {
        for (; i + kPerByte <= end; i += kPerByte) {
          const uint32_t byte = packed[i / kPerByte];
          for (int j = 0; j < kPerByte; ++j)
            out[i + j] = (static_cast<float>((byte >> (j * Bits)) & kMask) - offset) * scale;
        }
      } else {
        for (; i + kPerByte <= end; i += kPerByte) {
          const uint32_t byte = packed[i / kPerByte];
          for (int j = 0; j < kPerByte; ++j)
            out[i + j] = static_cast<float>((byte >> (j * Bits)) & kMask) * scale + add;
        }
      }
      for (; i < end; ++i)
        out[i] = decodeOne((packed[i / kPerByte] >> ((i % kPerByte) * Bits)) & kMask);
    }
    return;
  }
  for (int64_t i = 0; i < l.numel; ++i) {
    const QuantGroup q = groupAt(l.group(i));
    out[i] = q.decode((packed[i / kPerByte] >> ((i % kPerByte) * Bits)) & kMask);
  }
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CODECS_QUANT_H
