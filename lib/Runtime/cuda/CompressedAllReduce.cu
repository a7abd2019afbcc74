//===- CompressedAllReduce.cu - Compressed all-reduces over NCCL ----------===//
//
// ptrain_nccl_compressed_all_reduce: the CUDA side of
// ptrain.compressed_all_reduce_start (Optimus-CC's selective compression of
// data-parallel gradients, MCBench's TP sites), the phases of the CPU's
// ptrain_compressed_all_reduce_start (cpu/CompressedCollectives.cpp) on
// device buffers and NCCL, with the same codes, byte counts and results:
//
//   powersgd  P = M Q0 -> all-reduce P -> orthogonalize, Q = M^T P ->
//             all-reduce Q -> out = alpha P Q^T, e = M - P Q^T / N,
//             warm-start Q = Q / N (cuBLAS; PowerSGD.h). Exact path: one
//             all-reduce of the carried M.
//   randk     all-reduce of the k values (positions from the shared seed
//             and the counter, drawn on the host before anything is posted);
//             16-bit values (value_dtype bf16 / f16): ncclAllGather of the
//             2-byte values, fp32 sums in rank order, as the CPU.
//   cast      all-to-all of the 16-bit chunks (grouped ncclSend/ncclRecv),
//             fp32 sums of each chunk in rank order, ncclAllGather of the
//             fp32 chunks: exact fp32 sums of the 16-bit values.
//   topk      ncclAllGather of (values, indices), scatter-add in rank order.
//   16-bit top-k / rand-k values: the f32 encode, then each kept value rounded
//   to nearest even (cuda/HalfBits.h, the CPU's bits) and, with error
//   feedback, the rounding added back into the residual at its position.
//   quant     ncclAllGather of the packed codes and scales, decode and add
//             in rank order (the quantization decoder of Quant.cu).
//
// Every phase is stream-ordered on the current stream, so the call enqueues
// them all and returns; the host never waits for the device or copies from
// host memory after its first NCCL operation (the decoders used after one do
// neither). ptrain_nccl_wait is the watchdog, as after ptrain_nccl_all_reduce.
// The host wait, rand-k's (its counter read, its positions and the advanced
// counter written), comes before anything is posted and is the watchdog's
// poll itself (a stalled earlier operation ends at the deadline, not in a
// hang). Quantization's encoder does not wait: it codes a non-finite group
// as one (NaN scale, Quant.cu) instead of reporting it.
// Temporaries come from the stream-ordered allocator (cudaMallocAsync) and
// are freed in stream order after their last use.
//
// Traffic: each phase counts the bytes of this rank's buffer handed to NCCL
// (as the CPU counts what it hands to MPI), the whole call one operation.
//
//===----------------------------------------------------------------------===//

#include "cuda/HalfBits.h"
#include "cuda/NcclComm.h"
#include "cuda/PowerSGD.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

using namespace ptrain::cuda;

namespace {

int64_t align8(int64_t bytes) { return (bytes + 7) / 8 * 8; }

/// Whether a descriptor's top-k / rand-k values are 16-bit (cpu/codecs/Codec.h's isHalfValues).
bool halfValues(const ptrain_codec_t &c) {
  return (c.kind == PTRAIN_CODEC_TOPK || c.kind == PTRAIN_CODEC_RANDK) &&
         (c.value_dtype == PTRAIN_DTYPE_BF16 || c.value_dtype == PTRAIN_DTYPE_F16);
}
int64_t valueBytes(const ptrain_codec_t &c) { return halfValues(c) ? 2 : 4; }

/// The serialized code's sections (cpu/codecs/Codec.cpp's layout: 8-byte aligned, back to back).
struct Sections {
  int64_t numel = 0, offset[3] = {0, 0, 0}, total = 0;
};

ptrain_status_t sections(const char *call, const ptrain_codec_t &c, Sections &out) {
  int64_t bytes = 0;
  if (ptrain_codec_code_bytes(&c, &bytes) != PTRAIN_OK) {
    char why[512];
    std::snprintf(why, sizeof(why), "%s", ptrain_last_error());
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "invalid codec: %s", why);
  }
  out.numel = c.batch * c.rows * c.cols;
  switch (c.kind) {
  case PTRAIN_CODEC_POWERSGD:
    out.offset[1] = align8(c.batch * c.rows * c.rank * 4);
    break;
  case PTRAIN_CODEC_TOPK:
    out.offset[1] = align8(c.k * valueBytes(c));
    break;
  case PTRAIN_CODEC_QUANT: {
    const int64_t scales = c.granularity == PTRAIN_QUANT_TENSOR    ? 1
                           : c.granularity == PTRAIN_QUANT_CHANNEL ? c.cols
                                                                   : (out.numel + c.block_size - 1) / c.block_size;
    out.offset[1] = align8((out.numel * c.bits + 7) / 8);
    out.offset[2] = out.offset[1] + align8(scales * 4);
    break;
  }
  case PTRAIN_CODEC_TAHQUANT:
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "tahquant has no NCCL compressed all-reduce (a pipeline-send codec on CUDA; the CPU runtime's "
                "ptrain_compressed_all_reduce_start gathers its codes)");
  default:
    break;
  }
  out.total = bytes;
  return PTRAIN_OK;
}

const char *kNames[] = {"powersgd", "topk", "randk", "quant", "cast"};

__device__ __forceinline__ float widenValue(uint16_t c, bool f16) { return f16 ? halfToFloat(c) : bf16ToFloat(c); }

/// out[j] = round(values[j]) to 16 bits; with a residual, residual[kept[j]] += values[j] - widen(out[j]) (the
/// rounding the 16-bit value lost; the f32 encode left 0 there).
__global__ void __launch_bounds__(kThreads)
    roundValues(const float *__restrict__ values, int64_t k, bool f16, uint16_t *__restrict__ out,
                const int32_t *__restrict__ kept, float *__restrict__ residual) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride) {
    const uint16_t c = f16 ? floatToHalf(values[j]) : floatToBf16(values[j]);
    out[j] = c;
    if (residual)
      residual[kept[j]] = __fadd_rn(residual[kept[j]], __fsub_rn(values[j], widenValue(c, f16)));
  }
}

/// out[j] = sum over ranks r (in order) of the 16-bit value j of rank r's code (codes `stride` bytes apart), in fp32.
__global__ void __launch_bounds__(kThreads)
    sumHalfValues(const char *__restrict__ codes, int64_t stride, int size, int64_t k, bool f16,
                  float *__restrict__ out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += step) {
    float sum = 0.0f;
    for (int r = 0; r < size; ++r)
      sum = __fadd_rn(sum, widenValue(reinterpret_cast<const uint16_t *>(codes + r * stride)[j], f16));
    out[j] = sum;
  }
}

/// out[indices[j]] += widen(values[j]) for one rank's top-k code with 16-bit values (indices outside [0, n)
/// skipped, as scatterAdd).
__global__ void __launch_bounds__(kThreads)
    scatterAddHalf(const uint16_t *__restrict__ values, const int32_t *__restrict__ indices, int64_t k, int64_t n,
                   bool f16, float *__restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride) {
    const int32_t i = indices[j];
    if (i >= 0 && i < n)
      out[i] = __fadd_rn(out[i], widenValue(values[j], f16));
  }
}

/// out[j] = a * sum over ranks r (in order) of the 16-bit code codes[r * chunk + j], in fp32.
__global__ void __launch_bounds__(kThreads)
    sumChunks(const uint16_t *__restrict__ codes, int64_t chunk, int size, bool f16, float a, float *__restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < chunk; j += stride) {
    float sum = 0.0f;
    for (int r = 0; r < size; ++r) {
      const uint16_t c = codes[r * chunk + j];
      sum = __fadd_rn(sum, f16 ? __half2float(__ushort_as_half(c)) : __uint_as_float(static_cast<uint32_t>(c) << 16));
    }
    out[j] = __fmul_rn(sum, a);
  }
}

/// out[i] += x[i].
__global__ void __launch_bounds__(kThreads) addTo(const float *__restrict__ x, int64_t n, float *__restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = __fadd_rn(out[i], x[i]);
}

/// out[indices[j]] += values[j] for one rank's top-k code (its indices are distinct); an index outside [0, n),
/// which no top-k encoder writes, is skipped rather than written out of bounds.
__global__ void __launch_bounds__(kThreads)
    scatterAdd(const float *__restrict__ values, const int32_t *__restrict__ indices, int64_t k, int64_t n,
               float *__restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride) {
    const int32_t i = indices[j];
    if (i >= 0 && i < n)
      out[i] = __fadd_rn(out[i], values[j]);
  }
}

/// out[positions[j]] = a * values[j] (rand-k's positions are distinct and inside the tensor).
__global__ void __launch_bounds__(kThreads)
    scatterScaled(const float *__restrict__ values, const int32_t *__restrict__ positions, int64_t k, float a,
                  float *__restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < k; j += stride)
    out[positions[j]] = __fmul_rn(values[j], a);
}

/// One call's state: the communicator, the codec and the temporaries to free in stream order.
class CompressedAllReduce {
public:
  CompressedAllReduce(const char *call, ptrain_nccl_comm *comm, const ptrain_codec_t &codec, const Sections &layout,
                      ptrain_reduce_op_t op)
      : call(call), comm(comm), codec(codec), layout(layout),
        alpha(op == PTRAIN_REDUCE_AVG ? 1.0f / static_cast<float>(comm->size) : 1.0f), stream(currentStream()) {}
  ~CompressedAllReduce() {
    for (int i = 0; i < numTemps; ++i)
      cudaFreeAsync(temps[i], stream);
  }

  ptrain_status_t run(const float *input, float *residual, void *state, float *out) {
    switch (codec.kind) {
    case PTRAIN_CODEC_POWERSGD:
      return powersgd(input, residual, static_cast<float *>(state), out);
    case PTRAIN_CODEC_RANDK:
      return randk(input, residual, static_cast<int64_t *>(state), out);
    case PTRAIN_CODEC_CAST:
      return cast(input, residual, out);
    default:
      return gathered(input, residual, out);
    }
  }

private:
  const char *call;
  ptrain_nccl_comm *comm;
  ptrain_codec_t codec;
  Sections layout;
  float alpha;
  cudaStream_t stream;
  void *temps[6] = {};
  int numTemps = 0;

  /// `bytes` (zeroed) from the stream-ordered allocator, freed when the call returns.
  template <typename T> ptrain_status_t temp(int64_t bytes, T **out) {
    void *p = nullptr;
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaMallocAsync(&p, bytes > 0 ? bytes : 1, stream), "cudaMallocAsync"));
    temps[numTemps++] = p;
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaMemsetAsync(p, 0, bytes > 0 ? bytes : 1, stream), "cudaMemsetAsync"));
    *out = static_cast<T *>(p);
    return PTRAIN_OK;
  }

  /// Records a posted phase for the watchdog and settles it.
  ptrain_status_t posted(ncclResult_t r, const char *phase, int64_t bytes) {
    char what[160];
    std::snprintf(what, sizeof(what), "compressed_all_reduce(%s, %lld elements: %s)", kNames[codec.kind],
                  static_cast<long long>(layout.numel), phase);
    PTRAIN_CUDA_RETURN_IF_ERROR(checkResult(call, comm->comm, r, what));
    comm->collectiveBytes += bytes;
    return enqueued(call, comm, what);
  }

  /// Waits for this call's work so far on the stream, as the watchdog (nothing of this call is posted yet).
  ptrain_status_t waitForStream(const char *what) {
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaEventRecord(comm->event, stream), "cudaEventRecord"));
    return pollEvent(call, comm, comm->event, what);
  }

  ptrain_status_t allReduceF32(float *data, int64_t count, const char *phase) {
    return posted(ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat32, ncclSum, comm->comm, stream),
                  phase, count * 4);
  }

  ptrain_status_t allGatherBytes(const void *send, void *recv, int64_t bytes, const char *phase) {
    return posted(ncclAllGather(send, recv, static_cast<size_t>(bytes), ncclUint8, comm->comm, stream), phase, bytes);
  }

  ptrain_status_t powersgd(const float *input, float *residual, float *qState, float *out) {
    const PowerSgdShape s{codec.batch, codec.rows, codec.cols, codec.rank};
    PTRAIN_CUDA_RETURN_IF_ERROR(gpuPowersgdCheck(call, s));
    if (codec.warm_start && !qState)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "powersgd with warm_start needs the Q state");
    char *code = nullptr;
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(layout.total, &code));
    auto *p = reinterpret_cast<float *>(code), *q = reinterpret_cast<float *>(code + layout.offset[1]);
    const float *mat = nullptr;
    PTRAIN_CUDA_RETURN_IF_ERROR(
        gpuPowersgdPhaseP(call, s, input, residual, codec.warm_start ? qState : nullptr, codec.seed, p, q, &mat));
    if (s.exact()) {
      PTRAIN_CUDA_RETURN_IF_ERROR(allReduceF32(p, s.exactCodeFloats(layout.offset[1] / 4), "all-reduce of the exact code"));
    } else {
      PTRAIN_CUDA_RETURN_IF_ERROR(allReduceF32(p, s.pCount(), "all-reduce of P"));
      PTRAIN_CUDA_RETURN_IF_ERROR(gpuPowersgdPhaseQ(call, s, mat, p, q));
      PTRAIN_CUDA_RETURN_IF_ERROR(allReduceF32(q, s.qCount(), "all-reduce of Q"));
    }
    return gpuPowersgdFinish(call, s, p, q, alpha, out, residual, 1.0f / static_cast<float>(comm->size),
                             codec.warm_start && !s.exact() ? qState : nullptr);
  }

  ptrain_status_t randk(const float *input, float *residual, int64_t *counterState, float *out) {
    if (!counterState)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "randk needs its counter state");
    // The counter to the host, the positions to the device and the advanced counter back, all before anything is
    // posted; each wait is the stream's event polled by the watchdog, the last one frees the host buffers.
    int64_t counter = 0;
    PTRAIN_CUDA_RETURN_IF_ERROR(
        check(call, cudaMemcpyAsync(&counter, counterState, 8, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync"));
    PTRAIN_CUDA_RETURN_IF_ERROR(waitForStream("the read of the rand-k counter"));
    std::vector<int32_t> positions(static_cast<size_t>(codec.k));
    PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_randk_indices(codec.seed, counter, layout.numel, codec.k, positions.data()));
    const bool half = halfValues(codec);
    float *values = nullptr;
    int32_t *kept = nullptr;
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(half ? codec.k * 4 : layout.total, &values));
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(codec.k * 4, &kept));
    PTRAIN_CUDA_RETURN_IF_ERROR(check(
        call, cudaMemcpyAsync(kept, positions.data(), codec.k * 4, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync"));
    int64_t next = counter;
    PTRAIN_CUDA_RETURN_IF_ERROR(
        ptrain_cuda_randk_encode_f32(input, residual, layout.numel, codec.k, codec.seed, &next, values));
    PTRAIN_CUDA_RETURN_IF_ERROR(
        check(call, cudaMemcpyAsync(counterState, &next, 8, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync"));
    PTRAIN_CUDA_RETURN_IF_ERROR(waitForStream("the rand-k positions and counter"));
    if (half) { // the 2-byte values gathered and summed in fp32 in rank order (the CPU's all-gather)
      const bool f16 = codec.value_dtype == PTRAIN_DTYPE_F16;
      char *code = nullptr, *all = nullptr;
      PTRAIN_CUDA_RETURN_IF_ERROR(temp(layout.total, &code));
      PTRAIN_CUDA_RETURN_IF_ERROR(temp(layout.total * comm->size, &all));
      roundValues<<<gridFor(codec.k), kThreads, 0, stream>>>(values, codec.k, f16, reinterpret_cast<uint16_t *>(code),
                                                             kept, residual);
      PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), "roundValues"));
      PTRAIN_CUDA_RETURN_IF_ERROR(allGatherBytes(code, all, layout.total, "all-gather of the 16-bit rand-k values"));
      sumHalfValues<<<gridFor(codec.k), kThreads, 0, stream>>>(all, layout.total, comm->size, codec.k, f16, values);
      PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), "sumHalfValues"));
    } else {
      PTRAIN_CUDA_RETURN_IF_ERROR(allReduceF32(values, codec.k, "all-reduce of the rand-k values"));
    }
    // Decode: out = 0, out[position j] = alpha * value j (the CPU scales the values, then scatters them).
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaMemsetAsync(out, 0, layout.numel * 4, stream), "cudaMemsetAsync"));
    scatterScaled<<<gridFor(codec.k), kThreads, 0, stream>>>(values, kept, codec.k, alpha, out);
    return check(call, cudaGetLastError(), "scatterScaled");
  }

  ptrain_status_t cast(const float *input, float *residual, float *out) {
    const int size = comm->size;
    const int64_t chunk = (layout.numel + size - 1) / size;
    uint16_t *code = nullptr, *received = nullptr;
    float *reduced = nullptr, *all = nullptr;
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(chunk * size * 2, &code));
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(chunk * size * 2, &received));
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(chunk * 4, &reduced));
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(chunk * size * 4, &all));
    PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_cuda_cast_encode_f32(input, residual, layout.numel, codec.cast_dtype, code));
    // All-to-all: chunk r of this rank's codes to rank r, rank r's chunk of its codes into slot r.
    ncclResult_t r = ncclGroupStart();
    for (int peer = 0; peer < size && (r == ncclSuccess || r == ncclInProgress); ++peer) {
      r = ncclSend(code + peer * chunk, static_cast<size_t>(chunk) * 2, ncclUint8, peer, comm->comm, stream);
      if (r == ncclSuccess || r == ncclInProgress)
        r = ncclRecv(received + peer * chunk, static_cast<size_t>(chunk) * 2, ncclUint8, peer, comm->comm, stream);
    }
    const ncclResult_t end = ncclGroupEnd();
    PTRAIN_CUDA_RETURN_IF_ERROR(
        posted(r == ncclSuccess || r == ncclInProgress ? end : r, "all-to-all of the 16-bit chunks", chunk * size * 2));
    sumChunks<<<gridFor(chunk), kThreads, 0, stream>>>(received, chunk, size, codec.cast_dtype == PTRAIN_DTYPE_F16,
                                                       alpha, reduced);
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), "sumChunks"));
    PTRAIN_CUDA_RETURN_IF_ERROR(
        posted(ncclAllGather(reduced, all, static_cast<size_t>(chunk), ncclFloat32, comm->comm, stream),
               "all-gather of the fp32 chunks", chunk * 4));
    return check(call, cudaMemcpyAsync(out, all, layout.numel * 4, cudaMemcpyDeviceToDevice, stream),
                 "cudaMemcpyAsync");
  }

  /// top-k and quantization: all-gather of the codes, decoded and added in rank order.
  ptrain_status_t gathered(const float *input, float *residual, float *out) {
    const int size = comm->size;
    const int64_t total = layout.total, numel = layout.numel;
    char *code = nullptr, *all = nullptr;
    float *decoded = nullptr;
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(total, &code));
    PTRAIN_CUDA_RETURN_IF_ERROR(temp(total * size, &all));
    const bool quant = codec.kind == PTRAIN_CODEC_QUANT;
    auto f32 = [&](char *c, int section) { return reinterpret_cast<float *>(c + layout.offset[section]); };
    if (quant) {
      PTRAIN_CUDA_RETURN_IF_ERROR(temp(numel * 4, &decoded));
      PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_cuda_quant_encode_f32(
          input, residual, codec.batch * codec.rows, codec.cols, codec.bits, codec.granularity, codec.block_size,
          codec.symmetric, reinterpret_cast<uint8_t *>(code), f32(code, 1), codec.symmetric ? nullptr : f32(code, 2)));
    } else if (halfValues(codec)) { // the f32 values rounded into the code, indices as they are
      float *values = nullptr;
      PTRAIN_CUDA_RETURN_IF_ERROR(temp(codec.k * 4, &values));
      auto *indices = reinterpret_cast<int32_t *>(f32(code, 1));
      PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_cuda_topk_encode_f32(input, residual, numel, codec.k, values, indices));
      roundValues<<<gridFor(codec.k), kThreads, 0, stream>>>(values, codec.k, codec.value_dtype == PTRAIN_DTYPE_F16,
                                                             reinterpret_cast<uint16_t *>(code), indices, residual);
      PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), "roundValues"));
    } else {
      PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_cuda_topk_encode_f32(input, residual, numel, codec.k, f32(code, 0),
                                                              reinterpret_cast<int32_t *>(f32(code, 1))));
    }
    PTRAIN_CUDA_RETURN_IF_ERROR(allGatherBytes(code, all, total, "all-gather of the codes"));
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaMemsetAsync(out, 0, numel * 4, stream), "cudaMemsetAsync"));
    for (int r = 0; r < size; ++r) {
      char *c = all + r * total;
      if (quant) {
        PTRAIN_CUDA_RETURN_IF_ERROR(
            ptrain_cuda_quant_decode_f32(reinterpret_cast<const uint8_t *>(c), f32(c, 1),
                                         codec.symmetric ? nullptr : f32(c, 2), codec.batch * codec.rows, codec.cols,
                                         codec.bits, codec.granularity, codec.block_size, codec.symmetric, decoded));
        addTo<<<gridFor(numel), kThreads, 0, stream>>>(decoded, numel, out);
      } else if (halfValues(codec)) {
        scatterAddHalf<<<gridFor(codec.k), kThreads, 0, stream>>>(
            reinterpret_cast<const uint16_t *>(c), reinterpret_cast<const int32_t *>(f32(c, 1)), codec.k, numel,
            codec.value_dtype == PTRAIN_DTYPE_F16, out);
      } else {
        scatterAdd<<<gridFor(codec.k), kThreads, 0, stream>>>(f32(c, 0), reinterpret_cast<const int32_t *>(f32(c, 1)),
                                                              codec.k, numel, out);
      }
      PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), quant ? "addTo" : "scatterAdd"));
    }
    return scaleF32(call, out, numel, alpha, out);
  }
};

} // namespace

extern "C" ptrain_status_t ptrain_nccl_compressed_all_reduce(ptrain_nccl_comm_t comm, const ptrain_codec_t *codec,
                                                             const float *input, float *residual, void *state,
                                                             float *out, ptrain_reduce_op_t op) {
  // Arguments first (they need no device), then the communicator.
  PTRAIN_CUDA_CHECK_PTR(codec);
  Sections layout;
  PTRAIN_CUDA_RETURN_IF_ERROR(sections(__func__, *codec, layout));
  PTRAIN_CUDA_CHECK_ARG(input && out, "'input' and 'out' must not be null");
  PTRAIN_CUDA_CHECK_ARG(op == PTRAIN_REDUCE_SUM || op == PTRAIN_REDUCE_AVG,
                        "unsupported reduction %d (sum = 0, avg = 1)", op);
  PTRAIN_CUDA_CHECK_ARG(!residual || residual != out, "'out' must not alias 'residual'");
  PTRAIN_CUDA_RETURN_IF_ERROR(checkUsable(__func__, comm));
  ptrain_status_t st = PTRAIN_OK;
  {
    CompressedAllReduce reduce(__func__, comm, *codec, layout, op);
    st = reduce.run(input, residual, state, out);
  }
  if (st == PTRAIN_OK)
    ++comm->collectiveOps; // the call is one operation, as on the CPU
  return st;
}
