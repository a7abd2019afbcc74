//===- StridedKernelsTest.cpp - Row-wise kernels equal the element walk ---===//
//
// ptrain_binary_f32, ptrain_sum_to_f32 and ptrain_permute_f32 walk their
// operands row by row (cpu/StridedWalk.h); each must give, bit for bit, what
// the element-by-element definition gives: an odometer over the result in
// fp64 rounded once (binary), fp64 accumulators in the input's order
// (sum_to), a gather (permute). Shapes: broadcasts on every side, unit dims,
// mergeable and unmergeable dims, transposes with partial tiles.
// ptrain_gemm_f32 runs a batch that shares B as one GEMM, checked against the
// fp64 product.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

using namespace ptrain::testing;

namespace {

using Dims = std::vector<int64_t>;

int64_t count(const Dims &d) { return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>()); }

/// The offset in an operand of shape `dims` (aligned to the right of `out`,
/// broadcast on its 1s) of the result index `index`.
int64_t broadcastOffset(const Dims &dims, const Dims &out, const Dims &index) {
  int64_t offset = 0;
  const size_t lead = out.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d)
    offset = offset * dims[d] + (dims[d] == 1 ? 0 : index[lead + d]);
  return offset;
}

/// Advances a row-major index of `dims`; false after the last one.
bool next(Dims &index, const Dims &dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++index[d] < dims[d])
      return true;
    index[d] = 0;
  }
  return false;
}

double referenceOp(int32_t kind, double a, double b) {
  switch (kind) {
  case PTRAIN_BINARY_ADD:
    return a + b;
  case PTRAIN_BINARY_SUB:
    return a - b;
  case PTRAIN_BINARY_MUL:
    return a * b;
  case PTRAIN_BINARY_DIV:
    return a / b;
  case PTRAIN_BINARY_POW:
    return std::pow(a, b);
  case PTRAIN_BINARY_MAX:
    return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
  default:
    return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
  }
}

/// Values that exercise rounding: random mantissas over several binades,
/// a few zeros, a NaN, huge and tiny magnitudes.
std::vector<float> values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-30, 30);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = std::ldexp(mant(rng), exp(rng));
  if (n > 3) {
    v[1] = 0.0f;
    v[2] = NAN;
    v[3] = 3.0e38f;
  }
  return v;
}

bool sameBits(const std::vector<float> &x, const std::vector<float> &y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

struct BinaryCase {
  Dims a, b, out;
};

const BinaryCase kBinaryCases[] = {
    {{4, 64, 128}, {64, 128}, {4, 64, 128}},    // the GPT's position embedding
    {{384}, {4, 64, 384}, {4, 64, 384}},        // a bias (lhs)
    {{4, 4, 64, 64}, {}, {4, 4, 64, 64}},       // a scalar scale
    {{4, 4, 64, 64}, {64, 64}, {4, 4, 64, 64}}, // the causal mask
    {{2, 1, 3}, {4, 1}, {2, 4, 3}},             // both broadcast
    {{3, 1, 5, 1}, {1, 7, 1, 2}, {3, 7, 5, 2}}, // alternating
    {{1, 1, 6}, {6}, {1, 1, 6}},                // unit dims
    {{2, 3, 4, 5, 6}, {2, 3, 4, 5, 6}, {2, 3, 4, 5, 6}},
    {{5, 1}, {1, 1}, {5, 1}},
};

TEST(StridedKernels, BinaryEqualsTheElementWalkBitForBit) {
  unsigned seed = 1;
  for (const BinaryCase &c : kBinaryCases)
    for (int32_t kind = PTRAIN_BINARY_ADD; kind <= PTRAIN_BINARY_MIN; ++kind) {
      auto a = values(count(c.a), seed++), b = values(count(c.b), seed++);
      if (kind == PTRAIN_BINARY_POW)
        for (float &x : b)
          x = std::fmod(x, 4.0f);
      std::vector<float> got(count(c.out)), want(count(c.out));
      ASSERT_PTRAIN_OK(ptrain_binary_f32(kind, a.data(), c.a.size(), c.a.data(), b.data(), c.b.size(), c.b.data(),
                                         c.out.size(), c.out.data(), got.data()));
      Dims index(c.out.size(), 0);
      int64_t o = 0;
      do {
        want[o++] = static_cast<float>(
            referenceOp(kind, a[broadcastOffset(c.a, c.out, index)], b[broadcastOffset(c.b, c.out, index)]));
      } while (next(index, c.out));
      EXPECT_TRUE(sameBits(got, want)) << "kind " << kind << ", result rank " << c.out.size();
    }
}

TEST(StridedKernels, BinaryInPlaceOnEqualShapes) {
  const Dims d = {3, 8, 5};
  auto a = values(count(d), 7), b = values(count(d), 8), want = a;
  for (size_t i = 0; i < a.size(); ++i)
    want[i] = static_cast<float>(static_cast<double>(a[i]) * b[i]);
  ASSERT_PTRAIN_OK(
      ptrain_binary_f32(PTRAIN_BINARY_MUL, a.data(), 3, d.data(), b.data(), 3, d.data(), 3, d.data(), a.data()));
  EXPECT_TRUE(sameBits(a, want));
}

struct SumCase {
  Dims x, out;
};

TEST(StridedKernels, SumToEqualsFp64AccumulationInInputOrder) {
  const SumCase cases[] = {
      {{4, 64, 128}, {128}}, {{4, 64, 128}, {64, 128}}, {{4, 128, 384}, {128, 384}}, {{2, 3, 4}, {2, 1, 4}},
      {{2, 3, 4}, {3, 1}},   {{2, 3, 4}, {}},           {{5, 1, 6}, {1, 1, 6}},      {{3, 4, 5, 6}, {4, 1, 6}},
  };
  unsigned seed = 100;
  for (const SumCase &c : cases) {
    std::mt19937 rng(seed++);
    std::normal_distribution<float> normal;
    std::vector<float> x(count(c.x));
    for (float &v : x)
      v = normal(rng);
    std::vector<float> got(count(c.out));
    ASSERT_PTRAIN_OK(ptrain_sum_to_f32(x.data(), c.x.size(), c.x.data(), c.out.size(), c.out.data(), got.data()));
    std::vector<double> acc(count(c.out), 0.0);
    Dims index(c.x.size(), 0);
    int64_t i = 0;
    do {
      acc[broadcastOffset(c.out, c.x, index)] += x[i++];
    } while (next(index, c.x));
    std::vector<float> want(acc.begin(), acc.end());
    EXPECT_TRUE(sameBits(got, want)) << "input rank " << c.x.size() << ", result rank " << c.out.size();
  }
}

struct PermuteCase {
  Dims dims;
  std::vector<int32_t> perm;
};

TEST(StridedKernels, PermuteEqualsTheGather) {
  const PermuteCase cases[] = {
      {{384, 128}, {1, 0}},
      {{37, 21}, {1, 0}},
      {{4, 64, 512}, {0, 2, 1}},
      {{4, 64, 4, 32}, {0, 2, 1, 3}},
      {{4, 64, 4, 32}, {0, 2, 3, 1}},
      {{2, 3, 4, 5}, {3, 1, 0, 2}},
      {{2, 1, 3, 1}, {3, 2, 1, 0}},
      {{5, 7, 3}, {2, 0, 1}},
      {{6}, {0}},
      {{3, 17, 19}, {0, 2, 1}},
  };
  for (const PermuteCase &c : cases) {
    const int64_t rank = c.dims.size();
    std::vector<float> x(count(c.dims));
    std::iota(x.begin(), x.end(), 0.0f);
    Dims outDims(rank), inStride(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      inStride[d] = inStride[d + 1] * c.dims[d + 1];
    for (int64_t d = 0; d < rank; ++d)
      outDims[d] = c.dims[c.perm[d]];
    std::vector<float> got(x.size(), -1.0f), want(x.size());
    ASSERT_PTRAIN_OK(ptrain_permute_f32(x.data(), rank, c.dims.data(), c.perm.data(), got.data()));
    Dims index(rank, 0);
    int64_t o = 0;
    do {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d)
        src += index[d] * inStride[c.perm[d]];
      want[o++] = x[src];
    } while (next(index, outDims));
    EXPECT_TRUE(sameBits(got, want)) << "rank " << rank;
  }
}

TEST(StridedKernels, GemmSharedWeightBatchAsOneGemm) {
  // [4, 64, 128] activations times one [128, 384] weight, as the GPT's QKV
  // projection, also with the weight stored transposed: one GEMM of 256 rows,
  // whose rounding may differ from four of 64 rows (OpenBLAS's kernels block
  // M differently), within fp32 accumulation error of the fp64 product.
  const int64_t batch = 4, m = 64, n = 384, k = 128;
  auto a = randomFloats(batch * m * k, 11), b = randomFloats(k * n, 12);
  for (int tb = 0; tb <= 1; ++tb) {
    std::vector<float> got(batch * m * n, NAN);
    ASSERT_PTRAIN_OK(
        ptrain_gemm_f32(0, tb, batch, m, n, k, 1.0f, a.data(), m * k, b.data(), 0, 0.0f, got.data(), m * n));
    Vec want(batch * m * n, 0.0);
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0.0;
          for (int64_t l = 0; l < k; ++l)
            acc += static_cast<double>(a[(p * m + i) * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
          want[(p * m + i) * n + j] = acc;
        }
    expectClose(got, want, 1e-5, 1e-5, tb ? "C (B transposed)" : "C");
  }
}

} // namespace
