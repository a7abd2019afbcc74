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
// rounding, and s = 0 (a constant group) encodes every value as the zero code;
// a scale whose reciprocal overflows (s <= 2^-128) is stored as 0, a constant
// group too (common/QuantScale.h: otherwise 0 * inf = NaN); an asymmetric
// range over FLT_MAX is clamped to FLT_MAX (common/QuantScale.h: otherwise
// s = inf and decode 0 * inf = NaN).
// With error feedback the encoder quantizes v = g + e and leaves
// e = v - decode(u).
//
// A group whose v holds an inf or NaN is a non-finite group
// (common/QuantScale.h): scale and zero point NaN, codes 0, residual NaN, so
// that its decode is NaN and fp16's loss scaler sees the overflow after the
// reduction and skips the step (docs/MixedPrecision.md, "Codecs on
// loss-scaled gradients"). The encoder codes every other group as usual and
// reports the first non-finite element; it is not an error. A call with a
// non-finite group runs the generic kernel (block granularity: only the
// non-finite blocks take quantNonFiniteBlock).
//
// Two implementations share these formulas: quantEncodeGeneric /
// quantDecodeGeneric (bits at run time, one element at a time: the
// reference), and quantEncode<Bits> / quantDecode<Bits> (whole bytes at a
// time; block granularity with blocks a multiple of 8 / bits elements runs in
// one pass over memory, computing each block's scale while it is in cache:
// quantEncodeBlocks, with the block's min and max in 16 lanes).
// The tests check every instance against the generic kernel bit for bit, and
// the C entry point on every ISA path (cpu/CpuIsa.h: Quant.cpp compiles the
// encoder once per path) against it.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CODECS_QUANT_H
#define PTRAIN_RUNTIME_CPU_CODECS_QUANT_H

#include "common/QuantScale.h"
#include "cpu/CpuIsa.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

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
      g.scale = quantAsymmetricScale(lo, hi, static_cast<float>((1 << bits) - 1));
      g.zero = lo;
      g.maxCode = static_cast<float>((1 << bits) - 1);
      g.minCode = 0.0f;
      g.offset = 0.0f;
    }
    const QuantScale s = quantScaleAndInverse(g.scale);
    g.scale = s.scale;
    g.inv = s.inv;
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
  // probe = sum of x * 0 is NaN exactly when some x is inf or NaN; unlike a
  // flag it keeps the loops vectorizable. The caller's arrays do not overlap.
  float probe = 0.0f;
  const float *v = residual ? residual : g;
  // x = g + e (stored back into e) or g, for elements [begin, end) of group
  // s (fixed) or of the groups begin - base (per channel).
  auto visit = [&](int64_t begin, int64_t end, int64_t base, bool channel) {
    const float *__restrict gg = g;
    float *__restrict res = residual;
    float *__restrict a = lo;
    float *__restrict b = hi;
    if (channel) {
      for (int64_t i = begin; i < end; ++i) {
        const float x = res ? res[i] + gg[i] : gg[i];
        if (res)
          res[i] = x;
        probe += x * 0.0f;
        a[i - base] = std::min(a[i - base], x);
        b[i - base] = std::max(b[i - base], x);
      }
      return;
    }
    float mn = a[base], mx = b[base];
    for (int64_t i = begin; i < end; ++i) {
      const float x = res ? res[i] + gg[i] : gg[i];
      if (res)
        res[i] = x;
      probe += x * 0.0f;
      mn = std::min(mn, x);
      mx = std::max(mx, x);
    }
    a[base] = mn;
    b[base] = mx;
  };
  if (l.granularity == PTRAIN_QUANT_CHANNEL) {
    for (int64_t r = 0; r < l.numel / l.cols; ++r)
      visit(r * l.cols, (r + 1) * l.cols, r * l.cols, true);
  } else if (l.granularity == PTRAIN_QUANT_TENSOR) {
    visit(0, l.numel, 0, false);
  } else {
    for (int64_t s = 0; s < groups; ++s)
      visit(s * l.block, std::min<int64_t>((s + 1) * l.block, l.numel), s, false);
  }
  if (probe == 0.0f)
    return -1;
  for (int64_t i = 0; i < l.numel; ++i)
    if (!(std::fabs(v[i]) <= FLT_MAX))
      return i;
  return -1;
}

/// quantStats for a call whose v (= g + e, already in the residual with
/// error feedback, or g) holds an inf or NaN: every group's min and max in
/// quantStats' order, and hi = NaN (quantNonFinite) for a group with a
/// non-finite element.
inline void quantStatsNonFinite(const QuantLayout &l, const float *v, float *lo, float *hi) {
  const int64_t groups = l.numScales();
  for (int64_t s = 0; s < groups; ++s) {
    lo[s] = FLT_MAX;
    hi[s] = -FLT_MAX;
  }
  for (int64_t i = 0; i < l.numel; ++i) {
    const int64_t s = l.group(i);
    if (!quantIsFinite(v[i]))
      hi[s] = quantNonFinite();
    else if (!std::isnan(hi[s])) {
      lo[s] = std::min(lo[s], v[i]);
      hi[s] = std::max(hi[s], v[i]);
    }
  }
}

/// Turns (lo, hi) into the stored scales and zero points (in place: lo
/// becomes the zero point, hi the scale); hi = NaN (quantStatsNonFinite)
/// gives a non-finite group: both NaN.
inline void quantFinishScales(const QuantLayout &l, float *lo, float *hi) {
  for (int64_t s = 0; s < l.numScales(); ++s) {
    if (std::isnan(hi[s])) {
      hi[s] = quantNonFinite();
      lo[s] = quantNonFinite();
      continue;
    }
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
  q.scale = scale; // as stored: the encoder stores a scale whose reciprocal overflows as 0
  q.inv = quantScaleAndInverse(scale).inv;
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
    quantStatsNonFinite(l, residual ? residual : g, lo, scales);
  quantFinishScales(l, lo, scales);
  quantPackGeneric(l, g, residual, scales, zeros, packed);
  return badAt;
}

/// Quantizes v = g (+ e) with already computed scales / zero points and
/// packs; with a residual (holding v), writes e = v - decode(u). A group
/// with a NaN scale (non-finite) gets codes 0 and residual NaN.
inline void quantPackGeneric(const QuantLayout &l, const float *g, float *residual, const float *scales,
                             const float *zeros, uint8_t *packed) {
  std::memset(packed, 0, static_cast<size_t>(l.packedBytes()));
  const float *v = residual ? residual : g;
  for (int64_t i = 0; i < l.numel; ++i) {
    const int64_t s = l.group(i);
    if (std::isnan(scales[s])) {
      if (residual)
        residual[i] = quantNonFinite();
      continue;
    }
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

/// Writes codes u8[0, count) at the flat positions [start, start + count) of
/// `packed`. Positions are written in increasing order across calls: a byte
/// a call ends inside is assigned, and the next call ORs the rest into it.
template <int Bits> PTRAIN_KERNEL_BODY void packCodes(const uint8_t *u8, int64_t start, int64_t count, uint8_t *packed) {
  constexpr int kPerByte = 8 / Bits;
  if (Bits == 8) {
    std::memcpy(packed + start, u8, static_cast<size_t>(count));
    return;
  }
  int64_t i = 0;
  for (; i < count && (start + i) % kPerByte != 0; ++i)
    packed[(start + i) / kPerByte] |= static_cast<uint8_t>(u8[i] << (((start + i) % kPerByte) * Bits));
  // Whole bytes, spelled out per width so the loop vectorizes.
  uint8_t *__restrict out = packed + (start + i) / kPerByte;
  const uint8_t *__restrict in = u8 + i;
  const int64_t bytes = (count - i) / kPerByte;
  if constexpr (Bits == 4) {
    for (int64_t b = 0; b < bytes; ++b)
      out[b] = static_cast<uint8_t>(in[2 * b] | (in[2 * b + 1] << 4));
  } else {
    for (int64_t b = 0; b < bytes; ++b)
      out[b] = static_cast<uint8_t>(in[4 * b] | (in[4 * b + 1] << 2) | (in[4 * b + 2] << 4) | (in[4 * b + 3] << 6));
  }
  i += bytes * kPerByte;
  if (i < count) {
    uint32_t byte = 0;
    for (int j = 0; i + j < count; ++j)
      byte |= static_cast<uint32_t>(u8[i + j]) << (j * Bits);
    packed[(start + i) / kPerByte] = static_cast<uint8_t>(byte);
  }
}

/// Codes of `count` elements into u8, each with its own group's zero, 1 / s
/// and s (per channel: the column's), and with error feedback
/// e = v - decode(u): the arithmetic of QuantGroup, with r = rn(clamp(t)) and
/// u = r + offset, so decode(u) = r * s (+ zero when asymmetric) exactly
/// (small integers are exact in fp32). Branch-free, so the loop vectorizes.
template <bool Symmetric, bool Feedback>
void quantCodes(const float *zero, const float *inv, const float *scale, const QuantGroup &shape, const float *v,
                float *residual, int64_t count, uint8_t *u8) {
  const float minCode = shape.minCode, maxCode = shape.maxCode, offset = shape.offset;
  for (int64_t i = 0; i < count; ++i) {
    const float x = v[i];
    const float z = Symmetric ? 0.0f : zero[i];
    const float t = std::min(std::max((x - z) * inv[i], minCode), maxCode);
    const float r = roundEven(t);
    u8[i] = static_cast<uint8_t>(static_cast<int32_t>(r + offset));
    if (Feedback)
      residual[i] = x - (r * scale[i] + z);
  }
}

/// The same with one group's numbers for every element.
template <bool Symmetric, bool Feedback>
PTRAIN_KERNEL_BODY void quantCodes(const QuantGroup &group, const float *v, float *residual, int64_t count, uint8_t *u8) {
  const float zero = Symmetric ? 0.0f : group.zero, inv = group.inv, scale = group.scale;
  const float minCode = group.minCode, maxCode = group.maxCode, offset = group.offset;
  for (int64_t i = 0; i < count; ++i) {
    const float x = v[i];
    const float t = std::min(std::max((x - zero) * inv, minCode), maxCode);
    const float r = roundEven(t);
    u8[i] = static_cast<uint8_t>(static_cast<int32_t>(r + offset));
    if (Feedback)
      residual[i] = x - (r * scale + zero);
  }
}

/// Calls `f.template operator()<Symmetric, Feedback>()` for the run-time pair.
template <typename F> void dispatchCodes(bool symmetric, bool feedback, F &&f) {
  if (symmetric)
    feedback ? f(std::true_type(), std::true_type()) : f(std::true_type(), std::false_type());
  else
    feedback ? f(std::false_type(), std::true_type()) : f(std::false_type(), std::false_type());
}

constexpr int64_t kQuantChunk = 256;

/// For every byte of packed 2-bit codes, its 4 codes as the bytes of a word
/// in memory order (code k is bits [2k, 2k + 2); a little-endian host).
struct Unpack2Table {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the words are stored as bytes in memory order");
  uint32_t codes[256];
  constexpr Unpack2Table() : codes() {
    for (uint32_t b = 0; b < 256; ++b)
      codes[b] = (b & 3u) | ((b >> 2) & 3u) << 8 | ((b >> 4) & 3u) << 16 | (b >> 6) << 24;
  }
};
inline constexpr Unpack2Table kUnpack2{};

/// Quantizes and packs one group's elements [begin, end) (any alignment), in
/// chunks of kQuantChunk codes staged on the stack.
template <int Bits>
void quantPackGroupAny(const QuantGroup &q, const float *v, float *residual, int64_t begin, int64_t end,
                       uint8_t *packed) {
  uint8_t u8[kQuantChunk];
  for (int64_t c = begin; c < end; c += kQuantChunk) {
    const int64_t count = std::min(kQuantChunk, end - c);
    float *res = residual ? residual + c : nullptr;
    dispatchCodes(q.symmetric, res != nullptr, [&](auto sym, auto fb) {
      quantCodes<decltype(sym)::value, decltype(fb)::value>(q, v + c, res, count, u8);
    });
    packCodes<Bits>(u8, c, count, packed);
  }
}

/// N floats (int32s, bytes) as one GCC vector: N = 16 is one AVX-512
/// register, 8 one AVX2 register, 4 one SSE2 register. Each ISA path takes
/// its own width (Quant.cpp): GCC splits a wider vector into narrower
/// registers badly (spills, lane moves through the stack: 16 lanes on the AVX2
/// path ran at 0.19x memcpy).
template <int N> struct QuantVectors {
  typedef float Floats __attribute__((vector_size(N * sizeof(float))));
  typedef int32_t Ints __attribute__((vector_size(N * sizeof(int32_t))));
  typedef uint8_t Bytes __attribute__((vector_size(N)));
  /// Floats at any float's alignment, for loads and stores: GCC splits a
  /// std::memcpy into a vector into halves, whose stores then cannot forward
  /// to the full-width load (a stall that held the AVX2 path at 0.37x).
  typedef float FloatsAt4 __attribute__((vector_size(N * sizeof(float)), aligned(4)));
};
template <int N> using QuantFloats = typename QuantVectors<N>::Floats;
template <int N> using QuantInts = typename QuantVectors<N>::Ints;
template <int N> using QuantBytes = typename QuantVectors<N>::Bytes;

/// N floats from p (any float alignment; GCC's vector types alias their element type).
template <int N> PTRAIN_KERNEL_BODY void quantLoad(const float *p, QuantFloats<N> &out) {
  out = *reinterpret_cast<const typename QuantVectors<N>::FloatsAt4 *>(p);
}
/// N floats to p.
template <int N> PTRAIN_KERNEL_BODY void quantStore(const QuantFloats<N> &v, float *p) {
  *reinterpret_cast<typename QuantVectors<N>::FloatsAt4 *>(p) = v;
}

/// out = v with lane i replaced by lane (i + Shift) % N. (Vectors by
/// reference throughout: by value they would change the ABI per ISA.)
template <int N, int Shift, int... I>
PTRAIN_KERNEL_BODY void quantRotate(const QuantFloats<N> &v, QuantFloats<N> &out, std::integer_sequence<int, I...>) {
  out = __builtin_shufflevector(v, v, ((I + Shift) % N)...);
}

/// The lanes' min, max and sum folded into every lane (log2 N rotations by
/// halves), read from lane 0.
template <int N, int Shift = N / 2>
PTRAIN_KERNEL_BODY void quantFoldLanes(QuantFloats<N> &lo, QuantFloats<N> &hi, QuantFloats<N> &probe) {
  if constexpr (Shift >= 1) {
    const auto idx = std::make_integer_sequence<int, N>();
    QuantFloats<N> l2, h2, p2;
    quantRotate<N, Shift>(lo, l2, idx);
    quantRotate<N, Shift>(hi, h2, idx);
    quantRotate<N, Shift>(probe, p2, idx);
    lo = l2 < lo ? l2 : lo;
    hi = hi < h2 ? h2 : hi;
    probe += p2;
    quantFoldLanes<N, Shift / 2>(lo, hi, probe);
  }
}

/// The sequential loop's bits for a min `mn` and max `mx` found in lanes:
/// the loop `lo = x < lo ? x : lo; hi = hi < x ? x : hi` from (FLT_MAX,
/// -FLT_MAX) keeps the FIRST element equal to the min or max, and lanes find
/// the same value; only the sign of a zero can differ (+0 and -0 compare
/// equal), so a zero takes the sign of the first zero of x[0, count).
PTRAIN_KERNEL_BODY void quantFirstZeroSign(const float *x, float &mn, float &mx) {
  if (mn == 0.0f || mx == 0.0f) {
    int64_t first = 0;
    while (x[first] != 0.0f)
      ++first;
    if (mn == 0.0f)
      mn = x[first];
    if (mx == 0.0f)
      mx = x[first];
  }
}

/// The min and max of x over elements [begin, end) of one block, where x is
/// g, or with error feedback e + g (stored back into e), with the bits of
/// quantStats' sequential loop, in N lanes instead of one serial chain: that
/// chain, a minss, maxss and a probe addss per element with a loop-carried
/// dependency each, was 43% of the encoder's time and held it at 0.44x
/// memcpy (bench/README.md, "Quantization encode + EF at memcpy speed").
/// Returns false when some x is inf or NaN (the lanes' probe: x * 0 is NaN
/// exactly then, in any order of summation).
template <int N, bool Feedback>
PTRAIN_KERNEL_BODY bool quantBlockMinMax(const float *g, float *residual, int64_t begin, int64_t end, float &outLo,
                                         float &outHi) {
  using Lanes = QuantFloats<N>;
  Lanes lo, hi, probe;
  for (int j = 0; j < N; ++j) {
    lo[j] = FLT_MAX;
    hi[j] = -FLT_MAX;
    probe[j] = 0.0f;
  }
  int64_t i = begin;
  for (; i + N <= end; i += N) {
    Lanes x;
    quantLoad<N>(g + i, x);
    if (Feedback) {
      Lanes e;
      quantLoad<N>(residual + i, e);
      x = e + x;
      quantStore<N>(x, residual + i);
    }
    probe += x * 0.0f;
    lo = x < lo ? x : lo;
    hi = hi < x ? x : hi;
  }
  quantFoldLanes<N>(lo, hi, probe);
  float mn = lo[0], mx = hi[0], pr = probe[0];
  for (; i < end; ++i) {
    const float x = Feedback ? residual[i] + g[i] : g[i];
    if (Feedback)
      residual[i] = x;
    pr += x * 0.0f;
    mn = x < mn ? x : mn;
    mx = mx < x ? x : mx;
  }
  if (pr != 0.0f)
    return false;
  quantFirstZeroSign((Feedback ? residual : g) + begin, mn, mx);
  outLo = mn;
  outHi = mx;
  return true;
}

/// out = lanes [Offset, Offset + Stride, ...) of u: M = N / Stride of them.
template <int N, int Stride, int Offset, int... I>
PTRAIN_KERNEL_BODY void quantStrided(const QuantInts<N> &u, QuantInts<N / Stride> &out,
                                     std::integer_sequence<int, I...>) {
  out = __builtin_shufflevector(u, u, (I * Stride + Offset)...);
}

/// out = the low byte of each lane of v (each in [0, 255]): a byte shuffle.
/// GCC turns __builtin_convertvector from 32-bit to 8-bit lanes into scalar
/// shifts and ORs on AVX2, which has no vpmovdb.
template <int M, int... I>
PTRAIN_KERNEL_BODY void quantNarrow(const QuantInts<M> &v, QuantBytes<M> &out, std::integer_sequence<int, I...>) {
  typedef uint8_t Bytes4 __attribute__((vector_size(4 * M)));
  const Bytes4 b = reinterpret_cast<const Bytes4 &>(v);
  out = __builtin_shufflevector(b, b, (4 * I)...);
}

/// Codes of N values x (and with error feedback their residuals, stored at
/// `residual`), packed into N * Bits / 8 bytes at `out`: QuantGroup's
/// arithmetic as quantCodes has it, in lanes, the codes packed in 32-bit
/// lanes (x86 has no byte shifts) and narrowed.
template <int N, int Bits, bool Symmetric, bool Feedback>
PTRAIN_KERNEL_BODY void quantCodesLanes(const QuantGroup &q, const QuantFloats<N> &x, float *residual,
                                        uint8_t *out) {
  const float zero = Symmetric ? 0.0f : q.zero;
  const float magic = 12582912.0f; // roundEven's 1.5 * 2^23
  QuantFloats<N> t = (x - zero) * q.inv;
  t = t < q.minCode ? q.minCode : t; // std::max(t, minCode)
  t = q.maxCode < t ? q.maxCode : t; // std::min(t, maxCode)
  const QuantFloats<N> r = (t + magic) - magic;
  const QuantInts<N> u = __builtin_convertvector(r + q.offset, QuantInts<N>);
  if (Feedback) {
    quantStore<N>(x - (r * q.scale + zero), residual);
  }
  constexpr int kPerByte = 8 / Bits;
  constexpr int M = N / kPerByte;
  const auto idx = std::make_integer_sequence<int, M>();
  QuantInts<M> packedLanes;
  if constexpr (Bits == 8) {
    packedLanes = u;
  } else if constexpr (Bits == 4) {
    QuantInts<M> even, odd;
    quantStrided<N, 2, 0>(u, even, idx);
    quantStrided<N, 2, 1>(u, odd, idx);
    packedLanes = even | (odd << 4);
  } else {
    QuantInts<M> c0, c1, c2, c3;
    quantStrided<N, 4, 0>(u, c0, idx);
    quantStrided<N, 4, 1>(u, c1, idx);
    quantStrided<N, 4, 2>(u, c2, idx);
    quantStrided<N, 4, 3>(u, c3, idx);
    packedLanes = c0 | (c1 << 2) | (c2 << 4) | (c3 << 6);
  }
  QuantBytes<M> bytes;
  quantNarrow<M>(packedLanes, bytes, idx);
  std::memcpy(out, &bytes, sizeof(bytes));
}

/// Codes (and with error feedback residuals) of one group's elements
/// [begin, end), packed: quantCodesLanes per N elements (the staged bytes and
/// packCodes' byte loop cost as much as the arithmetic), the tail through
/// quantCodes and packCodes. `begin` is a multiple of 8 / Bits (whole bytes).
template <int N, int Bits, bool Symmetric, bool Feedback>
PTRAIN_KERNEL_BODY void quantGroupCodes(const QuantGroup &q, const float *v, float *residual, int64_t begin,
                                        int64_t end, uint8_t *packed) {
  int64_t i = begin;
  for (; i + N <= end; i += N) {
    QuantFloats<N> x;
    quantLoad<N>(v + i, x);
    quantCodesLanes<N, Bits, Symmetric, Feedback>(q, x, Feedback ? residual + i : nullptr, packed + i * Bits / 8);
  }
  if (i < end) {
    uint8_t u8[kQuantChunk]; // N would do; GCC cannot see that end - i < N
    quantCodes<Symmetric, Feedback>(q, v + i, Feedback ? residual + i : nullptr, end - i, u8);
    packCodes<Bits>(u8, i, end - i, packed);
  }
}

/// One whole block of Vecs * N elements starting at `begin`, held in
/// registers from the loads of g (and e) to the stores of the codes and the
/// residual: its min and max (lane by lane, then folded, with the sequential
/// loop's sign of zero), its quantizer into *scale (and *zero), its codes.
/// Returns false, with x stored into the residual, when some x is inf or NaN.
template <int N, int Bits, bool Symmetric, bool Feedback, int Vecs>
PTRAIN_KERNEL_BODY bool quantBlockInRegisters(const float *g, float *residual, int64_t begin, uint8_t *packed,
                                              float *scale, float *zero) {
  using Lanes = QuantFloats<N>;
  Lanes x[Vecs];
  for (int k = 0; k < Vecs; ++k) {
    quantLoad<N>(g + begin + k * N, x[k]);
    if (Feedback) {
      Lanes e;
      quantLoad<N>(residual + begin + k * N, e);
      x[k] = e + x[k];
    }
  }
  Lanes lo = x[0], hi = x[0], probe = x[0] * 0.0f;
  for (int k = 1; k < Vecs; ++k) {
    lo = x[k] < lo ? x[k] : lo;
    hi = hi < x[k] ? x[k] : hi;
    probe += x[k] * 0.0f;
  }
  quantFoldLanes<N>(lo, hi, probe);
  float mn = lo[0], mx = hi[0];
  if (probe[0] != 0.0f) {
    if (Feedback)
      for (int k = 0; k < Vecs; ++k)
        quantStore<N>(x[k], residual + begin + k * N);
    return false;
  }
  if (mn == 0.0f || mx == 0.0f) {
    float xs[Vecs * N];
    for (int k = 0; k < Vecs; ++k)
      quantStore<N>(x[k], xs + k * N);
    quantFirstZeroSign(xs, mn, mx);
  }
  const QuantGroup q = QuantGroup::make(Bits, Symmetric, mn, mx);
  *scale = q.scale;
  if (zero)
    *zero = q.zero;
  for (int k = 0; k < Vecs; ++k)
    quantCodesLanes<N, Bits, Symmetric, Feedback>(q, x[k], Feedback ? residual + begin + k * N : nullptr,
                                                  packed + (begin + k * N) * Bits / 8);
  return true;
}

/// A non-finite block [begin, end) (its v already in the residual with
/// error feedback): scale and zero point NaN, codes 0 (its whole bytes:
/// begin is a multiple of 8 / Bits), residual NaN; quantPackGeneric's bits.
template <int Bits>
PTRAIN_KERNEL_BODY void quantNonFiniteBlock(int64_t begin, int64_t end, float *residual, uint8_t *packed, float *scale,
                                            float *zero) {
  *scale = quantNonFinite();
  if (zero)
    *zero = quantNonFinite();
  std::memset(packed + begin * Bits / 8, 0, static_cast<size_t>(((end - begin) * Bits + 7) / 8));
  if (residual)
    for (int64_t i = begin; i < end; ++i)
      residual[i] = quantNonFinite();
}

/// The one-pass block encoder (block granularity, block a multiple of
/// 8 / Bits) in N lanes: per block its min and max (quantBlockMinMax), its
/// quantizer, then its codes and residual (quantGroupCodes) packed while the
/// block is in L1; blocks of 64 (the codec's usual size) held in registers
/// (quantBlockInRegisters) where whole. Symmetry and error feedback are
/// template arguments, chosen once per call rather than per chunk. A block
/// with an inf or NaN is a non-finite block (quantNonFiniteBlock). Returns
/// the first non-finite element or -1.
template <int N, int Bits, bool Symmetric, bool Feedback>
PTRAIN_KERNEL_BODY int64_t quantEncodeBlocks(const QuantLayout &l, const float *g, float *residual, uint8_t *packed,
                                             float *scales, float *zeros) {
  static_assert(64 % N == 0 && N % (8 / Bits) == 0, "N lanes hold whole bytes of codes and divide 64");
  const float *v = Feedback ? residual : g;
  const int64_t blocks = l.numScales();
  int64_t badAt = -1;
  for (int64_t s = 0; s < blocks; ++s) {
    const int64_t begin = s * l.block;
    const int64_t end = std::min<int64_t>(begin + l.block, l.numel);
    bool finite = true;
    if (end - begin == 64) {
      finite = quantBlockInRegisters<N, Bits, Symmetric, Feedback, 64 / N>(g, residual, begin, packed, scales + s,
                                                                           zeros ? zeros + s : nullptr);
    } else {
      float lo = 0.0f, hi = 0.0f;
      finite = quantBlockMinMax<N, Feedback>(g, residual, begin, end, lo, hi);
      if (finite) {
        const QuantGroup q = QuantGroup::make(Bits, Symmetric, lo, hi);
        scales[s] = q.scale;
        if (zeros)
          zeros[s] = q.zero;
        quantGroupCodes<N, Bits, Symmetric, Feedback>(q, v, residual, begin, end, packed);
      }
    }
    if (finite)
      continue;
    if (badAt < 0)
      for (int64_t i = begin; i < end && badAt < 0; ++i)
        if (!quantIsFinite(v[i]))
          badAt = i;
    quantNonFiniteBlock<Bits>(begin, end, residual, packed, scales + s, zeros ? zeros + s : nullptr);
  }
  return badAt;
}

/// quantEncodeBlocks for the run-time symmetry and error feedback.
template <int N, int Bits>
PTRAIN_KERNEL_BODY int64_t quantEncodeBlocksDispatch(const QuantLayout &l, const float *g, float *residual,
                                                     uint8_t *packed, float *scales, float *zeros) {
  if (l.symmetric)
    return residual ? quantEncodeBlocks<N, Bits, true, true>(l, g, residual, packed, scales, zeros)
                    : quantEncodeBlocks<N, Bits, true, false>(l, g, residual, packed, scales, zeros);
  return residual ? quantEncodeBlocks<N, Bits, false, true>(l, g, residual, packed, scales, zeros)
                  : quantEncodeBlocks<N, Bits, false, false>(l, g, residual, packed, scales, zeros);
}

/// Encodes with Bits fixed, the block encoder in Lanes lanes (Quant.cpp
/// inlines it into each ISA path's clone with that path's width).
/// `loScratch` and `invScratch` hold numScales() floats. Returns the first
/// non-finite element or -1; a call with one codes its non-finite groups as
/// such (the generic kernel's bits).
template <int Bits, int Lanes = 4>
PTRAIN_KERNEL_BODY int64_t quantEncode(const QuantLayout &l, const float *g, float *residual, uint8_t *packed,
                                       float *scales, float *zeros, float *loScratch, float *invScratch) {
  static_assert(Bits == 2 || Bits == 4 || Bits == 8, "bits is 2, 4 or 8");
  constexpr int kPerByte = 8 / Bits;
  const float *v = residual ? residual : g;
  if (l.granularity == PTRAIN_QUANT_BLOCK && l.block % kPerByte == 0)
    return quantEncodeBlocksDispatch<Lanes, Bits>(l, g, residual, packed, scales, zeros);
  // Two passes: statistics of every group, then codes.
  float *lo = zeros ? zeros : loScratch;
  const int64_t badAt = quantStats(l, g, residual, lo, scales);
  if (badAt >= 0) {
    // Only on an overflowing step: the reference kernel, every group's own bits.
    quantStatsNonFinite(l, v, lo, scales);
    quantFinishScales(l, lo, scales);
    quantPackGeneric(l, g, residual, scales, zeros, packed);
    return badAt;
  }
  quantFinishScales(l, lo, scales);
  if (l.granularity != PTRAIN_QUANT_CHANNEL) {
    for (int64_t s = 0; s < l.numScales(); ++s) {
      const int64_t span = l.granularity == PTRAIN_QUANT_TENSOR ? l.numel : l.block;
      quantPackGroupAny<Bits>(quantGroupFromScale(l, scales[s], lo[s]), v, residual, s * span,
                              std::min<int64_t>((s + 1) * span, l.numel), packed);
    }
    return -1;
  }
  // Per channel: row by row, each column with its own numbers (arrays, so
  // the code loop still vectorizes).
  for (int64_t c = 0; c < l.cols; ++c)
    invScratch[c] = quantGroupFromScale(l, scales[c], lo[c]).inv;
  const QuantGroup shape = QuantGroup::make(Bits, l.symmetric, 0.0f, 0.0f);
  uint8_t u8[kQuantChunk];
  for (int64_t base = 0; base < l.numel; base += l.cols)
    for (int64_t c = 0; c < l.cols; c += kQuantChunk) {
      const int64_t count = std::min(kQuantChunk, l.cols - c);
      float *res = residual ? residual + base + c : nullptr;
      dispatchCodes(l.symmetric, res != nullptr, [&](auto sym, auto fb) {
        quantCodes<decltype(sym)::value, decltype(fb)::value>(lo + c, invScratch + c, scales + c, shape, v + base + c,
                                                              res, count, u8);
      });
      packCodes<Bits>(u8, base + c, count, packed);
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
      // Unpack whole bytes into codes (spelled out per width), then convert
      // them: both loops vectorize.
      int64_t i = begin;
      uint8_t u8[kQuantChunk];
      while (i + kPerByte <= end) {
        const int64_t bytes = std::min<int64_t>((end - i) / kPerByte, kQuantChunk / kPerByte);
        const uint8_t *__restrict in = packed + i / kPerByte;
        const uint8_t *codes = u8;
        if constexpr (Bits == 8) {
          codes = in;
        } else if constexpr (Bits == 4) {
          for (int64_t b = 0; b < bytes; ++b) {
            u8[2 * b] = in[b] & 0xf;
            u8[2 * b + 1] = in[b] >> 4;
          }
        } else {
          // One table load and one 4-byte store per packed byte: the shifts
          // and four byte stores per byte did not vectorize (0.35 x memcpy
          // against 0.56; bench/README.md). For 4 bits the shifts vectorize.
          for (int64_t b = 0; b < bytes; ++b) {
            const uint32_t codesOfByte = kUnpack2.codes[in[b]];
            std::memcpy(u8 + 4 * b, &codesOfByte, sizeof(codesOfByte));
          }
        }
        const int64_t count = bytes * kPerByte;
        const uint8_t *__restrict c = codes;
        float *__restrict o = out + i;
        if (q.symmetric)
          for (int64_t j = 0; j < count; ++j)
            o[j] = (static_cast<float>(c[j]) - offset) * scale;
        else
          for (int64_t j = 0; j < count; ++j)
            o[j] = static_cast<float>(c[j]) * scale + add;
        i += count;
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
