//===- CudaTest.h - Shared helpers of the CUDA runtime tests ----*- C++ -*-===//
//
// Device buffers filled from and read back into std::vector, seeded random
// inputs, bit-level comparisons, and the main function of the GPU test
// binaries: without a usable device (any CUDA error, e.g. cudaErrorInsufficientDriver without a
// driver, or zero devices) it prints why and exits 77, CTest's
// SKIP_RETURN_CODE.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_UNITTESTS_RUNTIME_CUDA_CUDATEST_H
#define PTRAIN_UNITTESTS_RUNTIME_CUDA_CUDATEST_H

#include "ptrain/Runtime/ptrain_runtime_cuda.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace ptrain::testing {

constexpr int kSkipReturnCode = 77;

/// Empty when a device is usable, else why not.
inline std::string noDeviceReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  if (count < 1)
    return "cudaGetDeviceCount: zero devices";
  return "";
}

/// A device array of T with host round trips (ASSERTs on CUDA errors).
template <typename T> class DeviceArray {
public:
  explicit DeviceArray(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void **>(&ptr_), (n ? n : 1) * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemset(ptr_, 0xCD, (n ? n : 1) * sizeof(T)), cudaSuccess);
  }
  explicit DeviceArray(const std::vector<T> &host) : DeviceArray(host.size()) { upload(host); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  ~DeviceArray() { cudaFree(ptr_); }
  void upload(const std::vector<T> &host) {
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  /// Waits for the device, then copies back.
  std::vector<T> download() const {
    std::vector<T> host(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  T *get() const { return ptr_; }
  size_t size() const { return n_; }

private:
  T *ptr_ = nullptr;
  size_t n_;
};

/// n normal(0, scale) floats from seed (the same on every run).
inline std::vector<float> randomValues(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// Bit-equal float arrays (any NaN equals any NaN).
inline void expectSameBits(const std::vector<float> &cpu, const std::vector<float> &gpu, const char *what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  int64_t shown = 0;
  for (size_t i = 0; i < cpu.size() && shown < 5; ++i) {
    const bool same = (cpu[i] != cpu[i] && gpu[i] != gpu[i]) || bitsOf(cpu[i]) == bitsOf(gpu[i]);
    if (!same) {
      ADD_FAILURE() << what << "[" << i << "]: cpu " << cpu[i] << " (0x" << std::hex << bitsOf(cpu[i]) << "), gpu "
                    << gpu[i] << " (0x" << bitsOf(gpu[i]) << std::dec << ")";
      ++shown;
    }
  }
}

template <typename T> void expectEqualArrays(const std::vector<T> &cpu, const std::vector<T> &gpu, const char *what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  int64_t shown = 0;
  for (size_t i = 0; i < cpu.size() && shown < 5; ++i)
    if (cpu[i] != gpu[i]) {
      ADD_FAILURE() << what << "[" << i << "]: cpu " << +cpu[i] << ", gpu " << +gpu[i];
      ++shown;
    }
}

} // namespace ptrain_testing

/// main() of a GPU test binary: exit 77 (skipped) without a usable device.
#define PTRAIN_CUDA_TEST_MAIN()                                                                                        \
  int main(int argc, char **argv) {                                                                                    \
    const std::string reason = ptrain::testing::noDeviceReason();                                                      \
    if (!reason.empty()) {                                                                                             \
      std::printf("SKIPPED: no usable CUDA device (%s)\n", reason.c_str());                                            \
      return ptrain::testing::kSkipReturnCode;                                                                         \
    }                                                                                                                  \
    ::testing::InitGoogleTest(&argc, argv);                                                                            \
    return RUN_ALL_TESTS();                                                                                            \
  }

#endif // PTRAIN_UNITTESTS_RUNTIME_CUDA_CUDATEST_H
