//===- Quant.cpp - Uniform quantization: the C entry points ---------------===//
//
// Checks the arguments and dispatches to the quantEncode<Bits> /
// quantDecode<Bits> instances of Quant.h (formulas and packing there). The
// encoder is compiled once per ISA path (cpu/CpuIsa.h: baseline SSE2, AVX2,
// AVX-512), all giving the same bits: the same IEEE operations, no FMA
// (-ffp-contract=off, lib/Runtime/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "cpu/codecs/Quant.h"
#include "common/Status.h"
#include "cpu/codecs/Scratch.h"

using ptrain::runtime::fail;
using ptrain::runtime::QuantLayout;

namespace {
/// quantEncode<Bits> per ISA path, each with its register width in lanes
/// (4 floats SSE2, 8 AVX2, 16 AVX-512; Quant.h's QuantFloats): IsaClones'
/// one body for all paths does not fit. The first non-finite element (or -1)
/// into *outBadAt (its group is coded as a non-finite group).
template <int Bits> struct QuantEncodeClones {
  using L = const QuantLayout &;
  static void baseline(L l, const float *g, float *e, uint8_t *p, float *s, float *z, float *lo, float *inv,
                       int64_t *outBadAt) {
    *outBadAt = ptrain::runtime::quantEncode<Bits, 4>(l, g, e, p, s, z, lo, inv);
  }
  PTRAIN_TARGET_AVX2 static void avx2(L l, const float *g, float *e, uint8_t *p, float *s, float *z, float *lo,
                                      float *inv, int64_t *outBadAt) {
    *outBadAt = ptrain::runtime::quantEncode<Bits, 8>(l, g, e, p, s, z, lo, inv);
  }
  PTRAIN_TARGET_AVX512 static void avx512(L l, const float *g, float *e, uint8_t *p, float *s, float *z, float *lo,
                                          float *inv, int64_t *outBadAt) {
    *outBadAt = ptrain::runtime::quantEncode<Bits, 16>(l, g, e, p, s, z, lo, inv);
  }
  static ptrain_status_t call(const char *name, L l, const float *g, float *e, uint8_t *p, float *s, float *z,
                              float *lo, float *inv, int64_t *outBadAt) {
    ptrain::runtime::CpuIsa isa = ptrain::runtime::CpuIsa::Baseline;
    PTRAIN_RETURN_IF_ERROR(ptrain::runtime::selectedCpuIsa(name, isa));
    switch (isa) {
    case ptrain::runtime::CpuIsa::Avx512Bf16:
    case ptrain::runtime::CpuIsa::Avx512:
      avx512(l, g, e, p, s, z, lo, inv, outBadAt);
      break;
    case ptrain::runtime::CpuIsa::Avx2:
      avx2(l, g, e, p, s, z, lo, inv, outBadAt);
      break;
    case ptrain::runtime::CpuIsa::Baseline:
      baseline(l, g, e, p, s, z, lo, inv, outBadAt);
      break;
    }
    return PTRAIN_OK;
  }
};

ptrain_status_t makeLayout(const char *call, int64_t rows, int64_t cols, int32_t bits, int32_t granularity,
                           int64_t blockSize, int32_t symmetric, QuantLayout &l) {
  if (rows < 1 || cols < 1 || rows > INT64_MAX / cols)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "rows and cols must be >= 1, got %lld x %lld",
                static_cast<long long>(rows), static_cast<long long>(cols));
  if (bits != 2 && bits != 4 && bits != 8)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "bits must be 2, 4 or 8, got %d", bits);
  if (granularity < PTRAIN_QUANT_TENSOR || granularity > PTRAIN_QUANT_BLOCK)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "unknown granularity %d (tensor = 0, channel = 1, block = 2)",
                granularity);
  if ((granularity == PTRAIN_QUANT_BLOCK) != (blockSize >= 1))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "block_size must be >= 1 exactly for block granularity, got "
                "%lld",
                static_cast<long long>(blockSize));
  l.numel = rows * cols;
  l.cols = cols;
  l.bits = bits;
  l.granularity = granularity;
  l.block = blockSize;
  l.symmetric = symmetric != 0;
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t ptrain_quant_encode_f32(const float *g, float *residual, int64_t rows, int64_t cols,
                                                   int32_t bits, int32_t granularity, int64_t block_size,
                                                   int32_t symmetric, uint8_t *out_packed, float *out_scales,
                                                   float *out_zero_points) {
  QuantLayout l;
  PTRAIN_RETURN_IF_ERROR(makeLayout(__func__, rows, cols, bits, granularity, block_size, symmetric, l));
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(out_packed);
  PTRAIN_CHECK_PTR(out_scales);
  PTRAIN_CHECK_ARG(l.symmetric || out_zero_points, "'out_zero_points' must not be null when asymmetric");
  using namespace ptrain::runtime;
  float *inv = scratchArray<float>(ScratchSlot::Keys, l.numScales());
  float *lo = scratchArray<float>(ScratchSlot::Bitmap, l.numScales());
  if (!inv || !lo)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate %lld group quantizers",
                static_cast<long long>(l.numScales()));
  float *zeros = l.symmetric ? nullptr : out_zero_points;
  int64_t badAt = -1;
  switch (bits) {
  case 2:
    PTRAIN_RETURN_IF_ERROR(
        QuantEncodeClones<2>::call(__func__, l, g, residual, out_packed, out_scales, zeros, lo, inv, &badAt));
    break;
  case 4:
    PTRAIN_RETURN_IF_ERROR(
        QuantEncodeClones<4>::call(__func__, l, g, residual, out_packed, out_scales, zeros, lo, inv, &badAt));
    break;
  default:
    PTRAIN_RETURN_IF_ERROR(
        QuantEncodeClones<8>::call(__func__, l, g, residual, out_packed, out_scales, zeros, lo, inv, &badAt));
    break;
  }
  // A group with an inf or NaN was coded as a non-finite group (Quant.h): not an error.
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_quant_decode_f32(const uint8_t *packed, const float *scales, const float *zero_points,
                                                   int64_t rows, int64_t cols, int32_t bits, int32_t granularity,
                                                   int64_t block_size, int32_t symmetric, float *out) {
  QuantLayout l;
  PTRAIN_RETURN_IF_ERROR(makeLayout(__func__, rows, cols, bits, granularity, block_size, symmetric, l));
  PTRAIN_CHECK_PTR(packed);
  PTRAIN_CHECK_PTR(scales);
  PTRAIN_CHECK_PTR(out);
  PTRAIN_CHECK_ARG(l.symmetric || zero_points, "'zero_points' must not be null when asymmetric");
  const float *zeros = l.symmetric ? nullptr : zero_points;
  switch (bits) {
  case 2:
    ptrain::runtime::quantDecode<2>(l, packed, scales, zeros, out);
    break;
  case 4:
    ptrain::runtime::quantDecode<4>(l, packed, scales, zeros, out);
    break;
  default:
    ptrain::runtime::quantDecode<8>(l, packed, scales, zeros, out);
    break;
  }
  return PTRAIN_OK;
}
