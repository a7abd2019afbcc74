// RUN: ptrain-translate --emit-cuda %s -o %t.cu
// RUN: FileCheck %s --input-file %t.cu
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu

// Every codec kind of a compressed all-reduce (Optimus-CC's SC, MCBench's TP sites) onto
// ptrain_nccl_compressed_all_reduce (lib/Target/Cuda/EmitCudaCodecs.cpp): the ptrain_codec_t and the arguments
// of the CPU target's ptrain_compressed_all_reduce_start (lib/Target/Common/CodecKernels.h computes both), the new
// states first device copies of the old ones that the runtime updates in place; the state writes stay right
// after the start (every phase is enqueued on the step's stream), and the wait is the communicator's watchdog.

module {
  ptrain.grid @grid(dp = 2, tp = 2)
  ptrain.state @sc_e key "sc/w/residual" kind codec_residual : tensor<64x32xf32>
  ptrain.state @sc_q key "sc/w/warm_start_q" kind codec_warm_start : tensor<32x4xf32>
  ptrain.state @eb key "sc/b/residual" kind codec_residual : tensor<8xf32>
  ptrain.state @et key "sc/t/residual" kind codec_residual : tensor<8x16xf32>
  ptrain.state @n key "sc/r/counter" kind codec_seed : tensor<i64>
  ptrain.state @ec key "tp/layer0/out/residual" kind codec_residual : tensor<8x16xf32>

  // PowerSGD rank 4 with error feedback and a warm-started Q, averaged over dp.
  // CHECK-LABEL: ptrain_status_t device_powersgd({{.*}}) {
  // CHECK: // ptrain.compressed_all_reduce_start
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_POWERSGD, 0, 0, 0, 1, PTRAIN_DTYPE_F32, 1, 64, 32, 4, 0, 0, 0ULL, 0, 0, PTRAIN_DTYPE_F32};
  // CHECK-NEXT: ptrain_cuda_copy_bytes({{v[0-9]+}}, 8192, [[E:v[0-9]+]])
  // CHECK-NEXT: ptrain_cuda_copy_bytes({{v[0-9]+}}, 512, [[Q:v[0-9]+]])
  // CHECK-NEXT: ptrain_nccl_compressed_all_reduce(comm_grid_dp, &codec, d_arg0, [[E]], [[Q]], [[R:v[0-9]+]], PTRAIN_REDUCE_AVG)
  // CHECK: ptrain_cuda_copy_bytes([[E]], 8192, reinterpret_cast<float *>(d_states + 0))
  // CHECK: ptrain_cuda_copy_bytes([[Q]], 512, reinterpret_cast<float *>(d_states + 8192))
  // CHECK: // ptrain.wait
  // CHECK-NEXT: float *{{v[0-9]+}} = const_cast<float *>([[R]]);
  // CHECK-NEXT: {
  // CHECK-NEXT: ptrain_nccl_wait(comm_grid_dp)
  // CHECK-NOT: ptrain_compressed_all_reduce_start
  func.func @powersgd(%g: tensor<64x32xf32>) -> tensor<64x32xf32> {
    %e = ptrain.state_read @sc_e : tensor<64x32xf32>
    %q = ptrain.state_read @sc_q : tensor<32x4xf32>
    %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q) on @grid axes [dp] reduction = avg
        {codec = #ptrain.powersgd<rank = 4>, error_feedback}
        : tensor<64x32xf32> state(tensor<64x32xf32>, tensor<32x4xf32>) -> state(tensor<64x32xf32>, tensor<32x4xf32>) loc("/sc/w")
    ptrain.state_write %e1 to @sc_e : tensor<64x32xf32>
    ptrain.state_write %q1 to @sc_q : tensor<32x4xf32>
    %y = ptrain.wait %r : !ptrain.request<tensor<64x32xf32>>
    return %y : tensor<64x32xf32>
  }

  // A 1-D gradient: PowerSGD's exact path (the code carries the 8 values), summed, no warm start.
  // CHECK-LABEL: ptrain_status_t device_exact({{.*}}) {
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_POWERSGD, 0, 0, 0, 0, PTRAIN_DTYPE_F32, 1, 1, 8, 1, 0, 0, 0ULL, 0, 0, PTRAIN_DTYPE_F32};
  // CHECK-NEXT: ptrain_cuda_copy_bytes({{v[0-9]+}}, 32, [[E:v[0-9]+]])
  // CHECK-NEXT: ptrain_nccl_compressed_all_reduce(comm_grid_dp, &codec, d_arg0, [[E]], nullptr, {{v[0-9]+}}, PTRAIN_REDUCE_SUM)
  func.func @exact(%g: tensor<8xf32>) -> tensor<8xf32> {
    %e = ptrain.state_read @eb : tensor<8xf32>
    %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = sum
        {codec = #ptrain.powersgd<rank = 1, warm_start = false>, error_feedback}
        : tensor<8xf32> state(tensor<8xf32>) -> state(tensor<8xf32>)
    ptrain.state_write %e1 to @eb : tensor<8xf32>
    %out = ptrain.wait %r : !ptrain.request<tensor<8xf32>>
    return %out : tensor<8xf32>
  }

  // Top-k (gathered), averaged, with error feedback.
  // CHECK-LABEL: ptrain_status_t device_topk({{.*}}) {
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_TOPK, 0, 0, 0, 0, PTRAIN_DTYPE_F32, 1, 8, 16, 0, 12, 0, 0ULL, 0, 0, PTRAIN_DTYPE_F32};
  // CHECK-NEXT: ptrain_cuda_copy_bytes({{v[0-9]+}}, 512, [[E:v[0-9]+]])
  // CHECK-NEXT: ptrain_nccl_compressed_all_reduce(comm_grid_dp, &codec, d_arg0, [[E]], nullptr, {{v[0-9]+}}, PTRAIN_REDUCE_AVG)
  // CHECK: ptrain_nccl_wait(comm_grid_dp)
  func.func @topk(%g: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %e = ptrain.state_read @et : tensor<8x16xf32>
    %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = avg
        {codec = #ptrain.topk<k = 12>, error_feedback} : tensor<8x16xf32> state(tensor<8x16xf32>) -> state(tensor<8x16xf32>)
    ptrain.state_write %e1 to @et : tensor<8x16xf32>
    %out = ptrain.wait %r : !ptrain.request<tensor<8x16xf32>>
    return %out : tensor<8x16xf32>
  }

  // Rand-k: its counter is a device state (the runtime reads and advances it through the host).
  // CHECK-LABEL: ptrain_status_t device_randk({{.*}}) {
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_RANDK, 0, 0, 0, 0, PTRAIN_DTYPE_F32, 1, 8, 16, 0, 32, 0, 7ULL, 0, 0, PTRAIN_DTYPE_F32};
  // CHECK-NEXT: ptrain_cuda_copy_bytes({{v[0-9]+}}, 8, [[C:v[0-9]+]])
  // CHECK-NEXT: ptrain_nccl_compressed_all_reduce(comm_grid_dp, &codec, d_arg0, nullptr, [[C]], {{v[0-9]+}}, PTRAIN_REDUCE_SUM)
  // CHECK-NOT: &counter
  // CHECK: ptrain_cuda_copy_bytes([[C]], 8, reinterpret_cast<int64_t *>(d_states + {{[0-9]+}}))
  func.func @randk(%g: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %c = ptrain.state_read @n : tensor<i64>
    %r, %c1 = ptrain.compressed_all_reduce_start %g state(%c) on @grid axes [dp] reduction = sum
        {codec = #ptrain.randk<k = 32, seed = 7>} : tensor<8x16xf32> state(tensor<i64>) -> state(tensor<i64>)
    ptrain.state_write %c1 to @n : tensor<i64>
    %out = ptrain.wait %r : !ptrain.request<tensor<8x16xf32>>
    return %out : tensor<8x16xf32>
  }

  // The widened form of a bf16 TP site (value_type = bf16, C8): the descriptor's version-2 field value_dtype is bf16
  // (f32 on the sites above), so the runtime sends 2-byte top-k values.
  // CHECK-LABEL: ptrain_status_t device_topk_bf16_values({{.*}}) {
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_TOPK, 0, 0, 0, 0, PTRAIN_DTYPE_F32, 1, 8, 16, 0, 12, 0, 0ULL, 0, 0, PTRAIN_DTYPE_BF16};
  // CHECK-NEXT: ptrain_cuda_copy_bytes({{v[0-9]+}}, 512, [[E:v[0-9]+]])
  // CHECK-NEXT: ptrain_nccl_compressed_all_reduce(comm_grid_tp, &codec, d_arg0, [[E]], nullptr, {{v[0-9]+}}, PTRAIN_REDUCE_SUM)
  func.func @topk_bf16_values(%g: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %e = ptrain.state_read @ec : tensor<8x16xf32>
    %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [tp] reduction = sum
        {codec = #ptrain.topk<k = 12>, error_feedback, value_type = bf16} : tensor<8x16xf32> state(tensor<8x16xf32>) -> state(tensor<8x16xf32>)
    ptrain.state_write %e1 to @ec : tensor<8x16xf32>
    %out = ptrain.wait %r : !ptrain.request<tensor<8x16xf32>>
    return %out : tensor<8x16xf32>
  }

  // Rand-k with f16 values.
  // CHECK-LABEL: ptrain_status_t device_randk_f16_values({{.*}}) {
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_RANDK, 0, 0, 0, 0, PTRAIN_DTYPE_F32, 1, 8, 16, 0, 32, 0, 7ULL, 0, 0, PTRAIN_DTYPE_F16};
  func.func @randk_f16_values(%g: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %c = ptrain.state_read @n : tensor<i64>
    %r, %c1 = ptrain.compressed_all_reduce_start %g state(%c) on @grid axes [tp] reduction = sum
        {codec = #ptrain.randk<k = 32, seed = 7>, value_type = f16} : tensor<8x16xf32> state(tensor<i64>) -> state(tensor<i64>)
    ptrain.state_write %c1 to @n : tensor<i64>
    %out = ptrain.wait %r : !ptrain.request<tensor<8x16xf32>>
    return %out : tensor<8x16xf32>
  }

  // 4-bit asymmetric block quantization (gathered), stateless.
  // CHECK-LABEL: ptrain_status_t device_quant({{.*}}) {
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_QUANT, 4, PTRAIN_QUANT_BLOCK, 0, 0, PTRAIN_DTYPE_F32, 1, 8, 16, 0, 0, 32, 0ULL, 0, 0, PTRAIN_DTYPE_F32};
  // CHECK-NEXT: ptrain_nccl_compressed_all_reduce(comm_grid_dp, &codec, d_arg0, nullptr, nullptr, {{v[0-9]+}}, PTRAIN_REDUCE_SUM)
  func.func @quant(%g: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp] reduction = sum
        {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 32, symmetric = false>} : tensor<8x16xf32>
    %out = ptrain.wait %r : !ptrain.request<tensor<8x16xf32>>
    return %out : tensor<8x16xf32>
  }

  // A bf16 cast with error feedback over tp (MCBench's TP site).
  // CHECK-LABEL: ptrain_status_t device_cast({{.*}}) {
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_CAST, 0, 0, 0, 0, PTRAIN_DTYPE_BF16, 1, 8, 16, 0, 0, 0, 0ULL, 0, 0, PTRAIN_DTYPE_F32};
  // CHECK-NEXT: ptrain_cuda_copy_bytes({{v[0-9]+}}, 512, [[E:v[0-9]+]])
  // CHECK-NEXT: ptrain_nccl_compressed_all_reduce(comm_grid_tp, &codec, d_arg0, [[E]], nullptr, {{v[0-9]+}}, PTRAIN_REDUCE_SUM)
  // CHECK: ptrain_nccl_wait(comm_grid_tp)
  func.func @cast(%g: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %e = ptrain.state_read @ec : tensor<8x16xf32>
    %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [tp] reduction = sum
        {codec = #ptrain.cast<bf16>, error_feedback} : tensor<8x16xf32> state(tensor<8x16xf32>) -> state(tensor<8x16xf32>)
    ptrain.state_write %e1 to @ec : tensor<8x16xf32>
    %out = ptrain.wait %r : !ptrain.request<tensor<8x16xf32>>
    return %out : tensor<8x16xf32>
  }
}
