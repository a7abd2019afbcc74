//===- CollectiveMPITest.cpp - Collectives and compressed collectives -----===//
//
// Runs under `mpirun -np N` (N = 4 and 8 in CTest) with a generous
// PTRAIN_COMM_TIMEOUT_S (30); the deadline test sets 2 s on its own
// communicator. Every rank builds every rank's input from its rank
// number, so each checks the collective's result against a reference it
// computes alone: bit for bit where the order of the sums is fixed (the
// gathered codecs and the cast all-reduce sum in rank order), with integer-
// valued data where MPI chooses the order, and with a stated tolerance for
// PowerSGD's GEMMs.
//
//===----------------------------------------------------------------------===//

#include "MPITest.h"
#include "PowerSGDReference.h"
#include "cpu/codecs/Cast.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace ptrain::testing;

/// Rank r's input of n elements (seeded by r; values in [-1, 1)).
std::vector<float> inputOf(int32_t r, int64_t n, unsigned salt = 0) { return randomFloats(n, 1000 + 17 * r + salt); }

void waitOk(ptrain_request_t req) { ASSERT_PTRAIN_OK(ptrain_wait(req)); }

TEST(Collective, AllGatherAndReduceScatter) {
  const int64_t n = 37;
  std::vector<int64_t> mine(n), all(n * size, -1);
  for (int64_t i = 0; i < n; ++i)
    mine[i] = rank * 1000 + i;
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_all_gather_start(world, mine.data(), all.data(), n, PTRAIN_DTYPE_I64, &req));
  waitOk(req);
  for (int32_t r = 0; r < size; ++r)
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(all[r * n + i], r * 1000 + i);
  // Reduce-scatter: rank r gets the sum over ranks of block r; integers, so
  // exact in any order.
  std::vector<float> send(n * size), recv(n, -1.0f);
  for (int64_t i = 0; i < n * size; ++i)
    send[i] = static_cast<float>(rank + i);
  for (ptrain_reduce_op_t op : {PTRAIN_REDUCE_SUM, PTRAIN_REDUCE_AVG}) {
    ASSERT_PTRAIN_OK(ptrain_reduce_scatter_start(world, send.data(), recv.data(), n, PTRAIN_DTYPE_F32, op, &req));
    waitOk(req);
    for (int64_t i = 0; i < n; ++i) {
      const double sum = size * (size - 1) / 2.0 + static_cast<double>(size) * (rank * n + i);
      ASSERT_EQ(recv[i], static_cast<float>(op == PTRAIN_REDUCE_SUM ? sum : sum / size)) << i;
    }
  }
}

TEST(Collective, SixteenBitAllReducesAddInFp32) {
  // Each pair is added in fp32 and rounded once: small integers stay exact.
  for (ptrain_dtype_t dtype : {PTRAIN_DTYPE_F16, PTRAIN_DTYPE_BF16}) {
    const int64_t n = 10;
    std::vector<uint16_t> buf(n);
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(rank + i);
      buf[i] = dtype == PTRAIN_DTYPE_F16 ? ptrain::runtime::floatToHalf(v) : ptrain::runtime::floatToBf16(v);
    }
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(ptrain_all_reduce_start(world, buf.data(), buf.data(), n, dtype, PTRAIN_REDUCE_SUM, &req));
    waitOk(req);
    for (int64_t i = 0; i < n; ++i) {
      const float got =
          dtype == PTRAIN_DTYPE_F16 ? ptrain::runtime::halfToFloat(buf[i]) : ptrain::runtime::bf16ToFloat(buf[i]);
      ASSERT_EQ(got, static_cast<float>(size * (size - 1) / 2 + size * i)) << i;
    }
  }
}

/// The definition of ptrain_all_reduce_half_start: the ranks' values widened, added in fp32 in rank order,
/// rounded once.
template <ptrain_dtype_t Dtype> uint16_t halfSumInRankOrder(const std::vector<std::vector<uint16_t>> &all, int64_t i) {
  using H = ptrain::runtime::Half16<Dtype>;
  float sum = H::decode(all[0][i]);
  for (size_t r = 1; r < all.size(); ++r)
    sum += H::decode(all[r][i]);
  return H::encode(sum);
}

TEST(Collective, HalfAllReduceSumsInFp32InRankOrderAndRoundsOnce) {
  // 1001 elements: not a multiple of 4 or 8 ranks (the last chunk is padded). Random values of mixed magnitude,
  // so that rounding 16-bit partial sums (ptrain_all_reduce_start's pairwise MPI_Op) would differ somewhere.
  const int64_t n = 1001;
  for (ptrain_dtype_t dtype : {PTRAIN_DTYPE_BF16, PTRAIN_DTYPE_F16}) {
    std::vector<std::vector<uint16_t>> all(size, std::vector<uint16_t>(n));
    for (int32_t r = 0; r < size; ++r) {
      std::vector<float> x = inputOf(r, n, 7);
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i] * (i % 3 == 0 ? 1.0f : i % 3 == 1 ? 1.0f / 256 : 64.0f);
        all[r][i] = dtype == PTRAIN_DTYPE_F16 ? ptrain::runtime::floatToHalf(v) : ptrain::runtime::floatToBf16(v);
      }
    }
    std::vector<uint16_t> out(n, 0xFFFF), inPlace = all[rank];
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(ptrain_all_reduce_half_start(world, all[rank].data(), out.data(), n, dtype, &req));
    waitOk(req);
    ASSERT_PTRAIN_OK(ptrain_all_reduce_half_start(world, inPlace.data(), inPlace.data(), n, dtype, &req));
    waitOk(req);
    int64_t pairwiseDiffers = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t want = dtype == PTRAIN_DTYPE_F16 ? halfSumInRankOrder<PTRAIN_DTYPE_F16>(all, i)
                                                      : halfSumInRankOrder<PTRAIN_DTYPE_BF16>(all, i);
      ASSERT_EQ(out[i], want) << "dtype " << dtype << ", element " << i;
      ASSERT_EQ(inPlace[i], want) << "in place: dtype " << dtype << ", element " << i;
      // The same values with a 16-bit partial sum after every add.
      using B = ptrain::runtime::Half16<PTRAIN_DTYPE_BF16>;
      using F = ptrain::runtime::Half16<PTRAIN_DTYPE_F16>;
      uint16_t partial = all[0][i];
      for (int32_t r = 1; r < size; ++r)
        partial = dtype == PTRAIN_DTYPE_F16 ? F::encode(F::decode(partial) + F::decode(all[r][i]))
                                            : B::encode(B::decode(partial) + B::decode(all[r][i]));
      pairwiseDiffers += partial != want;
    }
    if (size > 2) { // with two ranks one add is one rounding either way
      EXPECT_GT(pairwiseDiffers, 0) << "the data should tell the fp32 sum from 16-bit partial sums";
    }
  }
}

TEST(Collective, HalfAllReduceRefusesAnotherDtypeByName) {
  std::vector<float> x(4);
  ptrain_request_t req = nullptr;
  EXPECT_EQ(ptrain_all_reduce_half_start(world, x.data(), x.data(), 4, PTRAIN_DTYPE_F32, &req),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(req, nullptr);
  EXPECT_NE(std::string(ptrain_last_error()).find("dtype must be bf16 (4) or f16 (3)"), std::string::npos)
      << ptrain_last_error();
}

TEST(Collective, SendRecvAroundTheRing) {
  const int64_t n = 100;
  std::vector<float> mine = inputOf(rank, n), got(n);
  const int32_t next = (rank + 1) % size, prev = (rank + size - 1) % size;
  ptrain_request_t send, recv;
  ASSERT_PTRAIN_OK(ptrain_recv_start(world, got.data(), n * 4, prev, 3, &recv));
  ASSERT_PTRAIN_OK(ptrain_send_start(world, mine.data(), n * 4, next, 3, &send));
  waitOk(send);
  waitOk(recv);
  EXPECT_EQ(got, inputOf(prev, n));
}

TEST(CompressedCollective, CastSumsFp16ValuesNear6e4ExactlyInFp32) {
  // 60000 + 32 r is an fp16 value; N of them overflow fp16 but not fp32.
  const int64_t n = 5;
  std::vector<float> g(n), out(n);
  for (int64_t i = 0; i < n; ++i)
    g[i] = 60000.0f + 32.0f * rank - 64.0f * i;
  for (ptrain_reduce_op_t op : {PTRAIN_REDUCE_SUM, PTRAIN_REDUCE_AVG}) {
    ptrain_codec_t c = codecOf(PTRAIN_CODEC_CAST, 1, n);
    c.cast_dtype = PTRAIN_DTYPE_F16;
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(world, &c, g.data(), nullptr, nullptr, out.data(), op, &req));
    waitOk(req);
    for (int64_t i = 0; i < n; ++i) {
      const float sum = 60000.0f * size + 32.0f * (size * (size - 1) / 2) - 64.0f * i * size;
      ASSERT_EQ(out[i], op == PTRAIN_REDUCE_SUM ? sum : sum * (1.0f / size)) << i;
    }
  }
}

TEST(CompressedCollective, CastWithErrorFeedbackKeepsEachRanksRoundingError) {
  const int64_t n = 1001; // not a multiple of the rank count
  std::vector<float> e(n, 0.0f), out(n);
  ptrain_codec_t c = codecOf(PTRAIN_CODEC_CAST, 7, 143);
  c.cast_dtype = PTRAIN_DTYPE_BF16;
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(world, &c, inputOf(rank, n).data(), e.data(), nullptr, out.data(),
                                                      PTRAIN_REDUCE_SUM, &req));
  waitOk(req);
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (int32_t r = 0; r < size; ++r)
      sum += ptrain::runtime::bf16ToFloat(ptrain::runtime::floatToBf16(inputOf(r, n)[i]));
    ASSERT_EQ(out[i], sum) << i;
    const float mine = inputOf(rank, n)[i];
    ASSERT_EQ(e[i], mine - ptrain::runtime::bf16ToFloat(ptrain::runtime::floatToBf16(mine))) << i;
  }
}

TEST(CompressedCollective, QuantizedAllGatherOf1000ElementsInBlocksOf64) {
  const int64_t n = 1000;
  ptrain_codec_t c = codecOf(PTRAIN_CODEC_QUANT, 1, n);
  c.bits = 4;
  c.granularity = PTRAIN_QUANT_BLOCK;
  c.block_size = 64;
  c.symmetric = 1;
  std::vector<float> out(n);
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(world, &c, inputOf(rank, n).data(), nullptr, nullptr, out.data(),
                                                      PTRAIN_REDUCE_SUM, &req));
  waitOk(req);
  // Reference: decode(encode(g_r)) summed in rank order, and within the
  // quantization error of the exact sum.
  std::vector<float> want(n, 0.0f), exact(n, 0.0f), bound(n, 0.0f), dec(n);
  const int64_t blocks = (n + 63) / 64;
  std::vector<uint8_t> packed(n / 2);
  std::vector<float> scales(blocks);
  for (int32_t r = 0; r < size; ++r) {
    const std::vector<float> g = inputOf(r, n);
    ASSERT_PTRAIN_OK(ptrain_quant_encode_f32(g.data(), nullptr, 1, n, 4, PTRAIN_QUANT_BLOCK, 64, 1, packed.data(),
                                             scales.data(), nullptr));
    ASSERT_PTRAIN_OK(
        ptrain_quant_decode_f32(packed.data(), scales.data(), nullptr, 1, n, 4, PTRAIN_QUANT_BLOCK, 64, 1, dec.data()));
    for (int64_t i = 0; i < n; ++i) {
      want[i] += dec[i];
      exact[i] += g[i];
      bound[i] += scales[i / 64] * 0.5f;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], want[i]) << i;
    ASSERT_LE(std::fabs(out[i] - exact[i]), bound[i] * 1.0001f + 1e-6f) << i;
  }
}

TEST(CompressedCollective, TopKGathersAndScatterAdds) {
  const int64_t n = 500, k = 20;
  ptrain_codec_t c = codecOf(PTRAIN_CODEC_TOPK, 20, 25);
  c.k = k;
  std::vector<float> e(n, 0.0f), out(n);
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(world, &c, inputOf(rank, n).data(), e.data(), nullptr, out.data(),
                                                      PTRAIN_REDUCE_AVG, &req));
  waitOk(req);
  std::vector<float> want(n, 0.0f), values(k);
  std::vector<int32_t> idx(k);
  for (int32_t r = 0; r < size; ++r) {
    ASSERT_PTRAIN_OK(ptrain_topk_encode_f32(inputOf(r, n).data(), nullptr, n, k, values.data(), idx.data()));
    for (int64_t j = 0; j < k; ++j)
      want[idx[j]] += values[j];
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], want[i] * (1.0f / size)) << i;
    kept += e[i] == 0.0f;
  }
  EXPECT_EQ(kept, k); // the residual keeps all but this rank's k values
}

TEST(CompressedCollective, RandKReducesTheSharedPositions) {
  const int64_t n = 300, k = 30;
  ptrain_codec_t c = codecOf(PTRAIN_CODEC_RANDK, 1, n);
  c.k = k;
  c.seed = 77;
  std::vector<float> g(n), out(n);
  for (int64_t i = 0; i < n; ++i)
    g[i] = static_cast<float>(rank * n + i); // integers: any order is exact
  int64_t counter = 5;
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(
      ptrain_compressed_all_reduce_start(world, &c, g.data(), nullptr, &counter, out.data(), PTRAIN_REDUCE_SUM, &req));
  waitOk(req);
  EXPECT_EQ(counter, 6);
  std::vector<int32_t> idx(k);
  ASSERT_PTRAIN_OK(ptrain_randk_indices(77, 5, n, k, idx.data()));
  std::vector<float> want(n, 0.0f);
  for (int32_t j : idx)
    want[j] = static_cast<float>(size * (size - 1) / 2 * n + size * j);
  EXPECT_EQ(out, want);
}

/// Rank r's code of a sparse codec `c` (with 16-bit values) on its input: the values widened and their positions.
void halfCode(const ptrain_codec_t &c, int32_t r, int64_t n, int64_t counter, std::vector<float> &values,
              std::vector<int32_t> &positions) {
  int64_t bytes = 0;
  ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
  std::vector<char> code(bytes);
  int64_t at = counter;
  ASSERT_PTRAIN_OK(ptrain_codec_encode(&c, inputOf(r, n).data(), nullptr, &at, code.data()));
  values.resize(c.k);
  positions.resize(c.k);
  const auto *v = reinterpret_cast<const uint16_t *>(code.data());
  for (int64_t j = 0; j < c.k; ++j)
    values[j] = c.value_dtype == PTRAIN_DTYPE_F16 ? ptrain::runtime::halfToFloat(v[j]) : ptrain::runtime::bf16ToFloat(v[j]);
  if (c.kind == PTRAIN_CODEC_TOPK)
    std::memcpy(positions.data(), code.data() + (bytes - (c.k * 4 + 7) / 8 * 8), c.k * 4);
  else
    ASSERT_PTRAIN_OK(ptrain_randk_indices(c.seed, counter, n, c.k, positions.data()));
}

// A 16-bit TP site's top-k and rand-k (value_dtype bf16 / f16): every rank hands MPI its code with 2-byte values,
// and the result is the rank-order fp32 sum of every rank's widened values, bit for bit, on every rank.
TEST(CompressedCollective, SparseCodecsWithHalfValuesGatherTwoByteValuesAndSumInFp32) {
  const int64_t n = 500, k = 21;
  for (ptrain_dtype_t dtype : {PTRAIN_DTYPE_BF16, PTRAIN_DTYPE_F16})
    for (ptrain_codec_kind_t kind : {PTRAIN_CODEC_TOPK, PTRAIN_CODEC_RANDK}) {
      ptrain_codec_t c = codecOf(kind, 20, 25);
      c.k = k;
      c.seed = 9;
      c.value_dtype = dtype;
      int64_t bytes = 0;
      ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
      EXPECT_EQ(bytes, kind == PTRAIN_CODEC_TOPK ? 48 + 88 : 48); // 21 2-byte values (and int32 indices), padded to 8
      int64_t before = 0, after = 0, ops = 0;
      ASSERT_PTRAIN_OK(ptrain_comm_collective_traffic(world, &before, &ops));
      std::vector<float> e(n, 0.0f), out(n);
      int64_t counter = 3;
      ptrain_request_t req;
      ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(world, &c, inputOf(rank, n).data(), e.data(), &counter,
                                                          out.data(), PTRAIN_REDUCE_AVG, &req));
      waitOk(req);
      ASSERT_PTRAIN_OK(ptrain_comm_collective_traffic(world, &after, &ops));
      EXPECT_EQ(after - before, bytes) << "the all-gather's send count";
      std::vector<float> want(n, 0.0f), wantValues(k, 0.0f), values;
      std::vector<int32_t> positions;
      for (int32_t r = 0; r < size; ++r) {
        halfCode(c, r, n, 3, values, positions);
        for (int64_t j = 0; j < k; ++j)
          if (kind == PTRAIN_CODEC_TOPK)
            want[positions[j]] += values[j];
          else
            wantValues[j] += values[j];
      }
      if (kind == PTRAIN_CODEC_RANDK)
        for (int64_t j = 0; j < k; ++j)
          want[positions[j]] = wantValues[j] * (1.0f / size);
      else
        for (float &w : want)
          w *= 1.0f / size;
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(out[i], want[i]) << "kind " << kind << " dtype " << dtype << " at " << i;
      // Error feedback: e' = g - widen(this rank's code), exactly (the rounding's loss included).
      halfCode(c, rank, n, 3, values, positions);
      std::vector<float> sent(n, 0.0f), g = inputOf(rank, n);
      for (int64_t j = 0; j < k; ++j)
        sent[positions[j]] = values[j];
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(e[i], g[i] - sent[i]) << "kind " << kind << " dtype " << dtype << " at " << i;
      if (kind == PTRAIN_CODEC_RANDK) {
        EXPECT_EQ(counter, 4);
      }
    }
}

TEST(CompressedCollective, PowerSGDReducesPThenQ) {
  const int64_t n = 24, m = 16, r = 2;
  ptrain_codec_t c = codecOf(PTRAIN_CODEC_POWERSGD, n, m);
  c.rank = r;
  c.warm_start = 1;
  std::vector<float> q0 = randomFloats(m * r, 5); // the same on every rank
  std::vector<float> qState = q0, e(n * m, 0.0f), out(n * m);
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(ptrain_compressed_all_reduce_start(world, &c, inputOf(rank, n * m).data(), e.data(), qState.data(),
                                                      out.data(), PTRAIN_REDUCE_AVG, &req));
  waitOk(req);
  // fp64 reference: P = sum_r M_r Q0, Gram-Schmidt, Q = sum_r M_r^T P,
  // out = P Q^T / N; e = M_me - P Q^T / N; the warm-start Q is Q / N.
  std::vector<double> sum(n * m, 0.0), p(n * r, 0.0), q(m * r, 0.0);
  for (int32_t k = 0; k < size; ++k) {
    const std::vector<float> g = inputOf(k, n * m);
    for (int64_t i = 0; i < n * m; ++i)
      sum[i] += g[i];
  }
  referencePowerStep(sum, q0, n, m, r, p, q);
  const std::vector<float> mine = inputOf(rank, n * m);
  const double tol = 1e-4 * size;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = 0; t < m; ++t) {
      double approx = 0;
      for (int64_t j = 0; j < r; ++j)
        approx += p[i * r + j] * q[t * r + j] / size;
      ASSERT_NEAR(out[i * m + t], approx, tol) << i << "," << t;
      ASSERT_NEAR(e[i * m + t], mine[i * m + t] - approx, tol) << i << "," << t;
    }
  for (int64_t i = 0; i < m * r; ++i)
    ASSERT_NEAR(qState[i], q[i] / size, tol) << i;
}

TEST(CompressedCollective, PowerSGDOnA1DTensorIsExact) {
  const int64_t n = 33;
  ptrain_codec_t c = codecOf(PTRAIN_CODEC_POWERSGD, 1, n);
  c.rank = 1;
  std::vector<float> g(n), e(n, 0.0f), out(n);
  for (int64_t i = 0; i < n; ++i)
    g[i] = static_cast<float>(rank - i);
  ptrain_request_t req;
  ASSERT_PTRAIN_OK(
      ptrain_compressed_all_reduce_start(world, &c, g.data(), e.data(), nullptr, out.data(), PTRAIN_REDUCE_SUM, &req));
  waitOk(req);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], static_cast<float>(size * (size - 1) / 2 - size * i)) << i;
    ASSERT_EQ(e[i], 0.0f);
  }
}

TEST(CompressedP2P, EveryCodecAroundTheRing) {
  // Rank r sends its input to r + 1; the receiver's decode equals the
  // sender's own encode + decode, bit for bit.
  const int32_t next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (ptrain_codec_kind_t kind :
       {PTRAIN_CODEC_POWERSGD, PTRAIN_CODEC_TOPK, PTRAIN_CODEC_RANDK, PTRAIN_CODEC_QUANT, PTRAIN_CODEC_CAST}) {
    ptrain_codec_t c = codecOf(kind, 16, 20);
    c.rank = 3;
    c.k = 40;
    c.bits = 2;
    c.granularity = PTRAIN_QUANT_CHANNEL;
    c.cast_dtype = PTRAIN_DTYPE_F16;
    c.seed = 11;
    const int64_t n = 320;
    std::vector<float> e(n, 0.0f), out(n), want(n);
    int64_t sendCounter = 0, recvCounter = 0;
    ptrain_request_t send, recv;
    ASSERT_PTRAIN_OK(ptrain_compressed_recv_start(world, &c, &recvCounter, out.data(), prev, 9, &recv));
    ASSERT_PTRAIN_OK(
        ptrain_compressed_send_start(world, &c, inputOf(rank, n).data(), e.data(), &sendCounter, next, 9, &send));
    waitOk(send);
    waitOk(recv);
    int64_t bytes = 0, counter = 0;
    ASSERT_PTRAIN_OK(ptrain_codec_code_bytes(&c, &bytes));
    std::vector<char> code(bytes);
    ASSERT_PTRAIN_OK(ptrain_codec_encode(&c, inputOf(prev, n).data(), nullptr, &counter, code.data()));
    counter = 0;
    ASSERT_PTRAIN_OK(ptrain_codec_decode(&c, code.data(), &counter, want.data()));
    ASSERT_EQ(out, want) << "codec " << kind;
  }
}

TEST(CompressedP2P, ACodeOfAnotherSizeIsAMismatch) {
  // Rank 0 sends a top-k code with k = 10, rank 1 expects k = 20.
  ptrain_codec_t c = codecOf(PTRAIN_CODEC_TOPK, 1, 100);
  std::vector<float> g = inputOf(rank, 100), out(100);
  ptrain_request_t req;
  if (rank == 0) {
    c.k = 10;
    ASSERT_PTRAIN_OK(ptrain_compressed_send_start(world, &c, g.data(), nullptr, nullptr, 1, 12, &req));
    waitOk(req);
  } else if (rank == 1) {
    c.k = 20;
    ASSERT_PTRAIN_OK(ptrain_compressed_recv_start(world, &c, nullptr, out.data(), 0, 12, &req));
    EXPECT_EQ(ptrain_wait(req), PTRAIN_ERROR_MISMATCH);
    const std::string message = ptrain_last_error();
    EXPECT_NE(message.find("compressed recv from peer 0"), std::string::npos) << message;
    EXPECT_NE(message.find("received 80 bytes, expected 160"), std::string::npos) << message;
  }
  patientBarrier();
}

TEST(CompressedCollective, AMissingRankIsADeadlineErrorNamingTheOperation) {
  ptrain_comm_t copy = copyOfWorld();
  ASSERT_NE(copy, nullptr);
  ASSERT_PTRAIN_OK(ptrain_comm_set_timeout(copy, 2.0));
  ptrain_codec_t c = codecOf(PTRAIN_CODEC_POWERSGD, 8, 8);
  c.rank = 2;
  std::vector<float> g = inputOf(rank, 64), out(64);
  if (rank != 0) {
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(
        ptrain_compressed_all_reduce_start(copy, &c, g.data(), nullptr, nullptr, out.data(), PTRAIN_REDUCE_SUM, &req));
    expectDeadline(req, {"compressed_all_reduce (sum, powersgd rank 2 on 1x8x8", "phase: all-reduce of P",
                         "did not complete within 2 s", "broken"});
  }
  patientBarrier();
  if (rank == 0) {
    // Late, it completes the all-reduce of P (8 x 2 floats) the others left
    // posted, so that the communicator can be freed.
    std::vector<float> p(16, 0.0f);
    ptrain_request_t req;
    ASSERT_PTRAIN_OK(ptrain_comm_set_timeout(copy, 30.0));
    ASSERT_PTRAIN_OK(ptrain_all_reduce_start(copy, p.data(), p.data(), 16, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &req));
    waitOk(req);
  }
  // The others' orphaned all-reduce progresses while they wait here; free
  // the communicator only after it has completed everywhere.
  patientBarrier();
  ASSERT_PTRAIN_OK(ptrain_comm_destroy(copy));
  patientBarrier();
}

} // namespace

PTRAIN_MPI_TEST_MAIN
