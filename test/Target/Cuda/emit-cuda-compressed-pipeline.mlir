// RUN: ptrain-translate --emit-cuda %s -o %t.cu
// RUN: ptrain-translate --emit-cuda --emit-cuda-outline=false %s -o %t.inline.cu
// RUN: FileCheck %s --input-file %t.inline.cu
// RUN: FileCheck %s --check-prefix=TRAFFIC --input-file %t.inline.cu
// RUN: FileCheck %s --check-prefix=CONNECT --input-file %t.inline.cu
// RUN: FileCheck %s --check-prefix=TELEMETRY --input-file %t.inline.cu
// RUN: FileCheck %s --check-prefix=TABLE --input-file %t.cu
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu
// The lowered steps are schedule tables by default (include/ptrain/Target/Common/ScheduleTable.h): the op checks
// read the op-by-op text (--emit-cuda-outline=false), the same calls in the same order; the table form compiles.
// TABLE: static const ScheduleRow kSchedule[

// A compressed pipeline edge on CUDA (docs/CodegenCuda.md, "Codecs"): stage 1 encodes its gradient with 8-bit
// quantization and error feedback (the residual a state of stage 1 only), sends the packed bytes (i8) and the
// scales over NCCL in one group; stage 0 receives both and decodes. Then the traffic entry points over the NCCL
// communicators' counters (gathered over MPI), and the codec telemetry of --emit-cpp (the same site table and
// entry points) measured on the device.

module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 1>} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @w0 key "w0" kind parameter : tensor<4x8xf32>
  ptrain.state @e key "pp1->0/residual" kind codec_residual : tensor<4x8xf32>
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %rb = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<32xi8>> loc("/stage0/RecvCode")
    %rs = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<8xf32>> loc("/stage0/RecvScales")
    %b = ptrain.wait %rb : !ptrain.request<tensor<32xi8>>
    %s = ptrain.wait %rs : !ptrain.request<tensor<8xf32>>
    %g = ptrain.decompress %b, %s {codec = #ptrain.quant<bits = 8, granularity = channel>}
        : (tensor<32xi8>, tensor<8xf32>) -> tensor<4x8xf32> loc("/stage0/Decompress")
    %w = ptrain.state_read @w0 : tensor<4x8xf32>
    %n = ptrain.binary sub %w, %g : tensor<4x8xf32>, tensor<4x8xf32>
    ptrain.state_write %n to @w0 : tensor<4x8xf32>
    %l = arith.constant dense<0.0> : tensor<f32>
    %lr = ptrain.all_reduce_start %l on @grid axes [pp] reduction = sum : tensor<f32>
    %loss = ptrain.wait %lr : !ptrain.request<tensor<f32>>
    return %loss : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %x = arith.constant dense<0.5> : tensor<4x8xf32>
    %e = ptrain.state_read @e : tensor<4x8xf32>
    %c:2, %e1 = ptrain.compress %x state(%e) {codec = #ptrain.quant<bits = 8, granularity = channel>, error_feedback}
        : tensor<4x8xf32> state(tensor<4x8xf32>) -> (tensor<32xi8>, tensor<8xf32>) state(tensor<4x8xf32>) loc("/stage1/Compress")
    ptrain.state_write %e1 to @e : tensor<4x8xf32>
    %sb = ptrain.send_start %c#0 to @grid axis pp offset -1 {ptrain.tag = 0 : i64} : tensor<32xi8> loc("/stage1/SendCode")
    %ss = ptrain.send_start %c#1 to @grid axis pp offset -1 {ptrain.tag = 1 : i64} : tensor<8xf32> loc("/stage1/SendScales")
    ptrain.wait %sb : !ptrain.request
    ptrain.wait %ss : !ptrain.request
    %l = arith.constant dense<2.0> : tensor<f32>
    %lr = ptrain.all_reduce_start %l on @grid axes [pp] reduction = sum : tensor<f32>
    %loss = ptrain.wait %lr : !ptrain.request<tensor<f32>>
    return %loss : tensor<f32>
  }
  func.func @stage0_eval(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<0>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_eval(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<1>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

// The residual is a state of stage 1 only (it initializes, saves and loads it).
// CHECK: const StateTemplate kStateTemplates[2] = {
// CHECK-NEXT: {"w", "", true, PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, {4, 8},
// CHECK-NEXT: {"pp", "->0/residual", true, PTRAIN_DTYPE_F32, PTRAIN_STATE_CODEC_RESIDUAL, 2, {4, 8},
// CHECK: const int64_t kStage0StateIndicesRanges[2] = {0, 1};
// CHECK: const int64_t kStage1StateIndicesRanges[2] = {1, 1};
// Stage 0: both receives in one NCCL group (the packed bytes as uint8_t), then the decoder on them.
// CHECK-LABEL: ptrain_status_t device_stage0_train({{.*}}) {
// CHECK: uint8_t *[[B:v[0-9]+]] = reinterpret_cast<uint8_t *>(d_arena +
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_set_stream(stream_pp_1_to_0));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_recv(comm_pp_1_to_0, [[B]], 32, 1));
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_recv(comm_pp_1_to_0, [[S:v[0-9]+]], 32, 1));
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_wait_event(comm_pp_1_to_0,
// CHECK: // "/stage0/Decompress"
// CHECK-NEXT: // ptrain.decompress
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_quant_decode_f32({{v[0-9]+}}, {{v[0-9]+}}, nullptr, 4, 8, 8, PTRAIN_QUANT_CHANNEL, 0, 1, {{v[0-9]+}}));
// Stage 1: the encoder with the residual (a device copy of the state, then written back), then both sends.
// CHECK-LABEL: ptrain_status_t device_stage1_train({{.*}}) {
// CHECK: // "/stage1/Compress"
// CHECK-NEXT: // ptrain.compress
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_copy_bytes({{v[0-9]+}}, 128, [[E:v[0-9]+]]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_quant_encode_f32({{v[0-9]+}}, [[E]], 4, 8, 8, PTRAIN_QUANT_CHANNEL, 0, 1, [[CB:v[0-9]+]], [[CS:v[0-9]+]], nullptr));
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_copy_bytes([[E]], 128, reinterpret_cast<float *>(d_states +
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_send(comm_pp_1_to_0, [[CB]], 32, 0));
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_send(comm_pp_1_to_0, [[CS]], 32, 0));

// The channel's connecting byte at init is not the step's traffic: its counters are reset after it.
// CONNECT: if (!channels_connected) {
// CONNECT: PTRAIN_STEP_CALL(ptrain_nccl_wait(comm_pp_1_to_0));
// CONNECT-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_reset_traffic(comm_pp_1_to_0));
// CONNECT: channels_connected = true;

// Traffic per link from the NCCL counters: the pp group's forward, backward and collective links.
// TRAFFIC: const char *const kLinkNames[kNumLinks] = {"pp forward", "pp backward", "pp collectives"};
// TRAFFIC: PTRAIN_STEP_CALL(ptrain_nccl_comm_size(comm_grid_pp, &size));
// TRAFFIC: PTRAIN_STEP_CALL(ptrain_nccl_p2p_traffic(comm_grid_pp, ptrain_stage + 1, &out[0], &out[0 + 1]));
// TRAFFIC: PTRAIN_STEP_CALL(ptrain_nccl_p2p_traffic(comm_grid_pp, ptrain_stage - 1, &out[0 + 2], &out[0 + 3]));
// TRAFFIC: PTRAIN_STEP_CALL(ptrain_nccl_collective_traffic(comm_grid_pp, &out[0 + 4], &out[0 + 5]));
// The pipeline channel's sends (stage 1 -> 0, peer rank 0 of the channel) count on the pp backward link.
// TRAFFIC: if (comm_pp_1_to_0 && ptrain_stage == 1) {
// TRAFFIC: PTRAIN_STEP_CALL(ptrain_nccl_p2p_traffic(comm_pp_1_to_0, 0, &bytes, &messages));
// TRAFFIC-NEXT: out[0 + 2] += bytes;
// TRAFFIC-NEXT: out[0 + 2 + 1] += messages;
// TRAFFIC: extern "C" PTRAIN_STEP_API ptrain_status_t ptrain_step_traffic(int64_t *out_counts) {
// TRAFFIC-NEXT: if (!ptrain_world && !ptrain_bootstrap)
// TRAFFIC: PTRAIN_STEP_CALL(ptrain_rendezvous_all_gather(ptrain_bootstrap, local, sizeof(local), out_counts));
// TRAFFIC: ptrain_all_gather_start(ptrain_world, local, out_counts, 2 * kNumLinks, PTRAIN_DTYPE_I64, &request)
// TRAFFIC: extern "C" PTRAIN_STEP_API ptrain_status_t ptrain_step_reset_traffic(void) {
// TRAFFIC-NEXT: if (!ptrain_world && !ptrain_bootstrap)
// TRAFFIC: PTRAIN_STEP_CALL(ptrain_nccl_reset_traffic(comm_grid_pp));
// TRAFFIC-NEXT: if (comm_pp_1_to_0)
// TRAFFIC-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_reset_traffic(comm_pp_1_to_0));

// Codec telemetry (docs/CodegenCuda.md, "Codec telemetry"): one site per error-feedback residual, the CPU
// target's table and fields; the record helper allocates the site's previous input on the device at its first
// use and measures with the CUDA kernel on the encode's device buffers.
// TELEMETRY: constexpr int64_t kNumCodecSites = 1;
// TELEMETRY: const char *const kCodecSiteNames[kNumCodecSites] = {"pp1->0"};
// TELEMETRY-NOT: codec_site_0_previous_g[
// TELEMETRY: CodecSiteTelemetry codecSites[kNumCodecSites] = {{[{][{]}}nullptr, 32, false, 0, 0, 0, 0, 0, 0{{[}][}]}};
// TELEMETRY-LABEL: ptrain_status_t recordCodecSite(int64_t site, const float *g, const float *residual, const float *newResidual) {
// TELEMETRY: if (!t.previousG) {
// TELEMETRY: PTRAIN_STEP_CALL(ptrain_cuda_malloc(4 * t.numel, &p));
// TELEMETRY: PTRAIN_STEP_CALL(ptrain_cuda_codec_metrics_f32(g, residual, newResidual, nullptr, t.hasPrevious ? t.previousG : nullptr, t.numel,
// TELEMETRY-NEXT: t.previousG, &m));
// TELEMETRY-NOT: ptrain_codec_metrics_f32(
// After stage 1's encode: the input, the old residual (the state in place) and the kernel's new residual.
// TELEMETRY-LABEL: ptrain_status_t device_stage1_train({{.*}}) {
// TELEMETRY: float *[[OLD:v[0-9]+]] = reinterpret_cast<float *>(d_states + 0);
// TELEMETRY: PTRAIN_STEP_CALL(ptrain_cuda_quant_encode_f32([[G:v[0-9]+]], [[NEW:v[0-9]+]],
// TELEMETRY-NEXT: // Codec telemetry of site "pp1->0" (ptrain_step_set_telemetry).
// TELEMETRY-NEXT: if (ptrain_telemetry_mode != 0)
// TELEMETRY-NEXT: PTRAIN_STEP_CALL(recordCodecSite(0, [[G]], [[OLD]], [[NEW]]));
// The entry points ptrain-run calls: sites, mode, and the metrics all-gathered over MPI.
// TELEMETRY: extern "C" PTRAIN_STEP_API int64_t ptrain_step_num_codec_sites(void) { return kNumCodecSites; }
// TELEMETRY: extern "C" PTRAIN_STEP_API const char *ptrain_step_codec_site_name(int64_t site) {
// TELEMETRY: extern "C" PTRAIN_STEP_API ptrain_status_t ptrain_step_set_telemetry(int32_t mode) {
// The metrics gathered over the TCP rendezvous under a torchrun-style launch (ptrain-run's default launcher
// for CUDA plans), else over MPI.
// TELEMETRY: extern "C" PTRAIN_STEP_API ptrain_status_t ptrain_step_codec_telemetry(double *out_metrics) {
// TELEMETRY-NEXT: if (!ptrain_world && !ptrain_bootstrap)
// TELEMETRY: if (ptrain_bootstrap) {
// TELEMETRY-NEXT: PTRAIN_STEP_CALL(ptrain_rendezvous_all_gather(ptrain_bootstrap, local, sizeof(local), out_metrics));
// TELEMETRY-NEXT: return PTRAIN_OK;
// TELEMETRY: PTRAIN_STEP_CALL(ptrain_all_gather_start(ptrain_world, local, out_metrics, kNumCodecSites * kNumCodecFields, PTRAIN_DTYPE_F64, &request));
