//===- CpuIsaTest.cpp - The kernel paths give the same bits ---------------===//
//
// The GELU, softmax and cross-entropy kernels run on every ISA path this CPU
// supports (cpu/CpuIsa.h: baseline, avx2, avx512, and avx512bf16, which runs
// the avx512 clones; all four on a machine with AVX512-BF16) and give the bits
// of the baseline path, on inputs with vector tails, masked rows, saturating
// exponentials and ignored targets. A path the CPU lacks, an unknown name and
// a bad PTRAIN_CPU_ISA are errors.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace ptrain::testing;

namespace {

const char *const kPaths[] = {"baseline", "avx2", "avx512", "avx512bf16"};

/// Whether this CPU runs `path`, asked independently of the runtime (the test's expectation).
bool cpuRuns(const std::string &path) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (path == "avx2")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (path == "avx512" || path == "avx512bf16")
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
           (path == "avx512" || __builtin_cpu_supports("avx512bf16"));
#else
  if (path != "baseline")
    return false;
#endif
  return true;
}

/// Every kernel with a per-ISA body, on inputs that reach each code path; the outputs' bits, concatenated.
std::string runKernels() {
  std::string bits;
  auto append = [&](const std::vector<float> &v) {
    bits.append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
  };
  // GELU: 1000 values (not a multiple of any vector width), with far tails (erfc's clamp at z = 10) and +-0.
  constexpr int64_t kN = 1000;
  std::vector<float> x = randomFloats(kN, 7, -8.0f, 8.0f), dy = randomFloats(kN, 8), y(kN), dx(kN);
  x[0] = -30.0f, x[1] = 30.0f, x[2] = 0.0f, x[3] = -0.0f, x[4] = 1e-30f;
  EXPECT_EQ(ptrain_gelu_fwd_f32(x.data(), kN, y.data()), PTRAIN_OK) << ptrain_last_error();
  EXPECT_EQ(ptrain_gelu_bwd_f32(dy.data(), x.data(), kN, dx.data()), PTRAIN_OK) << ptrain_last_error();
  append(y);
  append(dx);
  // Softmax: 4-row groups and single rows (rows 9, cols 37), causal [.., 37, 37] and with logits 800 apart.
  for (int32_t causal : {0, 1}) {
    const int64_t cols = 37, rows = causal ? 2 * cols : 9;
    std::vector<float> s = randomFloats(rows * cols, 11 + causal, -20.0f, 20.0f), out(rows * cols);
    s[5] = 800.0f;
    EXPECT_EQ(ptrain_softmax_fwd_f32(s.data(), rows, cols, causal, out.data()), PTRAIN_OK) << ptrain_last_error();
    append(out);
  }
  // Cross-entropy: 7 rows (one group of 4 and 3), vocabulary 130 (two 64-chunks and a tail), an ignored target,
  // unweighted and weighted with sum reduction.
  constexpr int64_t kRows = 7, kV = 130;
  std::vector<float> logits = randomFloats(kRows * kV, 13, -12.0f, 12.0f), weights = randomFloats(kV, 14, 0.1f, 2.0f);
  logits[3] = -900.0f;
  const int32_t targets[kRows] = {0, 129, 64, -1, 5, 77, 128};
  std::vector<float> loss(2), lse(kRows), dlogits(kRows * kV);
  EXPECT_EQ(ptrain_cross_entropy_fwd_f32(logits.data(), targets, kRows, kV, &loss[0], lse.data()), PTRAIN_OK);
  append(lse);
  EXPECT_EQ(ptrain_cross_entropy_bwd_f32(0.5f, logits.data(), targets, lse.data(), kRows, kV, dlogits.data()),
            PTRAIN_OK);
  append(dlogits);
  EXPECT_EQ(ptrain_cross_entropy_weighted_fwd_f32(logits.data(), targets, weights.data(), kRows, kV, 1, -1, 1,
                                                  &loss[1], lse.data()),
            PTRAIN_OK);
  append(lse);
  EXPECT_EQ(ptrain_cross_entropy_weighted_bwd_f32(1.0f, logits.data(), targets, weights.data(), lse.data(), kRows,
                                                  kV, 1, -1, 1, dlogits.data()),
            PTRAIN_OK);
  append(dlogits);
  append(loss);
  return bits;
}

TEST(CpuIsa, EverySupportedPathGivesTheBaselineBits) {
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa("baseline"));
  const std::string baseline = runKernels();
  std::string ran = "baseline";
  for (const char *path : kPaths) {
    if (!cpuRuns(path)) {
      EXPECT_EQ(ptrain_cpu_set_isa(path), PTRAIN_ERROR_INVALID_ARGUMENT) << path;
      EXPECT_NE(std::strstr(ptrain_last_error(), "this CPU does not run that kernel path"), nullptr)
          << ptrain_last_error();
      continue;
    }
    ASSERT_PTRAIN_OK(ptrain_cpu_set_isa(path));
    const char *active = nullptr;
    ASSERT_PTRAIN_OK(ptrain_cpu_isa(&active));
    EXPECT_STREQ(active, path);
    EXPECT_TRUE(runKernels() == baseline) << "the " << path << " path's outputs differ from the baseline's bits";
    if (std::strcmp(path, "baseline") != 0)
      ran += std::string(", ") + path;
  }
  std::printf("kernel paths compared bit for bit: %s\n", ran.c_str());
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa(nullptr));
}

TEST(CpuIsa, UnknownNameIsAnErrorAndKeepsThePath) {
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa("baseline"));
  EXPECT_EQ(ptrain_cpu_set_isa("avx1024"), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "ptrain_cpu_set_isa: name = 'avx1024' is not a kernel path: use "
                                             "baseline, avx2, avx512, avx512bf16 or auto"),
            nullptr)
      << ptrain_last_error();
  const char *active = nullptr;
  ASSERT_PTRAIN_OK(ptrain_cpu_isa(&active));
  EXPECT_STREQ(active, "baseline");
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa(nullptr));
}

/// In a fresh process: PTRAIN_CPU_ISA = 'sse9', then the first kernel calls; exits 0 when both fail with the
/// message, printing the last.
[[noreturn]] void kernelCallsWithBadEnvironment() {
  setenv("PTRAIN_CPU_ISA", "sse9", 1);
  float x = 1.0f;
  float y = 0.0f;
  const bool gelu = ptrain_gelu_fwd_f32(&x, 1, &y) == PTRAIN_ERROR_INVALID_ARGUMENT &&
                    std::strstr(ptrain_last_error(), "ptrain_gelu_fwd_f32: PTRAIN_CPU_ISA = 'sse9' is not a kernel "
                                                     "path") != nullptr;
  const bool softmax = ptrain_softmax_fwd_f32(&x, 1, 1, 0, &y) == PTRAIN_ERROR_INVALID_ARGUMENT;
  std::fprintf(stderr, "%s\n", ptrain_last_error());
  std::exit(gelu && softmax ? 0 : 1);
}

/// In a fresh process: PTRAIN_CPU_ISA = path; exits 0 when ptrain_cpu_isa reports it.
[[noreturn]] void forcedByEnvironment(const char *path) {
  setenv("PTRAIN_CPU_ISA", path, 1);
  const char *active = nullptr;
  const bool ok = ptrain_cpu_isa(&active) == PTRAIN_OK && std::strcmp(active, path) == 0;
  std::fprintf(stderr, "active path %s\n", active ? active : "(error)");
  std::exit(ok ? 0 : 1);
}

// PTRAIN_CPU_ISA is read once per process: each case runs in a fresh child (the threadsafe death-test style
// re-executes the test binary), sets it and makes the first kernel call.
TEST(CpuIsaDeathTest, BadEnvironmentIsAnErrorOfEveryKernelCall) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(kernelCallsWithBadEnvironment(), ::testing::ExitedWithCode(0),
              "ptrain_softmax_fwd_f32: PTRAIN_CPU_ISA = 'sse9' is not a kernel path");
}

TEST(CpuIsaDeathTest, EnvironmentForcesThePath) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const char *path : kPaths) {
    if (!cpuRuns(path))
      continue;
    EXPECT_EXIT(forcedByEnvironment(path), ::testing::ExitedWithCode(0), std::string("active path ") + path);
  }
}

} // namespace
