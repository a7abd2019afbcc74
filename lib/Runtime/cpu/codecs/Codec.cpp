//===- Codec.cpp - Any codec through its descriptor -----------------------===//
//
// ptrain_codec_code_bytes / encode / decode: the serialized form of every
// codec (layout in Codec.h), dispatching to the per-codec entry points.
//
//===----------------------------------------------------------------------===//

#include "cpu/codecs/Codec.h"
#include "cpu/codecs/Cast.h"
#include "cpu/codecs/Quant.h"
#include "cpu/codecs/TahQuant.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

using ptrain::runtime::CodeLayout;
using ptrain::runtime::fail;

namespace {
int64_t align8(int64_t bytes) { return (bytes + 7) / 8 * 8; }
const char *kCodecNames[] = {"powersgd", "topk", "randk", "quant", "cast", "tahquant"};
} // namespace

namespace ptrain::runtime {

ptrain_status_t checkSparsity(const char *call, int64_t n, int64_t k) {
  if (n < 1 || n > INT32_MAX)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "n must be in [1, %d] (int32 indices), got %lld", INT32_MAX,
                static_cast<long long>(n));
  if (k < 1 || k > n)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "k must be in [1, n = %lld], got %lld", static_cast<long long>(n),
                static_cast<long long>(k));
  return PTRAIN_OK;
}

void describeCodec(const ptrain_codec_t &c, char *buf, size_t size) {
  const char *name = c.kind >= 0 && c.kind <= PTRAIN_CODEC_TAHQUANT ? kCodecNames[c.kind] : "unknown codec";
  char param[64] = "";
  switch (c.kind) {
  case PTRAIN_CODEC_POWERSGD:
    std::snprintf(param, sizeof(param), " rank %lld", static_cast<long long>(c.rank));
    break;
  case PTRAIN_CODEC_TOPK:
  case PTRAIN_CODEC_RANDK:
    std::snprintf(param, sizeof(param), " k %lld%s", static_cast<long long>(c.k),
                  c.value_dtype == PTRAIN_DTYPE_BF16  ? " bf16 values"
                  : c.value_dtype == PTRAIN_DTYPE_F16 ? " f16 values"
                                                      : "");
    break;
  case PTRAIN_CODEC_QUANT:
    std::snprintf(param, sizeof(param), " %d-bit", c.bits);
    break;
  case PTRAIN_CODEC_CAST:
    std::snprintf(param, sizeof(param), " to %s", c.cast_dtype == PTRAIN_DTYPE_BF16 ? "bf16" : "f16");
    break;
  case PTRAIN_CODEC_TAHQUANT:
    std::snprintf(param, sizeof(param), " %d/%d-bit tiles of %lld", c.low_bits, c.bits,
                  static_cast<long long>(c.tile_size));
    break;
  default:
    break;
  }
  std::snprintf(buf, size, "%s%s on %lldx%lldx%lld", name, param, static_cast<long long>(c.batch),
                static_cast<long long>(c.rows), static_cast<long long>(c.cols));
}

ptrain_status_t codecLayout(const char *call, const ptrain_codec_t *codec, CodeLayout &out) {
  if (!codec)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'codec' must not be null");
  const ptrain_codec_t &c = *codec;
  if (c.batch < 1 || c.rows < 1 || c.cols < 1 || c.rows > INT64_MAX / c.cols / c.batch)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "the codec's tensor batch x rows x cols must be >= 1 each and "
                "fit int64, got %lld x %lld x %lld",
                static_cast<long long>(c.batch), static_cast<long long>(c.rows), static_cast<long long>(c.cols));
  out = CodeLayout();
  out.numel = c.batch * c.rows * c.cols;
  const bool sparse = c.kind == PTRAIN_CODEC_TOPK || c.kind == PTRAIN_CODEC_RANDK;
  if (sparse ? c.value_dtype != PTRAIN_DTYPE_F32 && !isHalfValues(c) : c.value_dtype != PTRAIN_DTYPE_F32)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                sparse ? "%s: value_dtype must be f32 (0), f16 (3) or bf16 (4), got %d"
                       : "%s: value_dtype must be f32 (0): only topk and randk send 16-bit values, got %d",
                c.kind >= 0 && c.kind <= PTRAIN_CODEC_TAHQUANT ? kCodecNames[c.kind] : "unknown codec", c.value_dtype);
  switch (c.kind) {
  case PTRAIN_CODEC_POWERSGD: {
    const int64_t minNM = c.rows < c.cols ? c.rows : c.cols;
    if (c.rank < 1 || c.rank > minNM)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "PowerSGD rank %lld must be in [1, min(rows, cols) = %lld]",
                  static_cast<long long>(c.rank), static_cast<long long>(minNM));
    out.offset[1] = align8(c.batch * c.rows * c.rank * 4);
    out.total = out.offset[1] + align8(c.batch * c.cols * c.rank * 4);
    return PTRAIN_OK;
  }
  case PTRAIN_CODEC_TOPK:
  case PTRAIN_CODEC_RANDK:
    if (c.k < 1 || c.k > out.numel || out.numel > INT32_MAX)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: k = %lld must be in [1, numel = %lld] and numel must "
                  "fit int32 indices",
                  kCodecNames[c.kind], static_cast<long long>(c.k), static_cast<long long>(out.numel));
    out.offset[1] = align8(c.k * codecValueBytes(c));
    out.total = c.kind == PTRAIN_CODEC_TOPK ? out.offset[1] + align8(c.k * 4) : out.offset[1];
    return PTRAIN_OK;
  case PTRAIN_CODEC_QUANT: {
    if (c.bits != 2 && c.bits != 4 && c.bits != 8)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "quant: bits must be 2, 4 or 8, got %d", c.bits);
    if (c.granularity < PTRAIN_QUANT_TENSOR || c.granularity > PTRAIN_QUANT_BLOCK ||
        (c.granularity == PTRAIN_QUANT_BLOCK) != (c.block_size >= 1))
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "quant: granularity %d with block_size %lld (block "
                  "granularity, 2, needs block_size >= 1; the others 0)",
                  c.granularity, static_cast<long long>(c.block_size));
    QuantLayout l;
    l.numel = out.numel;
    l.cols = c.cols;
    l.bits = c.bits;
    l.granularity = c.granularity;
    l.block = c.block_size;
    l.symmetric = c.symmetric != 0;
    out.offset[1] = align8(l.packedBytes());
    out.offset[2] = out.offset[1] + align8(l.numScales() * 4);
    out.total = l.symmetric ? out.offset[2] : out.offset[2] + align8(l.numScales() * 4);
    return PTRAIN_OK;
  }
  case PTRAIN_CODEC_CAST:
    if (c.cast_dtype != PTRAIN_DTYPE_F16 && c.cast_dtype != PTRAIN_DTYPE_BF16)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "cast: cast_dtype must be f16 (3) or bf16 (4), got %d",
                  c.cast_dtype);
    out.total = align8(out.numel * 2);
    return PTRAIN_OK;
  case PTRAIN_CODEC_TAHQUANT: {
    const int64_t g = c.tile_size;
    if ((g != 8 && g != 16 && g != 32 && g != 64) || out.numel % g != 0)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "tahquant: tile_size must be 8, 16, 32 or 64 and divide numel = %lld, got %lld",
                  static_cast<long long>(out.numel), static_cast<long long>(g));
    if (c.low_bits < 1 || c.low_bits > c.bits || c.bits > 8 || c.k < 0 || c.k > out.numel / g)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "tahquant: needs 1 <= low_bits <= bits <= 8 and k (the high tiles) in [0, %lld], got %d, %d, %lld",
                  static_cast<long long>(out.numel / g), c.low_bits, c.bits, static_cast<long long>(c.k));
    TahQuantLayout l;
    l.numel = out.numel;
    l.tile = g;
    l.lowBits = c.low_bits;
    l.highBits = c.bits;
    l.highTiles = c.k;
    out.offset[1] = align8(l.packedBytes());
    out.offset[2] = out.offset[1] + align8(l.tiles() * 4);
    out.offset[3] = out.offset[2] + align8(l.tiles() * 4);
    out.total = out.offset[3] + align8(l.tiles());
    return PTRAIN_OK;
  }
  default:
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "unknown codec kind %d (powersgd = 0, topk = 1, randk = 2, "
                "quant = 3, cast = 4, tahquant = 5)",
                c.kind);
  }
}

void roundCodecValues(const ptrain_codec_t &codec, const float *values, int64_t k, uint16_t *out) {
  if (codec.value_dtype == PTRAIN_DTYPE_F16)
    for (int64_t j = 0; j < k; ++j)
      out[j] = floatToHalf(values[j]);
  else
    for (int64_t j = 0; j < k; ++j)
      out[j] = floatToBf16(values[j]);
}

void widenCodecValues(const ptrain_codec_t &codec, const uint16_t *values, int64_t k, float *out) {
  if (codec.value_dtype == PTRAIN_DTYPE_F16)
    for (int64_t j = 0; j < k; ++j)
      out[j] = halfToFloat(values[j]);
  else
    for (int64_t j = 0; j < k; ++j)
      out[j] = bf16ToFloat(values[j]);
}

} // namespace ptrain::runtime

namespace {
using namespace ptrain::runtime;

/// Top-k / rand-k with 16-bit values: the f32 encode into k floats, then each kept value rounded into the code;
/// with error feedback the residual at the kept positions gets v - widen(round(v)) (it was 0 there: the f32 encode
/// sent v exactly), so e' = g + e - decode(the codes sent). `state` is checked by the caller (rand-k's counter).
ptrain_status_t encodeHalfValues(const char *call, const ptrain_codec_t &c, const CodeLayout &l, const float *input,
                                 float *residual, void *state, char *code) {
  const int64_t k = c.k;
  // The f32 values, then (with error feedback) their widened rounding and rand-k's positions.
  std::unique_ptr<float[], FreeDeleter> wide(static_cast<float *>(std::malloc(static_cast<size_t>(k) * 8)));
  std::unique_ptr<int32_t[], FreeDeleter> positions(
      c.kind == PTRAIN_CODEC_RANDK && residual ? static_cast<int32_t *>(std::malloc(static_cast<size_t>(k) * 4))
                                               : nullptr);
  if (!wide || (c.kind == PTRAIN_CODEC_RANDK && residual && !positions))
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "the %lld f32 values before their rounding to 16 bits",
                static_cast<long long>(k));
  const int32_t *kept = nullptr;
  if (c.kind == PTRAIN_CODEC_TOPK) {
    int32_t *indices = reinterpret_cast<int32_t *>(code + l.offset[1]);
    PTRAIN_RETURN_IF_ERROR(ptrain_topk_encode_f32(input, residual, l.numel, k, wide.get(), indices));
    kept = indices;
  } else {
    if (positions) // the positions the encode is about to draw (its counter before the call)
      PTRAIN_RETURN_IF_ERROR(
          ptrain_randk_indices(c.seed, *static_cast<int64_t *>(state), l.numel, k, positions.get()));
    PTRAIN_RETURN_IF_ERROR(
        ptrain_randk_encode_f32(input, residual, l.numel, k, c.seed, static_cast<int64_t *>(state), wide.get()));
    kept = positions.get();
  }
  uint16_t *narrow = reinterpret_cast<uint16_t *>(code + l.offset[0]);
  roundCodecValues(c, wide.get(), k, narrow);
  if (residual) {
    float *back = wide.get() + k;
    widenCodecValues(c, narrow, k, back);
    for (int64_t j = 0; j < k; ++j)
      residual[kept[j]] += wide[j] - back[j];
  }
  return PTRAIN_OK;
}

/// Decodes top-k / rand-k codes with 16-bit values: widened exactly, then the f32 decode.
ptrain_status_t decodeHalfValues(const char *call, const ptrain_codec_t &c, const CodeLayout &l, const char *code,
                                 void *state, float *out) {
  std::unique_ptr<float[], FreeDeleter> wide(static_cast<float *>(std::malloc(static_cast<size_t>(c.k) * 4)));
  if (!wide)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "the %lld widened values", static_cast<long long>(c.k));
  widenCodecValues(c, reinterpret_cast<const uint16_t *>(code + l.offset[0]), c.k, wide.get());
  if (c.kind == PTRAIN_CODEC_TOPK)
    return ptrain_topk_decode_f32(wide.get(), reinterpret_cast<const int32_t *>(code + l.offset[1]), c.k, l.numel,
                                  out);
  return ptrain_randk_decode_f32(wide.get(), l.numel, c.k, c.seed, static_cast<int64_t *>(state), out);
}
} // namespace

extern "C" ptrain_status_t ptrain_codec_code_bytes(const ptrain_codec_t *codec, int64_t *out_bytes) {
  PTRAIN_CHECK_PTR(out_bytes);
  CodeLayout l;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::codecLayout(__func__, codec, l));
  *out_bytes = l.total;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_codec_encode(const ptrain_codec_t *codec, const float *input, float *residual,
                                               void *state, void *out_code) {
  CodeLayout l;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::codecLayout(__func__, codec, l));
  PTRAIN_CHECK_PTR(input);
  PTRAIN_CHECK_PTR(out_code);
  const ptrain_codec_t &c = *codec;
  char *code = static_cast<char *>(out_code);
  if (ptrain::runtime::isHalfValues(c))
  {
    PTRAIN_CHECK_ARG(c.kind != PTRAIN_CODEC_RANDK || state != nullptr, "randk needs its counter state");
    return encodeHalfValues(__func__, c, l, input, residual, state, code);
  }
  auto f32 = [&](int section) { return reinterpret_cast<float *>(code + l.offset[section]); };
  switch (c.kind) {
  case PTRAIN_CODEC_POWERSGD:
    PTRAIN_CHECK_ARG(!c.warm_start || state, "powersgd with warm_start needs the Q state");
    return ptrain_powersgd_encode_f32(input, residual, c.warm_start ? static_cast<float *>(state) : nullptr, c.batch,
                                      c.rows, c.cols, c.rank, c.seed, f32(0), f32(1));
  case PTRAIN_CODEC_TOPK:
    return ptrain_topk_encode_f32(input, residual, l.numel, c.k, f32(0), reinterpret_cast<int32_t *>(f32(1)));
  case PTRAIN_CODEC_RANDK:
    PTRAIN_CHECK_ARG(state != nullptr, "randk needs its counter state");
    return ptrain_randk_encode_f32(input, residual, l.numel, c.k, c.seed, static_cast<int64_t *>(state), f32(0));
  case PTRAIN_CODEC_QUANT:
    return ptrain_quant_encode_f32(input, residual, c.batch * c.rows, c.cols, c.bits, c.granularity, c.block_size,
                                   c.symmetric, reinterpret_cast<uint8_t *>(code), f32(1),
                                   c.symmetric ? nullptr : f32(2));
  case PTRAIN_CODEC_TAHQUANT:
    return ptrain_tahquant_encode_f32(input, residual, l.numel, c.tile_size, c.low_bits, c.bits, c.k,
                                      reinterpret_cast<uint8_t *>(code), f32(1), f32(2),
                                      reinterpret_cast<uint8_t *>(code + l.offset[3]));
  default:
    return ptrain_cast_encode_f32(input, residual, l.numel, c.cast_dtype, reinterpret_cast<uint16_t *>(code));
  }
}

extern "C" ptrain_status_t ptrain_codec_decode(const ptrain_codec_t *codec, const void *code_bytes, void *state,
                                               float *out) {
  CodeLayout l;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::codecLayout(__func__, codec, l));
  PTRAIN_CHECK_PTR(code_bytes);
  PTRAIN_CHECK_PTR(out);
  const ptrain_codec_t &c = *codec;
  const char *code = static_cast<const char *>(code_bytes);
  if (ptrain::runtime::isHalfValues(c)) {
    PTRAIN_CHECK_ARG(c.kind != PTRAIN_CODEC_RANDK || state != nullptr, "randk needs its counter state");
    return decodeHalfValues(__func__, c, l, code, state, out);
  }
  auto f32 = [&](int section) { return reinterpret_cast<const float *>(code + l.offset[section]); };
  switch (c.kind) {
  case PTRAIN_CODEC_POWERSGD:
    return ptrain_powersgd_decode_f32(f32(0), f32(1), c.batch, c.rows, c.cols, c.rank, out);
  case PTRAIN_CODEC_TOPK:
    return ptrain_topk_decode_f32(f32(0), reinterpret_cast<const int32_t *>(f32(1)), c.k, l.numel, out);
  case PTRAIN_CODEC_RANDK:
    PTRAIN_CHECK_ARG(state != nullptr, "randk needs its counter state");
    return ptrain_randk_decode_f32(f32(0), l.numel, c.k, c.seed, static_cast<int64_t *>(state), out);
  case PTRAIN_CODEC_QUANT:
    return ptrain_quant_decode_f32(reinterpret_cast<const uint8_t *>(code), f32(1), c.symmetric ? nullptr : f32(2),
                                   c.batch * c.rows, c.cols, c.bits, c.granularity, c.block_size, c.symmetric, out);
  case PTRAIN_CODEC_TAHQUANT:
    return ptrain_tahquant_decode_f32(reinterpret_cast<const uint8_t *>(code), f32(1), f32(2),
                                      reinterpret_cast<const uint8_t *>(code + l.offset[3]), l.numel, c.tile_size,
                                      c.low_bits, c.bits, c.k, out);
  default:
    return ptrain_cast_decode_f32(reinterpret_cast<const uint16_t *>(code), l.numel, c.cast_dtype, out);
  }
}
