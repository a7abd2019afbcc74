// RUN: ptrain-translate --emit-cpp %s -o %t.cpp
// RUN: FileCheck %s --input-file %t.cpp
// RUN: FileCheck %s --check-prefix=TELEMETRY --input-file %t.cpp
// RUN: c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// Codec telemetry (lib/Target/Cpp/EmitTelemetry.cpp): one site per error-feedback residual state, named by its key
// without "/residual" (PowerSGD and the bf16 cast share @e: one site); top-k and rand-k have no error feedback
// and no site; the data-parallel all-reduce is not measured. After each encode, when the driver turned it on,
// the site's record call gets the input, the old residual (the state) and the new one (the kernel's).
// TELEMETRY: constexpr int64_t kNumCodecSites = 1;
// TELEMETRY: const char *const kCodecSiteNames[kNumCodecSites] = {"link"};
// TELEMETRY: alignas(64) float codec_site_0_previous_g[32768];
// TELEMETRY: ptrain_codec_metrics_f32(g, residual, newResidual, nullptr, t.hasPrevious ? t.previousG : nullptr, t.numel,
// TELEMETRY: ptrain_step_set_telemetry(int32_t mode)
// TELEMETRY: ptrain_step_codec_telemetry(double *out_metrics)
// TELEMETRY: ptrain_all_gather_start(ptrain_world, local, out_metrics, kNumCodecSites * kNumCodecFields, PTRAIN_DTYPE_F64, &request)
// TELEMETRY-LABEL: ptrain_step_powersgd(
// TELEMETRY: ptrain_copy_bytes([[OLD:v[0-9]+]], 131072, [[NEW:v[0-9]+]])
// TELEMETRY: ptrain_powersgd_encode_f32(arg0, [[NEW]],
// TELEMETRY-NEXT: // Codec telemetry of site "link"
// TELEMETRY-NEXT: if (ptrain_telemetry_mode != 0)
// TELEMETRY-NEXT: PTRAIN_STEP_CALL(recordCodecSite(0, arg0, [[OLD]], [[NEW]]));
// TELEMETRY-LABEL: ptrain_step_topk(
// TELEMETRY-NOT: recordCodecSite
// TELEMETRY-LABEL: ptrain_step_cast(
// TELEMETRY: ptrain_cast_encode_f32(arg0, [[E:v[0-9]+]],
// TELEMETRY-NEXT: // Codec telemetry of site "link"
// TELEMETRY-NEXT: if (ptrain_telemetry_mode != 0)
// TELEMETRY-NEXT: PTRAIN_STEP_CALL(recordCodecSite(0, arg0, {{v[0-9]+}}, [[E]]));
// TELEMETRY-LABEL: ptrain_step_dp(
// TELEMETRY-NOT: recordCodecSite

// Every codec op onto the runtime's codec kernels (lib/Target/Cpp/EmitCodecs.cpp): codec parameters as literal
// arguments, error feedback through the kernel's residual, each new state a copy of the old one that the kernel
// updates in place, and a compressed all-reduce whose new codec states are written back after its wait.

module {
  ptrain.grid @grid(dp = 2)
  ptrain.state @e key "link/residual" kind codec_residual : tensor<4x64x128xf32>
  ptrain.state @q key "link/warm_start_q" kind codec_warm_start : tensor<128x16xf32>
  ptrain.state @n key "link/counter" kind codec_seed : tensor<i64>
  ptrain.state @sc_e key "sc/w/residual" kind codec_residual : tensor<64x32xf32>
  ptrain.state @sc_q key "sc/w/warm_start_q" kind codec_warm_start : tensor<32x4xf32>

  // PowerSGD on the default view (rows 4 x 64, cols 128) with error feedback and a warm-started Q, seed 0.
  // CHECK-LABEL: ptrain_step_powersgd(
  // CHECK: ptrain_copy_bytes({{v[0-9]+}}, 131072, [[E:v[0-9]+]])
  // CHECK: ptrain_copy_bytes({{v[0-9]+}}, 8192, [[Q:v[0-9]+]])
  // CHECK: ptrain_powersgd_encode_f32(arg0, [[E]], [[Q]], 1, 256, 128, 16, 0, [[P:v[0-9]+]], [[QC:v[0-9]+]])
  // CHECK: ptrain_copy_bytes([[E]], 131072, state_0_link_residual)
  // CHECK: ptrain_copy_bytes([[Q]], 8192, state_1_link_warm_start_q)
  // CHECK: ptrain_powersgd_decode_f32([[P]], [[QC]], 1, 256, 128, 16, {{v[0-9]+}})
  func.func @powersgd(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %e = ptrain.state_read @e : tensor<4x64x128xf32>
    %q = ptrain.state_read @q : tensor<128x16xf32>
    %c:2, %s:2 = ptrain.compress %g state(%e, %q) {codec = #ptrain.powersgd<rank = 16>, error_feedback}
        : tensor<4x64x128xf32> state(tensor<4x64x128xf32>, tensor<128x16xf32>)
        -> (tensor<256x16xf32>, tensor<128x16xf32>) state(tensor<4x64x128xf32>, tensor<128x16xf32>)
    ptrain.state_write %s#0 to @e : tensor<4x64x128xf32>
    ptrain.state_write %s#1 to @q : tensor<128x16xf32>
    %d = ptrain.decompress %c#0, %c#1 {codec = #ptrain.powersgd<rank = 16>}
        : (tensor<256x16xf32>, tensor<128x16xf32>) -> tensor<4x64x128xf32>
    return %d : tensor<4x64x128xf32>
  }

  // Top-k: k from the ratio (ceil(0.01 * 32768) = 328), int32 indices; no error feedback: a null residual.
  // CHECK-LABEL: ptrain_step_topk(
  // CHECK: int32_t *[[I:v[0-9]+]] =
  // CHECK: ptrain_topk_encode_f32(arg0, nullptr, 32768, 328, [[V:v[0-9]+]], [[I]])
  // CHECK: ptrain_topk_decode_f32([[V]], [[I]], 328, 32768, {{v[0-9]+}})
  func.func @topk(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %v, %i = ptrain.compress %g {codec = #ptrain.topk<ratio = 0.01>} : tensor<4x64x128xf32>
        -> (tensor<328xf32>, tensor<328xi32>)
    %d = ptrain.decompress %v, %i {codec = #ptrain.topk<ratio = 0.01>}
        : (tensor<328xf32>, tensor<328xi32>) -> tensor<4x64x128xf32>
    return %d : tensor<4x64x128xf32>
  }

  // Rand-k: the seed as an unsigned literal and the call counter as the (copied) state on both sides.
  // CHECK-LABEL: ptrain_step_randk(
  // CHECK: ptrain_copy_bytes({{v[0-9]+}}, 8, [[N:v[0-9]+]])
  // CHECK: ptrain_randk_encode_f32(arg0, nullptr, 32768, 1024, 7ULL, [[N]], [[V:v[0-9]+]])
  // CHECK: ptrain_randk_decode_f32([[V]], 32768, 1024, 7ULL, {{v[0-9]+}}, {{v[0-9]+}})
  func.func @randk(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %n = ptrain.state_read @n : tensor<i64>
    %v, %n1 = ptrain.compress %g state(%n) {codec = #ptrain.randk<k = 1024, seed = 7>}
        : tensor<4x64x128xf32> state(tensor<i64>) -> (tensor<1024xf32>) state(tensor<i64>)
    %d, %n2 = ptrain.decompress %v state(%n) {codec = #ptrain.randk<k = 1024, seed = 7>}
        : (tensor<1024xf32>) state(tensor<i64>) -> tensor<4x64x128xf32> state(tensor<i64>)
    ptrain.state_write %n1 to @n : tensor<i64>
    return %d : tensor<4x64x128xf32>
  }

  // Quantization: 4-bit asymmetric blocks of 64, packed bytes as uint8_t, scales and zero points.
  // CHECK-LABEL: ptrain_step_quant(
  // CHECK: uint8_t *[[B:v[0-9]+]] =
  // CHECK: ptrain_quant_encode_f32(arg0, nullptr, 256, 128, 4, PTRAIN_QUANT_BLOCK, 64, 0, [[B]], [[S:v[0-9]+]], [[Z:v[0-9]+]])
  // CHECK: ptrain_quant_decode_f32([[B]], [[S]], [[Z]], 256, 128, 4, PTRAIN_QUANT_BLOCK, 64, 0, {{v[0-9]+}})
  func.func @quant(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %b, %s, %z = ptrain.compress %g {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>}
        : tensor<4x64x128xf32> -> (tensor<16384xi8>, tensor<512xf32>, tensor<512xf32>)
    %d = ptrain.decompress %b, %s, %z {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>}
        : (tensor<16384xi8>, tensor<512xf32>, tensor<512xf32>) -> tensor<4x64x128xf32>
    return %d : tensor<4x64x128xf32>
  }

  // TAH-Quant at the defaults: numel, tile 64, 3 / 4 bits and the 410 high tiles the compiler computes
  // (round(0.8 x 512)); packed bytes and flags as uint8_t, scales and zero points as float.
  // CHECK-LABEL: ptrain_step_tahquant(
  // CHECK: ptrain_tahquant_encode_f32(arg0, nullptr, 32768, 64, 3, 4, 410, [[B:v[0-9]+]], [[S:v[0-9]+]], [[Z:v[0-9]+]], [[F:v[0-9]+]])
  // CHECK: ptrain_tahquant_decode_f32([[B]], [[S]], [[Z]], [[F]], 32768, 64, 3, 4, 410, {{v[0-9]+}})
  func.func @tahquant(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %b, %s, %z, %f = ptrain.compress %g {codec = #ptrain.tahquant<>}
        : tensor<4x64x128xf32> -> (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>)
    %d = ptrain.decompress %b, %s, %z, %f {codec = #ptrain.tahquant<>}
        : (tensor<15568xi8>, tensor<512xf32>, tensor<512xf32>, tensor<512xi8>) -> tensor<4x64x128xf32>
    return %d : tensor<4x64x128xf32>
  }

  // Cast to bf16 with error feedback: 16-bit codes as uint16_t.
  // CHECK-LABEL: ptrain_step_cast(
  // CHECK: uint16_t *[[C:v[0-9]+]] =
  // CHECK: ptrain_cast_encode_f32(arg0, [[E:v[0-9]+]], 32768, PTRAIN_DTYPE_BF16, [[C]])
  // CHECK: ptrain_cast_decode_f32([[C]], 32768, PTRAIN_DTYPE_BF16, {{v[0-9]+}})
  func.func @cast(%g: tensor<4x64x128xf32>) -> tensor<4x64x128xf32> {
    %e = ptrain.state_read @e : tensor<4x64x128xf32>
    %c, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.cast<bf16>, error_feedback}
        : tensor<4x64x128xf32> state(tensor<4x64x128xf32>) -> (tensor<4x64x128xbf16>) state(tensor<4x64x128xf32>)
    ptrain.state_write %e1 to @e : tensor<4x64x128xf32>
    %d = ptrain.decompress %c {codec = #ptrain.cast<bf16>} : (tensor<4x64x128xbf16>) -> tensor<4x64x128xf32>
    return %d : tensor<4x64x128xf32>
  }

  // Data-parallel PowerSGD: a static descriptor {kind, bits, granularity, symmetric, warm_start, cast_dtype,
  // batch, rows, cols, rank, k, block_size, seed}; the state writes follow the wait that completes them.
  // CHECK-LABEL: ptrain_step_dp(
  // CHECK: static const ptrain_codec_t codec = {PTRAIN_CODEC_POWERSGD, 0, 0, 0, 1, PTRAIN_DTYPE_F32, 1, 64, 32, 4, 0, 0, 0ULL, 0, 0, PTRAIN_DTYPE_F32};
  // CHECK: ptrain_copy_bytes({{v[0-9]+}}, 8192, [[E:v[0-9]+]])
  // CHECK: ptrain_copy_bytes({{v[0-9]+}}, 512, [[Q:v[0-9]+]])
  // CHECK: ptrain_compressed_all_reduce_start(comm_grid_dp, &codec, arg0, [[E]], [[Q]], [[R:v[0-9]+]], PTRAIN_REDUCE_AVG, &[[R]]_request)
  // CHECK: // after the wait of its compressed all-reduce
  // CHECK: // after the wait of its compressed all-reduce
  // CHECK: ptrain_wait(request)
  // CHECK-NEXT: ptrain_copy_bytes([[E]], 8192, state_3_sc_w_residual)
  // CHECK-NEXT: ptrain_copy_bytes([[Q]], 512, state_4_sc_w_warm_start_q)
  func.func @dp(%g: tensor<64x32xf32>) -> tensor<64x32xf32> {
    %e = ptrain.state_read @sc_e : tensor<64x32xf32>
    %q = ptrain.state_read @sc_q : tensor<32x4xf32>
    %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q) on @grid axes [dp] reduction = avg
        {codec = #ptrain.powersgd<rank = 4>, error_feedback}
        : tensor<64x32xf32> state(tensor<64x32xf32>, tensor<32x4xf32>) -> state(tensor<64x32xf32>, tensor<32x4xf32>)
    ptrain.state_write %e1 to @sc_e : tensor<64x32xf32>
    ptrain.state_write %q1 to @sc_q : tensor<32x4xf32>
    %y = ptrain.wait %r : !ptrain.request<tensor<64x32xf32>>
    return %y : tensor<64x32xf32>
  }
}
