//===- CompressedCollectives.cpp - Codecs on the wire ---------------------===//
//
// ptrain_compressed_all_reduce_start and compressed send/recv: the runtime
// side of ptrain.compressed_all_reduce_start and of compress -> send/recv ->
// decompress (DESIGN.md decision 4). Summable codes are reduced in
// compressed form; the others are all-gathered, decoded and summed in rank
// order (Bian et al., MLSys 2024, "Where they apply"):
//
//   powersgd  P = M Q0 -> all-reduce P -> orthogonalize, Q = M^T P ->
//             all-reduce Q -> out = P Q^T (Vogels et al. 2019, Algorithm 2;
//             Optimus-CC section 5); e = M - P Q^T / N and the warm-start Q
//             is Q / N, as in PyTorch's powerSGD_hook. Exact path: one
//             all-reduce of the carried M.
//   randk     all-reduce of the k values (same positions on every rank);
//             16-bit values (value_dtype bf16 / f16): all-gather of the
//             2-byte values, fp32 sums in rank order (OpenMPI 4.1 has no
//             16-bit sum; the same sum on every rank).
//   cast      all-to-all of 16-bit chunks, fp32 sums of each chunk in rank
//             order, all-gather of the fp32 chunks: the sum is exact in
//             fp32 (no 16-bit partial sums), 25% fewer bytes than an fp32
//             ring all-reduce, the same result on every rank.
//   topk      all-gather of (values, indices), scatter-add in rank order
//             (16-bit values widened exactly first).
//   quant     all-gather of the packed codes and scales, decode and add in
//             rank order.
//
// ptrain_compressed_reduce_scatter_start (ZeRO-1's bucket reduce-scatter,
// docs/DistributedOptimizer.md, "Compression"): each rank encodes each
// destination's chunk of its bucket separately (error feedback per chunk of
// one residual), one all-to-all hands rank j every rank's code of chunk j,
// and rank j decodes and adds them in rank order: (N - 1) / N of the codes
// cross the wire, as the ring reduce-scatter moves (N - 1) / N of the data.
//
// Every phase is a nonblocking MPI call completed by ptrain_wait, which runs
// the next phase (Continuation) and gives each phase the deadline.
//
//===----------------------------------------------------------------------===//

#include "cpu/Comm.h"
#include "cpu/codecs/Cast.h"
#include "cpu/codecs/Codec.h"
#include "cpu/codecs/PowerSGD.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

using ptrain::runtime::CodeLayout;
using ptrain::runtime::fail;

namespace ptrain::runtime {
ptrain_status_t topkScatter(const char *call, const float *values, const int32_t *indices, int64_t k, int64_t n,
                            float *out, bool accumulate);
} // namespace ptrain::runtime

namespace {

/// Zeroed heap bytes, freed with std::free.
char *zalloc(int64_t bytes) { return static_cast<char *>(std::calloc(static_cast<size_t>(bytes > 0 ? bytes : 1), 1)); }

/// The text of a compressed collective in deadline and mismatch messages.
void describeCompressed(char *buf, size_t size, const char *what, const ptrain_codec_t &codec, ptrain_reduce_op_t op,
                        const CodeLayout &layout, const ptrain_comm *comm, const char *phase) {
  char c[128];
  ptrain::runtime::describeCodec(codec, c, sizeof(c));
  std::snprintf(buf, size, "%s (%s, %s, %lld elements, %lld code bytes) over %d ranks as rank %d, phase: %s", what,
                op == PTRAIN_REDUCE_AVG ? "avg" : "sum", c, static_cast<long long>(layout.numel),
                static_cast<long long>(layout.total), comm->size, comm->rank, phase);
}

class CompressedAllReduce final : public ptrain::runtime::Continuation {
public:
  ptrain_codec_t codec;
  CodeLayout layout;
  ptrain_comm *comm = nullptr;
  float *residual = nullptr;
  void *state = nullptr;
  float *out = nullptr;
  ptrain_reduce_op_t op = PTRAIN_REDUCE_SUM;
  /// This rank's code, and what the collective delivers.
  char *code = nullptr;
  char *gathered = nullptr;
  float *reduced = nullptr;
  const float *matrix = nullptr; // powersgd: M
  int64_t counter = 0;           // randk: the counter the code used
  int64_t chunk = 0;             // cast: elements per rank's chunk
  int phase = 0;
  const char *phaseName = "";

  ~CompressedAllReduce() override {
    std::free(code);
    std::free(gathered);
    std::free(reduced);
  }

  ptrain::runtime::PowerSgdShape shape() const { return {codec.batch, codec.rows, codec.cols, codec.rank}; }
  float *f32(int section) const { return reinterpret_cast<float *>(code + layout.offset[section]); }
  float alpha() const { return op == PTRAIN_REDUCE_AVG ? 1.0f / static_cast<float>(comm->size) : 1.0f; }

  void describe(char *buf, size_t size) const override {
    describeCompressed(buf, size, "compressed_all_reduce", codec, op, layout, comm, phaseName);
  }

  int allReduceF32(float *data, int64_t count, MPI_Request *req) {
    ptrain::runtime::countCollective(comm, count * 4, false);
    return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm->mpi, req);
  }

  /// Encodes and posts the first phase.
  ptrain_status_t start(const char *call, const float *input, ptrain_request &req) {
    const int size = comm->size;
    int err = MPI_SUCCESS;
    switch (codec.kind) {
    case PTRAIN_CODEC_POWERSGD: {
      const auto s = shape();
      PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdCheck(call, s));
      PTRAIN_CHECK_ARG(!codec.warm_start || state, "powersgd with warm_start needs the Q state");
      if (!(code = zalloc(layout.total)))
        return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "code buffer");
      PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdPhaseP(call, s, input, residual,
                                                             codec.warm_start ? static_cast<float *>(state) : nullptr,
                                                             codec.seed, f32(0), f32(1), &matrix));
      if (s.exact()) {
        phase = 2;
        phaseName = "all-reduce of the exact code";
        err = allReduceF32(f32(0), s.exactCodeFloats(layout.offset[1] / 4), &req.mpi);
      } else {
        phase = 1;
        phaseName = "all-reduce of P";
        err = allReduceF32(f32(0), s.pCount(), &req.mpi);
      }
      break;
    }
    case PTRAIN_CODEC_RANDK: {
      PTRAIN_CHECK_ARG(state != nullptr, "randk needs its counter state");
      if (ptrain::runtime::isHalfValues(codec))
        return startGather(call, input, req);
      if (!(code = zalloc(layout.total)))
        return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "code buffer");
      counter = *static_cast<int64_t *>(state);
      PTRAIN_RETURN_IF_ERROR(ptrain_codec_encode(&codec, input, residual, state, code));
      phase = 2;
      phaseName = "all-reduce of the rand-k values";
      err = allReduceF32(f32(0), codec.k, &req.mpi);
      break;
    }
    case PTRAIN_CODEC_CAST: {
      chunk = (layout.numel + size - 1) / size;
      PTRAIN_CHECK_ARG(chunk * size <= INT_MAX / 4,
                       "the cast all-reduce of %lld elements exceeds MPI's "
                       "int counts",
                       static_cast<long long>(layout.numel));
      code = zalloc(chunk * size * 2);
      gathered = zalloc(chunk * size * 4);
      reduced = reinterpret_cast<float *>(zalloc(chunk * 4));
      if (!code || !gathered || !reduced)
        return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "code buffers");
      PTRAIN_RETURN_IF_ERROR(
          ptrain_cast_encode_f32(input, residual, layout.numel, codec.cast_dtype, reinterpret_cast<uint16_t *>(code)));
      phase = 1;
      phaseName = "all-to-all of the 16-bit chunks";
      ptrain::runtime::countCollective(comm, chunk * size * 2, false);
      err = MPI_Ialltoall(code, static_cast<int>(chunk), MPI_UINT16_T, gathered, static_cast<int>(chunk), MPI_UINT16_T,
                          comm->mpi, &req.mpi);
      break;
    }
    default: // topk, quant, tahquant: gather the codes
      return startGather(call, input, req);
    }
    if (err != MPI_SUCCESS)
      return ptrain::runtime::failMpi(call, err, phaseName);
    return PTRAIN_OK;
  }

  /// Encodes and all-gathers the serialized codes (top-k, quantization, TAH-Quant, and rand-k with 16-bit values).
  ptrain_status_t startGather(const char *call, const float *input, ptrain_request &req) {
    const int size = comm->size;
    PTRAIN_CHECK_ARG(layout.total <= INT_MAX / size, "%lld code bytes per rank exceed MPI's int counts",
                     static_cast<long long>(layout.total));
    code = zalloc(layout.total);
    gathered = zalloc(layout.total * size);
    // The decode's scratch: a rank's decoded tensor (quantization), or k widened values (16-bit top-k, rand-k).
    const bool quant = codec.kind == PTRAIN_CODEC_QUANT || codec.kind == PTRAIN_CODEC_TAHQUANT;
    if (quant || ptrain::runtime::isHalfValues(codec))
      reduced = reinterpret_cast<float *>(zalloc((quant ? layout.numel : codec.k) * 4));
    if (!code || !gathered || ((quant || ptrain::runtime::isHalfValues(codec)) && !reduced))
      return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "code buffers");
    if (codec.kind == PTRAIN_CODEC_RANDK)
      counter = *static_cast<int64_t *>(state);
    PTRAIN_RETURN_IF_ERROR(ptrain_codec_encode(&codec, input, residual, state, code));
    phase = 2;
    phaseName = "all-gather of the codes";
    ptrain::runtime::countCollective(comm, layout.total, false);
    int err = MPI_Iallgather(code, static_cast<int>(layout.total), MPI_BYTE, gathered, static_cast<int>(layout.total),
                             MPI_BYTE, comm->mpi, &req.mpi);
    if (err != MPI_SUCCESS)
      return ptrain::runtime::failMpi(call, err, phaseName);
    return PTRAIN_OK;
  }

  ptrain_status_t step(ptrain_request &req, const MPI_Status &, bool *more) override {
    static const char *call = "ptrain_wait";
    *more = false;
    const int size = comm->size;
    if (phase == 1) {
      int err = MPI_SUCCESS;
      if (codec.kind == PTRAIN_CODEC_POWERSGD) {
        const auto s = shape();
        PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdPhaseQ(call, s, matrix, f32(0), f32(1)));
        phaseName = "all-reduce of Q";
        err = allReduceF32(f32(1), s.qCount(), &req.mpi);
      } else { // cast: fp32 sums of this rank's chunk, in rank order
        const auto *codes = reinterpret_cast<const uint16_t *>(gathered);
        const bool f16 = codec.cast_dtype == PTRAIN_DTYPE_F16;
        const float a = alpha();
        for (int64_t j = 0; j < chunk; ++j) {
          float sum = 0.0f;
          for (int r = 0; r < size; ++r) {
            const uint16_t c = codes[r * chunk + j];
            sum += f16 ? ptrain::runtime::halfToFloat(c) : ptrain::runtime::bf16ToFloat(c);
          }
          reduced[j] = sum * a;
        }
        phaseName = "all-gather of the fp32 chunks";
        ptrain::runtime::countCollective(comm, chunk * 4, false);
        err = MPI_Iallgather(reduced, static_cast<int>(chunk), MPI_FLOAT, gathered, static_cast<int>(chunk), MPI_FLOAT,
                             comm->mpi, &req.mpi);
      }
      if (err != MPI_SUCCESS)
        return ptrain::runtime::failMpi(call, err, phaseName);
      phase = 2;
      *more = true;
      return PTRAIN_OK;
    }
    // phase 2: decode the reduced or gathered codes into `out`.
    const int64_t numel = layout.numel;
    const float a = alpha();
    switch (codec.kind) {
    case PTRAIN_CODEC_POWERSGD: {
      const auto s = shape();
      ptrain::runtime::powersgdFinish(s, f32(0), f32(1), a, out, residual, 1.0f / static_cast<float>(size),
                                      codec.warm_start && !s.exact() ? static_cast<float *>(state) : nullptr);
      return PTRAIN_OK;
    }
    case PTRAIN_CODEC_RANDK: {
      float *values = f32(0);
      if (ptrain::runtime::isHalfValues(codec)) { // every rank's 16-bit values, widened and added in rank order
        values = reduced;
        std::memset(values, 0, static_cast<size_t>(codec.k) * 4);
        float *wide = out; // numel >= k floats, overwritten by the decode below
        for (int r = 0; r < size; ++r) {
          ptrain::runtime::widenCodecValues(
              codec, reinterpret_cast<const uint16_t *>(gathered + r * layout.total + layout.offset[0]), codec.k, wide);
          for (int64_t j = 0; j < codec.k; ++j)
            values[j] += wide[j];
        }
      }
      for (int64_t j = 0; j < codec.k; ++j)
        values[j] *= a;
      int64_t c = counter;
      return ptrain_randk_decode_f32(values, numel, codec.k, codec.seed, &c, out);
    }
    case PTRAIN_CODEC_CAST:
      std::memcpy(out, gathered, static_cast<size_t>(numel) * 4);
      return PTRAIN_OK;
    case PTRAIN_CODEC_TOPK: {
      std::memset(out, 0, static_cast<size_t>(numel) * 4);
      for (int r = 0; r < size; ++r) {
        const char *c = gathered + r * layout.total;
        const float *values = reinterpret_cast<const float *>(c + layout.offset[0]);
        if (ptrain::runtime::isHalfValues(codec)) {
          ptrain::runtime::widenCodecValues(codec, reinterpret_cast<const uint16_t *>(c + layout.offset[0]), codec.k,
                                            reduced);
          values = reduced;
        }
        PTRAIN_RETURN_IF_ERROR(ptrain::runtime::topkScatter(call, values,
                                                            reinterpret_cast<const int32_t *>(c + layout.offset[1]),
                                                            codec.k, numel, out, /*accumulate=*/true));
      }
      break;
    }
    default: { // quant, tahquant
      std::memset(out, 0, static_cast<size_t>(numel) * 4);
      for (int r = 0; r < size; ++r) {
        PTRAIN_RETURN_IF_ERROR(ptrain_codec_decode(&codec, gathered + r * layout.total, nullptr, reduced));
        for (int64_t i = 0; i < numel; ++i)
          out[i] += reduced[i];
      }
      break;
    }
    }
    if (a != 1.0f)
      for (int64_t i = 0; i < numel; ++i)
        out[i] *= a;
    return PTRAIN_OK;
  }
};

/// ZeRO-1's compressed reduce-scatter of a gathered codec: the chunk of every
/// destination encoded alone, one all-to-all of the codes, decoded and added.
class CompressedReduceScatter final : public ptrain::runtime::Continuation {
public:
  ptrain_codec_t codec; // one chunk: numel = the elements each rank keeps
  CodeLayout layout;
  ptrain_comm *comm = nullptr;
  float *out = nullptr;
  ptrain_reduce_op_t op = PTRAIN_REDUCE_SUM;
  char *code = nullptr;     // [size][layout.total]: this rank's code of each chunk
  char *gathered = nullptr; // [size][layout.total]: every rank's code of this rank's chunk
  float *decoded = nullptr;

  ~CompressedReduceScatter() override {
    std::free(code);
    std::free(gathered);
    std::free(decoded);
  }

  void describe(char *buf, size_t size) const override {
    describeCompressed(buf, size, "compressed_reduce_scatter (per chunk)", codec, op, layout, comm,
                       "all-to-all of the codes");
  }

  /// Encodes every chunk of `input` (with its chunk of `residual`) and posts the all-to-all.
  ptrain_status_t start(const char *call, const float *input, float *residual, ptrain_request &req) {
    const int size = comm->size;
    PTRAIN_CHECK_ARG(layout.total <= INT_MAX / size, "%lld code bytes per chunk exceed MPI's int counts",
                     static_cast<long long>(layout.total));
    code = zalloc(layout.total * size);
    gathered = zalloc(layout.total * size);
    decoded = reinterpret_cast<float *>(zalloc(layout.numel * 4));
    if (!code || !gathered || !decoded)
      return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "code buffers");
    for (int j = 0; j < size; ++j)
      PTRAIN_RETURN_IF_ERROR(ptrain_codec_encode(&codec, input + j * layout.numel,
                                                 residual ? residual + j * layout.numel : nullptr, nullptr,
                                                 code + j * layout.total));
    ptrain::runtime::countCollective(comm, layout.total * size, false);
    int err = MPI_Ialltoall(code, static_cast<int>(layout.total), MPI_BYTE, gathered, static_cast<int>(layout.total),
                            MPI_BYTE, comm->mpi, &req.mpi);
    if (err != MPI_SUCCESS)
      return ptrain::runtime::failMpi(call, err, "MPI_Ialltoall of the codes");
    return PTRAIN_OK;
  }

  ptrain_status_t step(ptrain_request &, const MPI_Status &, bool *more) override {
    *more = false;
    const int size = comm->size;
    const int64_t numel = layout.numel;
    std::memset(out, 0, static_cast<size_t>(numel) * 4);
    for (int r = 0; r < size; ++r) {
      PTRAIN_RETURN_IF_ERROR(ptrain_codec_decode(&codec, gathered + r * layout.total, nullptr, decoded));
      for (int64_t i = 0; i < numel; ++i)
        out[i] += decoded[i];
    }
    if (op == PTRAIN_REDUCE_AVG) {
      const float a = 1.0f / static_cast<float>(size);
      for (int64_t i = 0; i < numel; ++i)
        out[i] *= a;
    }
    return PTRAIN_OK;
  }
};

class CompressedP2P final : public ptrain::runtime::Continuation {
public:
  ptrain_codec_t codec;
  CodeLayout layout;
  ptrain_comm *comm = nullptr;
  bool receive = false;
  int peer = 0, tag = 0;
  char *code = nullptr;
  void *state = nullptr;
  float *out = nullptr;

  ~CompressedP2P() override { std::free(code); }
  bool isReceive() const override { return receive; }
  void describe(char *buf, size_t size) const override {
    char c[128];
    ptrain::runtime::describeCodec(codec, c, sizeof(c));
    std::snprintf(buf, size,
                  "compressed %s peer %d of comm size %d (%s, tag %d, %lld "
                  "code bytes)",
                  receive ? "recv from" : "send to", peer, comm->size, c, tag, static_cast<long long>(layout.total));
  }
  ptrain_status_t step(ptrain_request &, const MPI_Status &status, bool *more) override {
    *more = false;
    if (!receive)
      return PTRAIN_OK;
    int received = 0;
    MPI_Get_count(&status, MPI_BYTE, &received);
    if (received != layout.total) {
      char what[256];
      describe(what, sizeof(what));
      return fail(PTRAIN_ERROR_MISMATCH, "ptrain_wait",
                  "%s: received %d bytes, expected %lld; the sender used "
                  "another codec or shape",
                  what, received, static_cast<long long>(layout.total));
    }
    return ptrain_codec_decode(&codec, code, state, out);
  }
};

/// Shared start of the compressed operations: checks and the request.
template <typename Cont>
ptrain_status_t prepare(const char *call, ptrain_comm_t comm, const ptrain_codec_t *codec, ptrain_request_t *out,
                        Cont *&cont, ptrain_request *&req) {
  if (!out)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'out_request' must not be null");
  *out = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkComm(call, comm));
  CodeLayout layout;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::codecLayout(call, codec, layout));
  cont = new (std::nothrow) Cont();
  req = cont ? ptrain::runtime::newRequest(ptrain_request::Kind::Compressed, comm) : nullptr;
  if (!req) {
    delete cont;
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate a request");
  }
  req->next = cont;
  cont->codec = *codec;
  cont->layout = layout;
  cont->comm = comm;
  req->count = layout.numel;
  req->bytes = layout.total;
  return PTRAIN_OK;
}

/// The end of a compressed collective's start: on success the operation is counted and the request handed out,
/// else the request is freed and `st` returned.
ptrain_status_t posted(ptrain_status_t st, ptrain_comm_t comm, ptrain_request *req, ptrain_request_t *out_request) {
  if (st != PTRAIN_OK) {
    ptrain::runtime::deleteRequest(req);
    return st;
  }
  ptrain::runtime::countCollective(comm, 0, true);
  *out_request = req;
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t ptrain_compressed_all_reduce_start(ptrain_comm_t comm, const ptrain_codec_t *codec,
                                                              const float *input, float *residual, void *state,
                                                              float *out, ptrain_reduce_op_t op,
                                                              ptrain_request_t *out_request) {
  CompressedAllReduce *cont = nullptr;
  ptrain_request *req = nullptr;
  PTRAIN_RETURN_IF_ERROR(prepare(__func__, comm, codec, out_request, cont, req));
  ptrain_status_t st = PTRAIN_OK;
  if (!input || !out)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "'input' and 'out' must not be null");
  else if (op != PTRAIN_REDUCE_SUM && op != PTRAIN_REDUCE_AVG)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "unsupported reduction %d (sum = 0, avg = 1)", op);
  else if (residual && residual == out)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "'out' must not alias 'residual'");
  if (st == PTRAIN_OK)
    st = ptrain::runtime::checkCollectiveFingerprint(__func__, comm, "compressed_all_reduce", cont->layout.numel,
                                                     codec->value_dtype, codec->kind);
  if (st == PTRAIN_OK) {
    cont->residual = residual;
    cont->state = state;
    cont->out = out;
    cont->op = op;
    st = cont->start(__func__, input, *req);
  }
  return posted(st, comm, req, out_request);
}

extern "C" ptrain_status_t ptrain_compressed_reduce_scatter_start(ptrain_comm_t comm, const ptrain_codec_t *codec,
                                                                  const float *input, float *residual, float *out,
                                                                  ptrain_reduce_op_t op,
                                                                  ptrain_request_t *out_request) {
  CompressedReduceScatter *cont = nullptr;
  ptrain_request *req = nullptr;
  PTRAIN_RETURN_IF_ERROR(prepare(__func__, comm, codec, out_request, cont, req));
  ptrain_status_t st = PTRAIN_OK;
  if (!input || !out)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "'input' and 'out' must not be null");
  else if (codec->kind != PTRAIN_CODEC_QUANT)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
              "the compressed reduce-scatter runs quantization (kind %d); got codec kind %d", PTRAIN_CODEC_QUANT,
              codec->kind);
  else if (op != PTRAIN_REDUCE_SUM && op != PTRAIN_REDUCE_AVG)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "unsupported reduction %d (sum = 0, avg = 1)", op);
  if (st == PTRAIN_OK)
    st = ptrain::runtime::checkCollectiveFingerprint(__func__, comm, "compressed_reduce_scatter", cont->layout.numel,
                                                     PTRAIN_DTYPE_F32, codec->kind);
  if (st == PTRAIN_OK) {
    cont->out = out;
    cont->op = op;
    st = cont->start(__func__, input, residual, *req);
  }
  return posted(st, comm, req, out_request);
}

namespace {
ptrain_status_t startCompressedP2P(const char *call, bool receive, ptrain_comm_t comm, const ptrain_codec_t *codec,
                                   const float *input, float *residual, void *state, float *out, int32_t peer,
                                   int32_t tag, ptrain_request_t *out_request) {
  CompressedP2P *cont = nullptr;
  ptrain_request *req = nullptr;
  PTRAIN_RETURN_IF_ERROR(prepare(call, comm, codec, out_request, cont, req));
  cont->receive = receive;
  cont->peer = peer;
  cont->tag = tag;
  cont->state = state;
  cont->out = out;
  req->peer = peer;
  req->tag = tag;
  const int64_t bytes = cont->layout.total;
  ptrain_status_t st = PTRAIN_OK;
  if (peer < 0 || peer >= comm->size)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "peer %d is not a rank of the communicator (size %d)", peer,
              comm->size);
  else if (tag < 0)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "tag must be >= 0, got %d", tag);
  else if (bytes > INT_MAX)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%lld code bytes exceed MPI's int count",
              static_cast<long long>(bytes));
  else if (receive ? !out : !input)
    st = fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'%s' must not be null", receive ? "out" : "input");
  else if (!(cont->code = zalloc(bytes)))
    st = fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "code buffer");
  if (st == PTRAIN_OK && !receive)
    st = ptrain_codec_encode(codec, input, residual, state, cont->code);
  if (st == PTRAIN_OK)
    st = receive ? ptrain::runtime::checkRecvFingerprint(call, comm, "compressed_recv", bytes, peer, tag)
                 : ptrain::runtime::postSendFingerprint(call, comm, "compressed_send", bytes, peer, tag, req);
  if (st == PTRAIN_OK) {
    int err = receive ? MPI_Irecv(cont->code, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm->mpi, &req->mpi)
                      : MPI_Isend(cont->code, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm->mpi, &req->mpi);
    if (err != MPI_SUCCESS)
      st = ptrain::runtime::failMpi(call, err, receive ? "MPI_Irecv" : "MPI_Isend");
    else if (!receive)
      ptrain::runtime::countSend(comm, peer, bytes);
  }
  if (st != PTRAIN_OK) {
    ptrain::runtime::deleteRequest(req);
    return st;
  }
  *out_request = req;
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t ptrain_compressed_send_start(ptrain_comm_t comm, const ptrain_codec_t *codec,
                                                        const float *input, float *residual, void *state, int32_t peer,
                                                        int32_t tag, ptrain_request_t *out_request) {
  return startCompressedP2P(__func__, false, comm, codec, input, residual, state, nullptr, peer, tag, out_request);
}

extern "C" ptrain_status_t ptrain_compressed_recv_start(ptrain_comm_t comm, const ptrain_codec_t *codec, void *state,
                                                        float *out, int32_t peer, int32_t tag,
                                                        ptrain_request_t *out_request) {
  return startCompressedP2P(__func__, true, comm, codec, nullptr, nullptr, state, out, peer, tag, out_request);
}
