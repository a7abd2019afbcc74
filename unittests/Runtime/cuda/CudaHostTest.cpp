//===- CudaHostTest.cpp - The CUDA runtime's ABI, without a device --------===//
//
// What holds on any machine, GPU or not (these run in CI without one): every
// entry of RuntimeCallsCuda.def is exported with C linkage; argument errors
// are reported before any CUDA call, naming the bad argument; the device
// count agrees with the CUDA runtime and, without a driver, is a DEVICE error
// naming cudaGetDeviceCount instead of a crash; the shared error buffer.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/ptrain_runtime_cuda.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace {

bool lastErrorHas(const char *text) { return std::string(ptrain_last_error()).find(text) != std::string::npos; }

TEST(CudaCallTable, EveryEntryIsExportedWithCLinkage) {
  const char *names[] = {
#define PTRAIN_RUNTIME_CALL(name, ret, params) #name,
#include "ptrain/Runtime/RuntimeCallsCuda.def"
  };
  EXPECT_GE(sizeof(names) / sizeof(names[0]), 26u);
  for (const char *name : names) {
    EXPECT_NE(dlsym(RTLD_DEFAULT, name), nullptr) << name << " is not exported: " << dlerror();
    EXPECT_EQ(std::string(name).rfind("ptrain_", 0), 0u) << name;
  }
}

TEST(CudaErrors, DeviceStatusHasAName) {
  EXPECT_STREQ(ptrain_status_string(PTRAIN_ERROR_DEVICE), "PTRAIN_ERROR_DEVICE");
  EXPECT_EQ(ptrain_record_error(PTRAIN_ERROR_DEVICE, "some_call", "what failed"), PTRAIN_ERROR_DEVICE);
  EXPECT_STREQ(ptrain_last_error(), "some_call: what failed");
}

TEST(CudaErrors, DeviceCountAgreesWithTheCudaRuntime) {
  int expected = 0;
  const cudaError_t err = cudaGetDeviceCount(&expected);
  int32_t count = -1;
  const ptrain_status_t st = ptrain_cuda_device_count(&count);
  if (err == cudaSuccess) {
    EXPECT_EQ(st, PTRAIN_OK);
    EXPECT_EQ(count, expected);
  } else {
    EXPECT_EQ(st, PTRAIN_ERROR_DEVICE);
    EXPECT_TRUE(lastErrorHas("ptrain_cuda_device_count: cudaGetDeviceCount")) << ptrain_last_error();
    EXPECT_TRUE(lastErrorHas(cudaGetErrorName(err))) << ptrain_last_error();
  }
  EXPECT_EQ(ptrain_cuda_device_count(nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
}

// Argument checks come before any device work: the pointers below are never
// dereferenced.
float dummy[16];
uint16_t dummyCode[16];
uint8_t dummyBytes[16];
int32_t dummyIdx[16];

TEST(CudaArguments, CodecsRejectBadArgumentsByName) {
  EXPECT_EQ(ptrain_cuda_cast_encode_f32(dummy, nullptr, 4, PTRAIN_DTYPE_I64, dummyCode), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_cast_encode_f32: dtype must be f16 (3) or bf16 (4), got 2"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_cast_decode_f32(nullptr, 4, PTRAIN_DTYPE_F16, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'code' must not be null")) << ptrain_last_error();
  EXPECT_EQ(
      ptrain_cuda_quant_encode_f32(dummy, nullptr, 2, 8, 3, PTRAIN_QUANT_TENSOR, 0, 1, dummyBytes, dummy, nullptr),
      PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("bits must be 2, 4 or 8, got 3")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_quant_encode_f32(dummy, nullptr, 2, 8, 8, PTRAIN_QUANT_BLOCK, 0, 1, dummyBytes, dummy, nullptr),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("block_size must be >= 1 exactly for block granularity")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_quant_decode_f32(dummyBytes, dummy, nullptr, 2, 8, 8, PTRAIN_QUANT_TENSOR, 0, 0, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'zero_points' must not be null when asymmetric")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_topk_encode_f32(dummy, nullptr, 8, 9, dummy, dummyIdx), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("k must be in [1, n = 8], got 9")) << ptrain_last_error();
  int64_t counter = 0;
  EXPECT_EQ(ptrain_cuda_randk_encode_f32(dummy, nullptr, 8, 0, 1, &counter, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_randk_encode_f32: k must be in [1, n = 8], got 0")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_randk_decode_f32(dummy, 8, 2, 1, nullptr, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'counter' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_powersgd_encode_f32(dummy, nullptr, nullptr, 1, 4, 3, 4, 1, dummy, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("rank 4 must be in [1, min(n, m) = 3] for the 4 x 3 matrix")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_powersgd_decode_f32(dummy, dummy, 0, 4, 3, 1, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("batch, n and m must be >= 1")) << ptrain_last_error();
}

TEST(CudaArguments, ModelKernelsRejectBadArgumentsByName) {
  const int64_t dims2[2] = {2, 3}, dims3[2] = {3, 3}, offsets[2] = {1, 1}, sliceDims[2] = {1, 3};
  const int32_t badPerm[2] = {0, 0};
  EXPECT_EQ(ptrain_cuda_binary_f32(9, dummy, 2, dims2, dummy, 2, dims2, 2, dims2, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_binary_f32: unknown binary kind 9")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_binary_f32(PTRAIN_BINARY_ADD, dummy, 2, dims3, dummy, 2, dims2, 2, dims2, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("a dim 0 of size 3 does not broadcast to result dim 0 of size 2")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_sum_to_f32(dummy, 2, dims2, 2, dims3, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_sum_to_f32: out dim 0 of size 3")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_permute_f32(dummy, 2, dims2, badPerm, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_permute_f32: perm is not a permutation of [0, 2)")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_slice(dummy, 4, 2, dims2, offsets, sliceDims, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_slice: axis 1: offset 1 + size 3 exceeds the dimension 3"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_insert_slice(dummy, 3, 2, sliceDims, offsets, dims3, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("axis 1: offset 1 + size 3 exceeds the dimension 3")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_softmax_fwd_f32(dummy, 5, 4, 1, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("causal softmax needs x of shape [..., S, S]: rows (5) must be a multiple of cols (4)"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_layer_norm_fwd_f32(dummy, dummy, dummy, 2, 0, 1e-5f, dummy, dummy, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_layer_norm_fwd_f32: need 0 <= rows")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_cross_entropy_fwd_f32(dummy, nullptr, 4, 8, dummy, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_cross_entropy_fwd_f32: a tensor pointer is null")) << ptrain_last_error();
  // The weighted cross-entropy: flags 0 or 1, an int32 ignore_index, the sizes, then the pointers.
  EXPECT_EQ(ptrain_cuda_cross_entropy_weighted_fwd_f32(dummy, dummyIdx, dummy, 4, 8, 2, 0, 0, dummy, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_cross_entropy_weighted_fwd_f32: has_ignore_index and reduction_sum must be "
                           "0 or 1, got 2 and 0"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_cross_entropy_weighted_bwd_f32(dummy, dummy, dummyIdx, dummy, dummy, 4, 8, 1, int64_t{1} << 40,
                                                       0, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_cross_entropy_weighted_bwd_f32: ignore_index 1099511627776 does not fit the "
                           "int32 targets"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_cross_entropy_weighted_fwd_f32(dummy, dummyIdx, nullptr, 4, 0, 1, -100, 1, dummy, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_cross_entropy_weighted_fwd_f32: need 0 <= n <= 2^31 - 1 and vocab >= 1, got "
                           "4 and 0"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_cross_entropy_weighted_fwd_f32(nullptr, dummyIdx, nullptr, 4, 8, 1, -100, 0, dummy, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_cross_entropy_weighted_fwd_f32: a tensor pointer is null"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_cross_entropy_weighted_bwd_f32(nullptr, dummy, dummyIdx, nullptr, dummy, 4, 8, 0, 0, 1, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_cross_entropy_weighted_bwd_f32: a tensor pointer is null"))
      << ptrain_last_error();
  int64_t step = 1;
  EXPECT_EQ(ptrain_cuda_adamw_step_f32(dummy, dummy, dummy, dummy, 4, &step, 20, 10, 1e-3f, 1e-4f, 0.9f, 0.95f, 1e-8f,
                                       0.1f, dummy, dummy, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("need 0 <= warmup_steps (20) <= total_steps (10)")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_gemm_f32(0, 0, 1, 2, 2, -1, 1.0f, dummy, 0, dummy, 0, 0.0f, dummy, 0),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_gemm_f32: 'k' must be >= 0, got -1")) << ptrain_last_error();
  uint16_t *half = reinterpret_cast<uint16_t *>(dummy);
  EXPECT_EQ(ptrain_cuda_gemm_bf16(0, 0, 1, 2, 2, 3, 1.0f, half, -1, half, 0, 0.0f, dummy, 0),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_gemm_bf16: strides must be >= 0")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_gemm_bf16(0, 0, 1, 2, 2, 3, 1.0f, nullptr, 0, half, 0, 0.0f, dummy, 0),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_gemm_bf16: 'a' must not be null")) << ptrain_last_error();
  void *p = nullptr;
  EXPECT_EQ(ptrain_cuda_malloc(-1, &p), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_malloc: 'num_bytes' must be >= 0, got -1")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_copy_to_host(nullptr, 4, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_copy_to_host: 'src' must not be null")) << ptrain_last_error();
}

// fp16's loss scaler (cuda/GradScaler.cu): the host-side checks, before any launch, name the entry point.
TEST(CudaArguments, LossScalerRejectsBadArgumentsByName) {
  EXPECT_EQ(ptrain_cuda_loss_scale_f32(dummy, 0.0f, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_loss_scale_f32: initial_scale must be finite and > 0, got 0"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_loss_scale_f32(nullptr, 1.0f, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_cuda_grad_unscale_f32(dummy, -1, dummy, dummy, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_grad_unscale_f32")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_grad_unscale_f32(dummy, 4, nullptr, dummy, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_cuda_grad_scaler_update_f32(dummy, dummy, 1024.0f, 2.0f, 1.5f, 1000, 2, 1.0f, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_grad_scaler_update_f32: backoff_factor must be in (0, 1), got 1.5"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_grad_scaler_update_f32(dummy, dummy, 1024.0f, 2.0f, 0.5f, 0, 2, 1.0f, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("growth_interval (0) and hysteresis (2) must be >= 1")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_grad_scaler_update_f32(dummy, dummy, 1024.0f, 2.0f, 0.5f, 1000, 2, 0.0f, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("min_scale must be finite and > 0")) << ptrain_last_error();
}

TEST(CudaArguments, ModelKernelsBeyondTheGptCoreRejectBadArgumentsByName) {
  const int64_t dims[2] = {2, 3}, wrong[2] = {3, 3};
  EXPECT_EQ(ptrain_cuda_reduce_f32(7, dummy, 2, dims, 2, dims, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_reduce_f32: unknown reduction kind 7")) << ptrain_last_error();
  const int64_t empty[2] = {2, 0}, kept[2] = {2, 1};
  EXPECT_EQ(ptrain_cuda_reduce_f32(PTRAIN_REDUCE_KIND_MAX, dummy, 2, empty, 2, kept, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_reduce_f32: max of an empty reduction has no identity")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_broadcast_to(dummy, 4, 2, wrong, 2, dims, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_broadcast_to: x dim 0 of size 3 does not broadcast to result dim 0 of size 2"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_cast_elements(dummy, PTRAIN_CAST_F32, 4, 5, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_cast_elements: element kinds 0 -> 5")) << ptrain_last_error();
  const int64_t indices[2] = {0, 1};
  EXPECT_EQ(ptrain_cuda_gather_axis(dummy, 3, 1, 2, 1, indices, 2, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_gather_axis: elem_bytes must be 1, 4 or 8, got 3")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_log_softmax_f32(dummy, 2, -1, 1, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_log_softmax_f32: 'len' must be >= 0, got -1")) << ptrain_last_error();
  int64_t step = 1;
  EXPECT_EQ(ptrain_cuda_sgd_step_f32(dummy, dummy, nullptr, 4, &step, 0, 10, 1e-3f, 1e-4f, 0.9f, 0.0f, dummy, nullptr),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_sgd_step_f32: momentum_buf may be null only when momentum == 0 (got 0.9)"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_sgd_step_f32(dummy, dummy, dummy, 4, &step, 0, 10, 1e-3f, 1e-4f, 0.9f, 0.0f, dummy, nullptr),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("momentum_buf and out_momentum_buf must both be set or both be null"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_sum_squares_f32(dummy, -2, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_sum_squares_f32: 'n' must be >= 0, got -2")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_clip_scale_f32(dummy, 0.0, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_clip_scale_f32: max_norm must be > 0, got 0")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_vocab_parallel_embedding_fwd_f32(dummy, dummyIdx, 4, 8, 2, 2, 2, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_vocab_parallel_embedding_fwd_f32: part 2 of 2 is not a rank of the axis"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_vocab_parallel_embedding_bwd_f32(dummy, dummyIdx, 4, 0, 2, 0, 2, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_vocab_parallel_embedding_bwd_f32: need n >= 0, rows >= 1 and cols >= 1"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_vocab_parallel_ce_parts_fwd_f32(dummy, dummyIdx, dummy, 4, 8, 17, 0, 2, dummy, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_vocab_parallel_ce_parts_fwd_f32: need n <= 2^31 - 1 and vocab in [1, 16], "
                           "got 4 and 17"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_vocab_parallel_ce_parts_bwd_f32(dummy, dummy, dummy, nullptr, dummy, 4, 8, 16, 1, 2, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_vocab_parallel_ce_parts_bwd_f32: a tensor pointer is null"))
      << ptrain_last_error();
}

// Masks and the LLaMA-style ops (ModelMask.cu, ModelTransformer.cu): the CPU calls' checks, by name.
TEST(CudaArguments, MaskAndTransformerKernelsRejectBadArgumentsByName) {
  uint8_t mask[16] = {};
  const int64_t dims2[2] = {2, 8}, dims3[1] = {3}, bad[1] = {-1}, d8[1] = {8};
  int64_t counter[1] = {0};
  EXPECT_EQ(ptrain_cuda_compare_f32(9, dummy, 2, dims2, dummy, 1, d8, 2, dims2, mask), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_compare_f32: unknown comparison kind 9 (eq, lt, le, gt, ge are 0..4)"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_compare_i64(PTRAIN_COMPARE_LT, counter, 1, dims3, counter, 1, d8, 1, d8, mask),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_compare_i64: a dim 0 of size 3 does not broadcast to result dim 0 of size 8"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_compare_f32(PTRAIN_COMPARE_EQ, dummy, 2, dims2, nullptr, 1, d8, 2, dims2, mask),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_compare_f32: a, b and out must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_logical_u8(8, mask, 1, d8, mask, 1, d8, 1, d8, mask), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_logical_u8: unknown logical kind 8 (and, or, xor are 5..7)"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_logical_u8(PTRAIN_COMPARE_AND, mask, 9, d8, mask, 1, d8, 1, d8, mask),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_logical_u8: a rank must be in [0, 8], got 9")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_select(mask, 1, d8, dummy, 1, d8, dummy, 1, d8, 3, 1, d8, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_select: elem_bytes must be 1, 2, 4 or 8, got 3")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_select(mask, 1, bad, dummy, 1, d8, dummy, 1, d8, 4, 1, d8, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_select: cond dims[0] must be >= 0, got -1")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_select(nullptr, 1, d8, dummy, 1, d8, dummy, 1, d8, 4, 1, d8, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_select: 'cond' must not be null")) << ptrain_last_error();

  EXPECT_EQ(ptrain_cuda_rms_norm_fwd_f32(dummy, dummy, 2, 0, 1e-6, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_rms_norm_fwd_f32: cols must be > 0, got 0")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_rms_norm_fwd_f32(dummy, dummy, 2, 8, -1.0, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_rms_norm_fwd_f32: eps must be >= 0, got -1")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_rms_norm_fwd_f32(dummy, nullptr, 2, 8, 1e-6, dummy), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_rms_norm_fwd_f32: 'scale' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_rotary_embedding_f32(dummy, dummy, dummy, 1, 1, 2, 8, 3, 0, dummy + 8),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_rotary_embedding_f32: rotary_dim must be even and in (0, head_dim = 8], got 3"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_rotary_embedding_f32(dummy, dummy, dummy, 1, 1, 2, 8, 8, 0, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_rotary_embedding_f32: out must not alias x")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_dropout_f32(dummy, 16, 1.0, 7, counter, 0, 1, 0, 1, 0, 0, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_dropout_f32: ratio must be in [0, 1), got 1")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_dropout_f32(dummy, 16, 0.1, 7, counter, 4, 4, 2, 2, 0, 0, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_dropout_f32: bad layout: mid 4, inner 4, part 2 of 2, row offset 0, row "
                           "elements 0"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_dropout_f32(dummy, 16, 0.1, 7, nullptr, 0, 1, 0, 1, 0, 0, dummy),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_dropout_f32: 'counter' must not be null")) << ptrain_last_error();
  // Nothing to do is no error (no pointer is read).
  EXPECT_EQ(ptrain_cuda_dropout_f32(nullptr, 0, 0.1, 7, nullptr, 0, 1, 0, 1, 0, 0, nullptr), PTRAIN_OK);
}

// The generated constants (Generate.cu): the CPU calls' checks, before any device work.
TEST(CudaArguments, GeneratedConstantsRejectBadArgumentsByName) {
  const float keep = 0.0f, masked = -1.0f;
  EXPECT_EQ(ptrain_cuda_causal_mask(dummy, 3, 1, 4, 4, 0, &keep, &masked), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_causal_mask: elem_bytes must be 1, 2, 4 or 8, got 3")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_causal_mask(dummy, 4, 1, -4, 4, 0, &keep, &masked), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'rows' must be >= 0, got -4")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_causal_mask(dummy, 4, 1, 4, 4, 0, nullptr, &masked), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'keep' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_causal_mask(dummy, 4, 0, 4, 4, 0, &keep, &masked), PTRAIN_OK); // nothing to write
  EXPECT_EQ(ptrain_cuda_iota_i64(nullptr, 4, 2, 0, 1), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'out' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_iota_i64(reinterpret_cast<int64_t *>(dummyBytes), 4, 0, 0, 1), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_iota_i64: period must be > 0, got 0")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_fill_elements(dummy, 4, 4, nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'value' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_fill_elements(dummy, -1, 4, &keep), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'count' must be >= 0, got -1")) << ptrain_last_error();
}

// The generated kernels' loader (GeneratedKernels.cpp): argument errors by name before any device call, and
// without a device (or driver) a DEVICE error naming the CUDA call instead of a crash.
TEST(CudaArguments, GeneratedKernelsRejectBadArgumentsByName) {
  const char *images[] = {".version 8.0\n.target sm_80\n"};
  const int32_t versions[] = {80};
  void *module = &module, *function = nullptr;
  EXPECT_EQ(ptrain_cuda_kernels_load(nullptr, versions, 1, &module), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_kernels_load: 'ptx_images' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_kernels_load(images, versions, 0, &module), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'num_images' must be > 0, got 0")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_kernels_load(images, versions, 1, nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'out_module' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_kernel_function(nullptr, "ptrain_kernel_0", &function), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_kernel_function: 'module' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_kernel_launch(nullptr, 1, 256, nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_kernel_launch: 'function' must not be null")) << ptrain_last_error();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    EXPECT_EQ(ptrain_cuda_kernels_load(images, versions, 1, &module), PTRAIN_ERROR_DEVICE);
    EXPECT_TRUE(lastErrorHas("ptrain_cuda_kernels_load: cuda")) << ptrain_last_error(); // cudaGetDevice(...)
    EXPECT_EQ(module, nullptr);
  }
}

TEST(CudaArguments, NcclCallsRejectBadArgumentsByName) {
  ptrain_nccl_comm_t out = nullptr;
  EXPECT_EQ(ptrain_nccl_comm_init(nullptr, &out), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'bootstrap' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_comm_split(nullptr, 0, 0, &out), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_nccl_all_reduce(nullptr, dummy, dummy, 4, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_all_reduce: 'comm' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_wait(nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_nccl_group_end(), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("no group is open")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_comm_destroy(nullptr), PTRAIN_OK);
  EXPECT_EQ(ptrain_nccl_wait_event(nullptr, dummy, "the send"), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_wait_event: 'comm' must not be null")) << ptrain_last_error();
}

// The compressed all-reduce checks its descriptor and pointers before the communicator (and any device call).
TEST(CudaArguments, CompressedAllReduceRejectsBadArgumentsByName) {
  float *dummy = reinterpret_cast<float *>(16);
  ptrain_codec_t codec = {PTRAIN_CODEC_POWERSGD, 0, 0, 0, 0, PTRAIN_DTYPE_F32, 1, 64, 32, 4, 0, 0, 0};
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nullptr, nullptr, dummy, nullptr, nullptr, dummy, PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_compressed_all_reduce: 'codec' must not be null")) << ptrain_last_error();
  ptrain_codec_t bad = codec;
  bad.rank = 40;
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nullptr, &bad, dummy, nullptr, nullptr, dummy, PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_compressed_all_reduce: invalid codec: ptrain_codec_code_bytes: PowerSGD "
                           "rank 40 must be in [1, min(rows, cols) = 32]"))
      << ptrain_last_error();
  bad = codec;
  bad.kind = static_cast<ptrain_codec_kind_t>(9);
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nullptr, &bad, dummy, nullptr, nullptr, dummy, PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_compressed_all_reduce: invalid codec")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nullptr, &codec, nullptr, nullptr, nullptr, dummy, PTRAIN_REDUCE_SUM),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'input' and 'out' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nullptr, &codec, dummy, nullptr, nullptr, dummy,
                                              static_cast<ptrain_reduce_op_t>(7)),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("unsupported reduction 7 (sum = 0, avg = 1)")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nullptr, &codec, dummy, dummy + 8, nullptr, dummy + 8, PTRAIN_REDUCE_AVG),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'out' must not alias 'residual'")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_compressed_all_reduce(nullptr, &codec, dummy, nullptr, nullptr, dummy, PTRAIN_REDUCE_AVG),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_compressed_all_reduce: 'comm' must not be null")) << ptrain_last_error();
}

// The events of the pipeline's channels (docs/CodegenCuda.md, "Streams and events"): checked before any device call.
TEST(CudaArguments, EventCallsRejectNullByName) {
  EXPECT_EQ(ptrain_cuda_event_create(nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_event_create: 'out_event' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_event_record(nullptr, nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_event_record: 'event' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_stream_wait_event(nullptr, nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_stream_wait_event: 'event' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_event_destroy(nullptr), PTRAIN_OK);
}

TEST(CudaArguments, CodecMetricsRejectBadArgumentsByName) {
  // The CPU call's checks and words (cpu/codecs/Metrics.cpp), before any device work; nothing written on error.
  const float *g = dummy, *e = dummy + 4, *eNew = dummy + 8;
  float *copy = dummy + 12;
  ptrain_codec_metrics_t m{};
  m.error = -1.0;
  EXPECT_EQ(ptrain_cuda_codec_metrics_f32(nullptr, e, eNew, nullptr, nullptr, 4, nullptr, &m),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_codec_metrics_f32: 'g' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_codec_metrics_f32(g, e, eNew, nullptr, nullptr, 4, nullptr, nullptr),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'out_metrics' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_codec_metrics_f32(g, e, eNew, nullptr, nullptr, -1, nullptr, &m),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'n' must be >= 0, got -1")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_codec_metrics_f32(g, e, eNew, copy, nullptr, 4, nullptr, &m), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("exactly one of 'new_residual' (error feedback) and 'decoded' (none) must be given"))
      << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_codec_metrics_f32(g, e, nullptr, nullptr, nullptr, 4, nullptr, &m),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("exactly one of 'new_residual'")) << ptrain_last_error();
  EXPECT_EQ(ptrain_cuda_codec_metrics_f32(g, nullptr, eNew, nullptr, nullptr, 4, nullptr, &m),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("'new_residual' (error feedback) needs 'residual'")) << ptrain_last_error();
  for (const float *alias : {g, e, eNew}) {
    EXPECT_EQ(ptrain_cuda_codec_metrics_f32(g, e, eNew, nullptr, nullptr, 4, const_cast<float *>(alias), &m),
              PTRAIN_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(lastErrorHas("'out_g_copy' must not alias g, the residuals or 'decoded'")) << ptrain_last_error();
  }
  EXPECT_EQ(m.error, -1.0);
}

TEST(CudaArguments, StreamDestroyOfNullDoesNothing) {
  // NULL is never handed to cudaStreamDestroy (it would name the legacy stream 0): OK, no CUDA call, so it
  // also holds without a driver, as ptrain_step_finalize needs for a channel stream this rank never created.
  EXPECT_EQ(ptrain_cuda_stream_destroy(nullptr), PTRAIN_OK);
  EXPECT_EQ(ptrain_cuda_stream_create(nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_cuda_stream_create: 'out_stream' must not be null")) << ptrain_last_error();
}

TEST(CudaArguments, NcclTrafficCountersRejectBadArgumentsByName) {
  int64_t bytes = -1, messages = -1;
  EXPECT_EQ(ptrain_nccl_p2p_traffic(nullptr, 0, &bytes, &messages), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_p2p_traffic: 'comm' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_collective_traffic(nullptr, &bytes, &messages), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_collective_traffic: 'comm' must not be null")) << ptrain_last_error();
  EXPECT_EQ(ptrain_nccl_reset_traffic(nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ptrain_nccl_reset_traffic: 'comm' must not be null")) << ptrain_last_error();
  EXPECT_EQ(bytes, -1); // nothing written on error
  EXPECT_EQ(messages, -1);
}

} // namespace
