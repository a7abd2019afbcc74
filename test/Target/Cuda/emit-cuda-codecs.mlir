// RUN: ptrain-translate --emit-cuda %s -o %t.cu
// RUN: FileCheck %s --input-file %t.cu
// RUN: FileCheck %s --check-prefix=NOCPU --input-file %t.cu
// RUN: FileCheck %s --check-prefix=TELEMETRY --input-file %t.cu
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu

// Every codec op onto the CUDA runtime's codec kernels (lib/Target/Cuda/EmitCudaCodecs.cpp): the arguments of
// the CPU target (lib/Target/Common/CodecKernels.h) on device pointers, error feedback through the kernel's
// residual, each new state a device copy of the old one that the kernel updates in place; codec states live
// in the device block of states like every other state (so init and checkpoints cover them).

// The codec states are ordinary states: host mirrors, rows of the keyed table, offsets in d_states (packed in
// table order at 256 bytes: 0, 131072, 139264; the functions' pointers below).
// CHECK: const StateTemplate kStateTemplates[3] = {
// CHECK-NEXT: {"link/residual", "", false, PTRAIN_DTYPE_F32, PTRAIN_STATE_CODEC_RESIDUAL, 3, {4, 64, 128}, PTRAIN_STATE_INIT_NONE, 0},
// CHECK-NEXT: {"link/warm_start_q", "", false, PTRAIN_DTYPE_F32, PTRAIN_STATE_CODEC_WARM_START, 2, {128, 16}, PTRAIN_STATE_INIT_NONE, 0},
// CHECK-NEXT: {"link/counter", "", false, PTRAIN_DTYPE_I64, PTRAIN_STATE_CODEC_SEED, 0, {0}, PTRAIN_STATE_INIT_NONE, 0},
// No CPU codec kernel is called.
// NOCPU-NOT: ptrain_powersgd_
// NOCPU-NOT: ptrain_topk_
// NOCPU-NOT: ptrain_randk_
// NOCPU-NOT: ptrain_quant_
// NOCPU-NOT: ptrain_cast_encode
// NOCPU-NOT: ptrain_copy_bytes(

module {
  ptrain.state @e key "link/residual" kind codec_residual : tensor<4x64x128xf32>
  ptrain.state @q key "link/warm_start_q" kind codec_warm_start : tensor<128x16xf32>
  ptrain.state @n key "link/counter" kind codec_seed : tensor<i64>

  // PowerSGD on the default view (rows 4 x 64, cols 128) with error feedback and a warm-started Q (seed 0),
  // cuBLAS inside the runtime; the new states go back to their device state blocks.
  // CHECK-LABEL: ptrain_status_t device_powersgd({{.*}}) {
  // The state reads used in place are declared where first named (StepFunction::finishChunk).
  // CHECK: // "/cb/Compress"
  // CHECK-NEXT: // ptrain.compress
  // CHECK-NEXT: float *[[OLDE:v[0-9]+]] = reinterpret_cast<float *>(d_states + 0);
  // CHECK-NEXT: float *[[OLDQ:v[0-9]+]] = reinterpret_cast<float *>(d_states + 131072);
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_copy_bytes([[OLDE]], 131072, [[E:v[0-9]+]]));
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_bytes([[OLDQ]], 8192, [[Q:v[0-9]+]]));
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_powersgd_encode_f32(d_arg0, [[E]], [[Q]], 1, 256, 128, 16, 0, [[P:v[0-9]+]], [[QC:v[0-9]+]]));
  // CHECK: ptrain_cuda_copy_bytes([[E]], 131072, reinterpret_cast<float *>(d_states + 0))
  // CHECK: ptrain_cuda_copy_bytes([[Q]], 8192, reinterpret_cast<float *>(d_states + 131072))
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_powersgd_decode_f32([[P]], [[QC]], 1, 256, 128, 16, {{v[0-9]+}}));
  func.func @powersgd(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %e = ptrain.state_read @e : tensor<4x64x128xf32>
    %q = ptrain.state_read @q : tensor<128x16xf32>
    %c:2, %s:2 = ptrain.compress %g state(%e, %q) {codec = #ptrain.powersgd<rank = 16>, error_feedback}
        : tensor<4x64x128xf32> state(tensor<4x64x128xf32>, tensor<128x16xf32>)
        -> (tensor<256x16xf32>, tensor<128x16xf32>) state(tensor<4x64x128xf32>, tensor<128x16xf32>) loc("/cb/Compress")
    ptrain.state_write %s#0 to @e : tensor<4x64x128xf32>
    ptrain.state_write %s#1 to @q : tensor<128x16xf32>
    %d = ptrain.decompress %c#0, %c#1 {codec = #ptrain.powersgd<rank = 16>}
        : (tensor<256x16xf32>, tensor<128x16xf32>) -> tensor<4x64x128xf32>
    return %d : tensor<4x64x128xf32>
  }

  // Top-k (ratio 1: the identity codec of the tests): k = 32768, int32 indices; no error feedback.
  // CHECK-LABEL: ptrain_status_t device_topk({{.*}}) {
  // CHECK: int32_t *[[I:v[0-9]+]] = reinterpret_cast<int32_t *>(d_arena +
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_topk_encode_f32(d_arg0, nullptr, 32768, 32768, [[V:v[0-9]+]], [[I]]));
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_topk_decode_f32([[V]], [[I]], 32768, 32768, {{v[0-9]+}}));
  func.func @topk(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %v, %i = ptrain.compress %g {codec = #ptrain.topk<ratio = 1.0>} : tensor<4x64x128xf32>
        -> (tensor<32768xf32>, tensor<32768xi32>)
    %d = ptrain.decompress %v, %i {codec = #ptrain.topk<ratio = 1.0>}
        : (tensor<32768xf32>, tensor<32768xi32>) -> tensor<4x64x128xf32>
    return %d : tensor<4x64x128xf32>
  }

  // Rand-k: the seed as an unsigned literal; the call counter (a device state) read into a host variable for
  // the runtime's position draw and copied back after the kernel advanced it, on both sides.
  // CHECK-LABEL: ptrain_status_t device_randk({{.*}}) {
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_copy_bytes({{v[0-9]+}}, 8, [[N:v[0-9]+]]));
  // CHECK-NEXT: int64_t counter = 0;
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_host([[N]], 8, &counter));
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_randk_encode_f32(d_arg0, nullptr, 32768, 1024, 7ULL, &counter, [[V:v[0-9]+]]));
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(&counter, 8, [[N]]));
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_copy_bytes({{v[0-9]+}}, 8, [[M:v[0-9]+]]));
  // CHECK-NEXT: int64_t counter = 0;
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_host([[M]], 8, &counter));
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_randk_decode_f32([[V]], 32768, 1024, 7ULL, &counter, {{v[0-9]+}}));
  // CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(&counter, 8, [[M]]));
  func.func @randk(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %n = ptrain.state_read @n : tensor<i64>
    %v, %n1 = ptrain.compress %g state(%n) {codec = #ptrain.randk<k = 1024, seed = 7>}
        : tensor<4x64x128xf32> state(tensor<i64>) -> (tensor<1024xf32>) state(tensor<i64>)
    %d, %n2 = ptrain.decompress %v state(%n) {codec = #ptrain.randk<k = 1024, seed = 7>}
        : (tensor<1024xf32>) state(tensor<i64>) -> tensor<4x64x128xf32> state(tensor<i64>)
    ptrain.state_write %n1 to @n : tensor<i64>
    return %d : tensor<4x64x128xf32>
  }

  // Quantization at 2, 4 and 8 bits: packed bytes as uint8_t, scales, zero points only when asymmetric.
  // CHECK-LABEL: ptrain_status_t device_quant({{.*}}) {
  // CHECK: uint8_t *[[B:v[0-9]+]] = reinterpret_cast<uint8_t *>(d_arena +
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_quant_encode_f32(d_arg0, nullptr, 256, 128, 4, PTRAIN_QUANT_BLOCK, 64, 0, [[B]], [[S:v[0-9]+]], [[Z:v[0-9]+]]));
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_quant_decode_f32([[B]], [[S]], [[Z]], 256, 128, 4, PTRAIN_QUANT_BLOCK, 64, 0, {{v[0-9]+}}));
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_quant_encode_f32(d_arg0, nullptr, 256, 128, 8, PTRAIN_QUANT_CHANNEL, 0, 1, [[B8:v[0-9]+]], [[S8:v[0-9]+]], nullptr));
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_quant_decode_f32([[B8]], [[S8]], nullptr, 256, 128, 8, PTRAIN_QUANT_CHANNEL, 0, 1, {{v[0-9]+}}));
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_quant_encode_f32(d_arg0, nullptr, 256, 128, 2, PTRAIN_QUANT_TENSOR, 0, 1,
  func.func @quant(%g: tensor<4x64x128xf32>) -> (tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>) {
    %b, %s, %z = ptrain.compress %g {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>}
        : tensor<4x64x128xf32> -> (tensor<16384xi8>, tensor<512xf32>, tensor<512xf32>)
    %d = ptrain.decompress %b, %s, %z {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>}
        : (tensor<16384xi8>, tensor<512xf32>, tensor<512xf32>) -> tensor<4x64x128xf32>
    %b8, %s8 = ptrain.compress %g {codec = #ptrain.quant<bits = 8, granularity = channel>}
        : tensor<4x64x128xf32> -> (tensor<32768xi8>, tensor<128xf32>)
    %d8 = ptrain.decompress %b8, %s8 {codec = #ptrain.quant<bits = 8, granularity = channel>}
        : (tensor<32768xi8>, tensor<128xf32>) -> tensor<4x64x128xf32>
    %b2, %s2 = ptrain.compress %g {codec = #ptrain.quant<bits = 2, granularity = tensor>}
        : tensor<4x64x128xf32> -> (tensor<8192xi8>, tensor<1xf32>)
    %d2 = ptrain.decompress %b2, %s2 {codec = #ptrain.quant<bits = 2, granularity = tensor>}
        : (tensor<8192xi8>, tensor<1xf32>) -> tensor<4x64x128xf32>
    return %d, %d8, %d2 : tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>
  }

  // Casts to bf16 (with error feedback) and fp16: 16-bit codes as uint16_t.
  // CHECK-LABEL: ptrain_status_t device_cast({{.*}}) {
  // CHECK: uint16_t *[[C:v[0-9]+]] = reinterpret_cast<uint16_t *>(d_arena +
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_cast_encode_f32(d_arg0, [[E:v[0-9]+]], 32768, PTRAIN_DTYPE_BF16, [[C]]));
  // CHECK: ptrain_cuda_copy_bytes([[E]], 131072, reinterpret_cast<float *>(d_states + 0))
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_cast_decode_f32([[C]], 32768, PTRAIN_DTYPE_BF16, {{v[0-9]+}}));
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_cast_encode_f32(d_arg0, nullptr, 32768, PTRAIN_DTYPE_F16, [[H:v[0-9]+]]));
  // CHECK: PTRAIN_STEP_CALL(ptrain_cuda_cast_decode_f32([[H]], 32768, PTRAIN_DTYPE_F16, {{v[0-9]+}}));
  func.func @cast(%g: tensor<4x64x128xf32>) -> (tensor<4x64x128xf32>, tensor<4x64x128xf32>) {
    %e = ptrain.state_read @e : tensor<4x64x128xf32>
    %c, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.cast<bf16>, error_feedback}
        : tensor<4x64x128xf32> state(tensor<4x64x128xf32>) -> (tensor<4x64x128xbf16>) state(tensor<4x64x128xf32>)
    ptrain.state_write %e1 to @e : tensor<4x64x128xf32>
    %d = ptrain.decompress %c {codec = #ptrain.cast<bf16>} : (tensor<4x64x128xbf16>) -> tensor<4x64x128xf32>
    %h = ptrain.compress %g {codec = #ptrain.cast<f16>} : tensor<4x64x128xf32> -> (tensor<4x64x128xf16>)
    %dh = ptrain.decompress %h {codec = #ptrain.cast<f16>} : (tensor<4x64x128xf16>) -> tensor<4x64x128xf32>
    return %d, %dh : tensor<4x64x128xf32>, tensor<4x64x128xf32>
  }
}

// Codec telemetry on one process: the site of the error-feedback residual "link/residual" (PowerSGD and bf16
// update it), recorded after each of their encodes with the CUDA metrics kernel; the metrics copied out, no MPI.
// TELEMETRY: const char *const kCodecSiteNames[kNumCodecSites] = {"link"};
// TELEMETRY: PTRAIN_STEP_CALL(ptrain_cuda_codec_metrics_f32(g, residual, newResidual, nullptr,
// TELEMETRY-COUNT-2: PTRAIN_STEP_CALL(recordCodecSite(0, d_arg0,
// TELEMETRY-NOT: recordCodecSite(
// TELEMETRY-LABEL: extern "C" PTRAIN_STEP_API ptrain_status_t ptrain_step_codec_telemetry(double *out_metrics) {
// TELEMETRY-NOT: ptrain_all_gather_start
// TELEMETRY: out_metrics[i] = local[i];
