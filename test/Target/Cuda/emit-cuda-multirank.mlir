// --emit-cuda of a multi-rank pipeline module (docs/CodegenCuda.md, "Multi-rank steps", "Streams and events"):
// two stages over a dp x pp grid. The NCCL world is made over MPI after the world size check, one communicator
// per (grid, axes) by ncclCommSplit, and one channel per ordered pair of stages (a communicator of the two, split
// from the pp group, and a stream); a send or receive runs on its channel's stream after the compute stream's
// event at the start op, and its wait is the watchdog of that transfer, then the compute stream's wait on the
// transfer's event; a call passes device pointers; ptrain_step_train dispatches on the stage. Then a C++17
// compile of the unit (no device code: no nvcc needed). NCCL matches transfers in posting order (no tags): a
// pair of stages whose send and receive orders differ is an error naming the op.
// RUN: split-file %s %t
// RUN: ptrain-translate --emit-cuda %t/pipeline.mlir -o %t/pipeline.cu
// RUN: ptrain-translate --emit-cuda --emit-cuda-outline=false %t/pipeline.mlir -o %t/pipeline.inline.cu
// RUN: FileCheck %s < %t/pipeline.inline.cu
// RUN: FileCheck %s --check-prefix=TABLE < %t/pipeline.cu
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t/pipeline.cu
// RUN: not grep -q "device_forward(" %t/pipeline.cu
// RUN: not ptrain-translate --emit-cuda %t/order.mlir -o %t/order.cu 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not test -e %t/order.cu
// The emitter's own checks (an unmatched receive here, the stalls and the unwaited send below) run behind the
// plan verifier that --emit-cuda runs first (VerifyPlanBeforeEmit.h), so the plans the verifier also rejects pass
// --emit-verify-plan=false to reach them; without it the deadlock is the verifier's error:
// RUN: not ptrain-translate --emit-cuda --emit-verify-plan=false %t/unmatched.mlir 2>&1 | FileCheck %s --check-prefix=UNMATCHED
// RUN: not ptrain-translate --emit-cuda %t/unmatched.mlir 2>&1 | FileCheck %s --check-prefix=UNMATCHED-VERIFY
// UNMATCHED-VERIFY: error: --ptrain-verify-plan: train step: deadlock: no rank can progress
// Optimus-CC's fused embedding sync over a sub-group (ptrain.subgroup = {pp = [0, 2]} at pp = 3): its own NCCL
// communicator, split at init with no color (-1) on the ranks outside it (stage 1 posts nothing and holds a null
// communicator); the all-reduce on it, and its wait. Stage 1 never reaches the all-reduce: the compile-time
// simulation holds only the members there. A sub-group that would stop (stage 0 waits at the all-reduce for
// stage 2, which waits for a transfer stage 0 starts after it) is still an error naming the all-reduce.
// RUN: ptrain-translate --emit-cuda %t/subgroup.mlir -o %t/subgroup.cu
// RUN: ptrain-translate --emit-cuda --emit-cuda-outline=false %t/subgroup.mlir | FileCheck %s --check-prefix=SUBGROUP
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t/subgroup.cu
// RUN: not ptrain-translate --emit-cuda --emit-verify-plan=false %t/subgroup-stall.mlir 2>&1 | FileCheck %s --check-prefix=SUBSTALL
// GPipe's order (all forward sends, then the backward receives), which one stream per rank could not run: each
// direction has its own channel, so it is emitted (and compiles).
// RUN: ptrain-translate --emit-cuda %t/gpipe.mlir -o %t/gpipe.cu
// RUN: ptrain-translate --emit-cuda --emit-cuda-outline=false %t/gpipe.mlir | FileCheck %s --check-prefix=GPIPE
// RUN: c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t/gpipe.cu
// A schedule that stops under any semantics (each stage waits for its receive before it sends): an error naming
// the transfer and where each stage stops, never a hang.
// RUN: not ptrain-translate --emit-cuda --emit-verify-plan=false %t/stall.mlir -o %t/stall.cu 2>&1 | FileCheck %s --check-prefix=STALL
// RUN: not test -e %t/stall.cu
// One that MPI runs but CUDA cannot: stage 0's all-reduce over pp holds its compute stream, so the send after it
// never starts, while stage 1 waits for that send before its all-reduce.
// RUN: not ptrain-translate --emit-cuda %t/collective.mlir 2>&1 | FileCheck %s --check-prefix=COLLECTIVE
// A send whose request is never waited on: its buffer could be reused while the channel's stream reads it.
// RUN: not ptrain-translate --emit-cuda --emit-verify-plan=false %t/nowait.mlir 2>&1 | FileCheck %s --check-prefix=NOWAIT
// The lowered steps are schedule tables by default (include/ptrain/Target/Common/ScheduleTable.h): the op checks
// read the op-by-op text (--emit-cuda-outline=false), the same calls in the same order; the table form compiles.
// TABLE: static const ScheduleRow kSchedule[

//--- pipeline.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 1>} {
  ptrain.grid @grid(dp = 2, pp = 2)
  ptrain.state @w0 key "w0" kind parameter : tensor<4xf32>
  ptrain.state @w1 key "w1" kind parameter : tensor<4xf32>
  func.func @stage0_forward(%x: tensor<4xf32>) -> tensor<4xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %w = ptrain.state_read @w0 : tensor<4xf32> loc("/stage0/Read")
    %y = ptrain.binary mul %x, %w : tensor<4xf32>, tensor<4xf32> loc("/stage0/Mul")
    return %y : tensor<4xf32>
  }
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<4xf32> loc("/stage0/Input")
    %y = func.call @stage0_forward(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("/stage0/Forward")
    %s = ptrain.send_start %y to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4xf32> loc("/stage0/SendActivation")
    %r = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage0/RecvGradient")
    %g = ptrain.wait %r : !ptrain.request<tensor<4xf32>> loc("/stage0/WaitGradient")
    ptrain.wait %s : !ptrain.request loc("/stage0/WaitActivation")
    %a = ptrain.all_reduce_start %g on @grid axes [dp] reduction = avg : tensor<4xf32> loc("/stage0/GradAllReduce")
    %m = ptrain.wait %a : !ptrain.request<tensor<4xf32>> loc("/stage0/WaitGradAllReduce")
    ptrain.state_write %m to @w0 : tensor<4xf32> loc("/stage0/Update")
    %l = arith.constant dense<0.0> : tensor<f32>
    %lr = ptrain.all_reduce_start %l on @grid axes [pp] reduction = sum : tensor<f32> loc("/stage0/Loss")
    %loss = ptrain.wait %lr : !ptrain.request<tensor<f32>>
    return %loss : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage1/RecvActivation")
    %x = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
    %w = ptrain.state_read @w1 : tensor<4xf32>
    %g = ptrain.binary mul %x, %w : tensor<4xf32>, tensor<4xf32>
    %s = ptrain.send_start %g to @grid axis pp offset -1 {ptrain.tag = 1 : i64} : tensor<4xf32> loc("/stage1/SendGradient")
    ptrain.wait %s : !ptrain.request
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
  // The unsplit model (no ptrain.stage): it reads both stages' states, which no rank holds.
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = ptrain.state_read @w0 : tensor<4xf32>
    %b = ptrain.state_read @w1 : tensor<4xf32>
    %y = ptrain.binary mul %x, %a : tensor<4xf32>, tensor<4xf32>
    %z = ptrain.binary mul %y, %b : tensor<4xf32>, tensor<4xf32>
    return %z : tensor<4xf32>
  }
}

// CHECK: // Entry points: ptrain_step_stage0_forward, ptrain_step_stage0_train, ptrain_step_stage1_train, ptrain_step_stage0_eval, ptrain_step_stage1_eval, ptrain_step_forward, ptrain_step_train, ptrain_step_eval
// The state table as runs of template rows (StateTable.h): w0 and w1 are one template repeated twice.
// CHECK: const StateTemplate kStateTemplates[1] = {
// CHECK-NEXT: {"w", "", true, PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 1, {4}, PTRAIN_STATE_INIT_NONE, 0},
// CHECK: const int64_t kStateRuns[5] = {0, 1, 2, 0, 1};
// Each stage's states by their indices in kStates; a rank copies and holds its stage's states only, each at
// device offset 0 of its stage's d_states (laid out at init by layOutStates).
// CHECK: const int64_t kStage0StateIndicesRanges[2] = {0, 1};
// CHECK: const int64_t kStage1StateIndicesRanges[2] = {1, 1};
// CHECK: ptrain_state_desc_t kStage0States[1] = {};
// CHECK: constexpr int64_t kStage0StateBytes = 256;
// CHECK: ptrain_state_desc_t kStage1States[1] = {};
// CHECK: constexpr int64_t kStage1StateBytes = 256;
// CHECK: constexpr int64_t kStateBytes = 512;
// CHECK-NEXT: int64_t active_state_bytes = kStateBytes;
// The caller's own arena; one NCCL communicator per (grid, axes) a transfer or collective names.
// CHECK: unsigned char *d_arena_stage0_train = nullptr;
// The owned states' offsets in d_states, computed as the emitter laid them out (the stage's bytes checked).
// CHECK-LABEL: ptrain_status_t layOutStates() {
// CHECK: offset = (offset + bytes + 255) / 256 * 256;
// CHECK: if ((offset > 256 ? offset : 256) != active_state_bytes)
// This rank's d_states: its stage's states only (active_state_bytes, set by ptrain_step_init).
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_malloc(active_state_bytes, &p));
// CHECK-NEXT: d_states = static_cast<unsigned char *>(p);
// CHECK: ptrain_comm_t ptrain_world = nullptr;
// CHECK-NEXT: ptrain_rendezvous_t ptrain_bootstrap = nullptr;
// CHECK-NEXT: ptrain_nccl_comm_t nccl_world = nullptr;
// CHECK: constexpr int32_t kWorldSize = 4;
// CHECK: ptrain_nccl_comm_t comm_grid_pp = nullptr;
// CHECK-NEXT: ptrain_nccl_comm_t comm_grid_dp = nullptr;
// CHECK-LABEL: ptrain_status_t createGroup(const bool *in_group, ptrain_nccl_comm_t *out) {
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_comm_split(nccl_world, color, ptrain_rank, out));
// A rank allocates the host mirrors of its stage's states only, then lays them out.
// CHECK-LABEL: ptrain_status_t allocateMirrors() {
// CHECK: case 0:
// CHECK-NEXT: PTRAIN_STEP_CALL(allocateStates(kStage0StateIndices, kNumStage0States, kStage0States, storage_state_bytes));
// CHECK: case 1:
// CHECK-NEXT: PTRAIN_STEP_CALL(allocateStates(kStage1StateIndices, kNumStage1States, kStage1States, storage_state_bytes));
// CHECK: return layOutStates();
// The device functions: the callee on the shared arena, the caller on its own; the call on device pointers.
// CHECK-LABEL: ptrain_status_t device_stage0_forward(const float *d_arg0, float *d_out_0) {
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_copy_bytes({{v[0-9]+}}, 16, d_out_0));
// CHECK-LABEL: ptrain_status_t device_stage0_train(const int64_t *d_arg0, float *d_out_0) {
// CHECK-NEXT: (void)d_arg0;
// CHECK: // "/stage0/Forward"
// CHECK-NEXT: // func.call
// CHECK-NEXT: float *[[Y:v[0-9]+]] = reinterpret_cast<float *>(d_arena_stage0_train + {{[0-9]+}});
// CHECK: PTRAIN_STEP_CALL(device_stage0_forward({{v[0-9]+}}, [[Y]]));
// The send and the receive of stage 0, each on its channel's stream after the compute stream's event.
// CHECK: // "/stage0/SendActivation"
// CHECK-NEXT: // ptrain.send_start
// CHECK-NEXT: {
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_event_record(ev_posted[0], stream));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_stream_wait_event(stream_pp_0_to_1, ev_posted[0]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_set_stream(stream_pp_0_to_1));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_send(comm_pp_0_to_1, [[Y]], 16, 1));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_event_record(ev_done[0], stream_pp_0_to_1));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_set_stream(stream));
// CHECK-NEXT: }
// CHECK: // "/stage0/RecvGradient"
// CHECK-NEXT: // ptrain.recv_start
// CHECK-NEXT: float *[[G:v[0-9]+]] = reinterpret_cast<float *>(d_arena_stage0_train + {{[0-9]+}});
// CHECK-NEXT: {
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_event_record(ev_posted[1], stream));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_stream_wait_event(stream_pp_1_to_0, ev_posted[1]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_set_stream(stream_pp_1_to_0));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_recv(comm_pp_1_to_0, [[G]], 16, 1));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_event_record(ev_done[1], stream_pp_1_to_0));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_set_stream(stream));
// No NCCL group in the step: each transfer is posted alone on its stream.
// CHECK-NOT: ptrain_nccl_group_start
// The waits: the watchdog over the one transfer (named with its location), then the compute stream's wait.
// CHECK: // "/stage0/WaitGradient"
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_wait_event(comm_pp_1_to_0, ev_done[1], "the receive of 16 bytes (tag 1) from stage 1 at \"/stage0/RecvGradient\""));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_stream_wait_event(stream, ev_done[1]));
// CHECK: // "/stage0/WaitActivation"
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_wait_event(comm_pp_0_to_1, ev_done[0], "the send of 16 bytes (tag 0) to stage 1 at \"/stage0/SendActivation\""));
// CHECK: // "/stage0/GradAllReduce"
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_all_reduce(comm_grid_dp, {{v[0-9]+}}, {{v[0-9]+}}, 4, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_AVG));
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_wait(comm_grid_dp));
// Stage 1 receives from stage 0 (rank 0 of the channel's two) and sends back on the other channel.
// CHECK-LABEL: ptrain_status_t device_stage1_train(
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_recv(comm_pp_0_to_1, {{v[0-9]+}}, 16, 0));
// Stage 1's w1 at offset 0 of its own d_states.
// CHECK: float *{{v[0-9]+}} = reinterpret_cast<float *>(d_states + 0);
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_send(comm_pp_1_to_0, {{v[0-9]+}}, 16, 0));
// ptrain_step_init: MPI and the world size before any device call, the device check, the NCCL world, groups.
// CHECK-LABEL: ptrain_status_t ptrain_step_init(const char *weights_onnx_path) {
// A torchrun-style launch: the rendezvous, its world size checked before any device call, NCCL's id over it.
// CHECK: if (std::getenv("RANK") && std::getenv("WORLD_SIZE") && !std::getenv("OMPI_COMM_WORLD_SIZE")) {
// CHECK: PTRAIN_STEP_CALL(ptrain_rendezvous_init_env(0.0, &rendezvous));
// CHECK: return stepError("ptrain_step_init: the step was compiled for 4 ranks (grid @grid) but WORLD_SIZE is %d; launch it with torchrun --nproc-per-node 4 (one process per GPU)"
// CHECK: PTRAIN_STEP_CALL(checkDevice());
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_comm_init_rendezvous(ptrain_bootstrap, &nccl_world));
// Else mpirun's MPI_COMM_WORLD.
// CHECK: PTRAIN_STEP_CALL(ptrain_comm_init(&world));
// CHECK: return stepError("ptrain_step_init: the step was compiled for 4 ranks (grid @grid) but MPI_COMM_WORLD has %d;
// CHECK: PTRAIN_STEP_CALL(checkDevice());
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_comm_init(ptrain_world, &nccl_world));
// CHECK: static const bool in_group[kGridRank] = {false, true};
// CHECK-NEXT: PTRAIN_STEP_CALL(createGroup(in_group, &comm_grid_pp));
// CHECK: static const bool in_group[kGridRank] = {true, false};
// CHECK-NEXT: PTRAIN_STEP_CALL(createGroup(in_group, &comm_grid_dp));
// CHECK: ptrain_stage = static_cast<int32_t>(gridCoordinate(ptrain_rank, 1));
// The channels: split from the pp group (the two stages in it, the others none), a stream each, the events.
// CHECK-NEXT: // The pipeline's channels, split from comm_grid_pp
// CHECK: PTRAIN_STEP_CALL(ptrain_nccl_comm_split(comm_grid_pp, ptrain_stage == 0 || ptrain_stage == 1 ? 0 : -1, ptrain_stage, &comm_pp_0_to_1));
// CHECK-NEXT: if (comm_pp_0_to_1)
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_stream_create(&stream_pp_0_to_1));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_comm_split(comm_grid_pp, ptrain_stage == 1 || ptrain_stage == 0 ? 0 : -1, ptrain_stage, &comm_pp_1_to_0));
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_event_create(&ev_posted[k]));
// CHECK: active_states = kStage1States;
// CHECK-NEXT: num_active_states = kNumStage1States;
// CHECK-NEXT: active_state_bytes = kStage1StateBytes;
// CHECK: PTRAIN_STEP_CALL(setUpDevice(ptrain_stage));
// Connected before the first step: one NCCL group of 1-byte transfers over every channel of this rank.
// CHECK: if (!channels_connected) {
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_group_start());
// CHECK-NEXT: if (comm_pp_0_to_1)
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_stage == 0 ? ptrain_nccl_send(comm_pp_0_to_1, d_io + 0, 1, 1) : ptrain_nccl_recv(comm_pp_0_to_1, d_io + 0, 1, 0));
// CHECK-NEXT: if (comm_pp_1_to_0)
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_stage == 1 ? ptrain_nccl_send(comm_pp_1_to_0, d_io + 1, 1, 0) : ptrain_nccl_recv(comm_pp_1_to_0, d_io + 1, 1, 1));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_group_end());
// CHECK: PTRAIN_STEP_CALL(ptrain_state_init_onnx(active_states, num_active_states, path));
// CHECK-NEXT: PTRAIN_STEP_CALL(pushStates());
// CHECK-LABEL: ptrain_status_t ptrain_step_finalize(void) {
// CHECK: ptrain_cuda_event_destroy(ev_done[k])
// CHECK: ptrain_nccl_comm_destroy(comm_pp_1_to_0)
// CHECK: ptrain_nccl_comm_destroy(comm_pp_0_to_1)
// CHECK: ptrain_nccl_comm_destroy(comm_grid_dp)
// CHECK: ptrain_nccl_comm_destroy(comm_grid_pp)
// CHECK: ptrain_nccl_comm_destroy(nccl_world)
// The streams after every communicator: the channels', then the compute stream.
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_stream_destroy(stream_pp_1_to_0));
// CHECK-NEXT: stream_pp_1_to_0 = nullptr;
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_stream_destroy(stream_pp_0_to_1));
// CHECK-NEXT: stream_pp_0_to_1 = nullptr;
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_stream_destroy(stream));
// CHECK-NEXT: stream = nullptr;
// CHECK: ptrain_rendezvous_destroy(ptrain_bootstrap)
// CHECK: ptrain_comm_destroy(ptrain_world)
// CHECK-LABEL: ptrain_status_t ptrain_step_abort(int32_t error_code) {
// CHECK: ptrain_comm_abort(ptrain_world, error_code)
// The host entry point: tokens through d_io, the device function, the loss back to the host.
// CHECK-LABEL: ptrain_status_t ptrain_step_stage1_train(const int64_t *arg0, float *out_0) {
// CHECK-NEXT: PTRAIN_STEP_CALL(enterStep("ptrain_step_stage1_train"));
// CHECK-NEXT: int64_t *d_arg0 = reinterpret_cast<int64_t *>(d_io + 0);
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(arg0, 32, d_arg0));
// CHECK-NEXT: float *d_out_0 = reinterpret_cast<float *>(d_io + 256);
// CHECK-NEXT: PTRAIN_STEP_CALL(device_stage1_train(d_arg0, d_out_0));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_host(d_out_0, 4, out_0));
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_check_indices());
// The unsplit @forward (no stage) on a pipeline rank: no device function (no rank holds both states), and its
// entry point is an error naming what to run instead.
// CHECK-LABEL: ptrain_status_t ptrain_step_forward(const float *arg0, float *out_0) {
// CHECK-NEXT: (void)arg0;
// CHECK-NEXT: (void)out_0;
// CHECK-NEXT: return stepError("ptrain_step_forward: @forward uses the states of every pipeline stage, but a rank of this pipeline holds only its stage's on the device; run ptrain_step_train / ptrain_step_eval, or export the weights (ptrain-export) for the whole model");
// CHECK-LABEL: ptrain_status_t ptrain_step_train(const int64_t *tokens, float *out_loss) {
// CHECK: case 1:
// CHECK-NEXT: return ptrain_step_stage1_train(tokens, out_loss);

//--- order.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 2>} {
  ptrain.grid @grid(pp = 2)
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<4xf32>
    %a = ptrain.send_start %x to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4xf32> loc("/stage0/Send0")
    %b = ptrain.send_start %x to @grid axis pp offset 1 {ptrain.tag = 2 : i64} : tensor<4xf32> loc("/stage0/Send2")
    ptrain.wait %a : !ptrain.request
    ptrain.wait %b : !ptrain.request
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %a = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 2 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage1/Recv2")
    %b = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage1/Recv0")
    %x = ptrain.wait %a : !ptrain.request<tensor<4xf32>>
    %y = ptrain.wait %b : !ptrain.request<tensor<4xf32>>
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
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
// ORDER: error: loc("/stage0/Send0"): --emit-cuda: NCCL matches point-to-point transfers in posting order (it has no tags), but in the train step stage 0 sends the tags [0, 2] to stage 1, which receives [2, 0]; reorder the transfers or compile with --target cpu

//--- unmatched.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 1>} {
  ptrain.grid @grid(pp = 2)
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %a = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage1/Recv")
    %x = ptrain.wait %a : !ptrain.request<tensor<4xf32>>
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
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
// UNMATCHED: error: loc("/stage1/Recv"): --emit-cuda: in the train step stage 1 receives from stage 0, which sends it nothing

//--- subgroup.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 3, stages = [@stage0_train, @stage1_train, @stage2_train], micro_batches = 1>} {
  ptrain.grid @grid(pp = 3)
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %w = arith.constant dense<1.0> : tensor<4xf32>
    %r = ptrain.all_reduce_start %w on @grid axes [pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 2>}} : tensor<4xf32> loc("/stage0/FusedEmbeddingSync")
    %s = ptrain.wait %r : !ptrain.request<tensor<4xf32>> loc("/stage0/WaitSync")
    %x = ptrain.send_start %s to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4xf32> loc("/stage0/Send")
    ptrain.wait %x : !ptrain.request
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage1/Recv")
    %x = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage2_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<2>} {
    %w = arith.constant dense<2.0> : tensor<4xf32>
    %r = ptrain.all_reduce_start %w on @grid axes [pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 2>}} : tensor<4xf32> loc("/stage2/FusedEmbeddingSync")
    %s = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage0_eval(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<0>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_eval(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<1>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage2_eval(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<2>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}
// SUBGROUP: ptrain_nccl_comm_t comm_grid_pp_pp_0_2 = nullptr;
// SUBGROUP: ptrain_status_t createGroup(const bool *in_group, ptrain_nccl_comm_t *out, int32_t sub_axis = -1,
// SUBGROUP-NEXT: const int64_t *sub_members = nullptr, int32_t num_sub = 0) {
// SUBGROUP-NEXT: bool member = sub_axis < 0;
// SUBGROUP-NEXT: for (int32_t i = 0; i < num_sub; ++i)
// SUBGROUP-NEXT: member = member || gridCoordinate(ptrain_rank, sub_axis) == sub_members[i];
// SUBGROUP: PTRAIN_STEP_CALL(ptrain_nccl_comm_split(nccl_world, member ? color : -1, ptrain_rank, out));
// SUBGROUP-LABEL: ptrain_status_t device_stage0_train({{.*}}) {
// SUBGROUP: // "/stage0/FusedEmbeddingSync"
// SUBGROUP-NEXT: // ptrain.all_reduce_start
// SUBGROUP-NEXT: float *[[R:v[0-9]+]] = reinterpret_cast<float *>(d_arena + {{[0-9]+}});
// SUBGROUP-NEXT: {
// SUBGROUP-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_all_reduce(comm_grid_pp_pp_0_2, {{v[0-9]+}}, [[R]], 4, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM));
// SUBGROUP: // "/stage0/WaitSync"
// SUBGROUP-NEXT: // ptrain.wait
// SUBGROUP-NEXT: float *{{v[0-9]+}} = const_cast<float *>([[R]]);
// SUBGROUP-NEXT: {
// SUBGROUP-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_wait(comm_grid_pp_pp_0_2));
// SUBGROUP-LABEL: ptrain_status_t device_stage1_train({{.*}}) {
// SUBGROUP-NOT: comm_grid_pp_pp_0_2
// SUBGROUP-LABEL: ptrain_status_t device_stage2_train({{.*}}) {
// SUBGROUP: PTRAIN_STEP_CALL(ptrain_nccl_all_reduce(comm_grid_pp_pp_0_2, {{.*}}, 4, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM));
// The groups at init: the subgroup with its axis and members, the pp group (the channels' parent).
// SUBGROUP-LABEL: extern "C" PTRAIN_STEP_API ptrain_status_t ptrain_step_init(
// SUBGROUP: static const int64_t members[] = {0, 2};
// SUBGROUP-NEXT: PTRAIN_STEP_CALL(createGroup(in_group, &comm_grid_pp_pp_0_2, 0, members, 2));
// SUBGROUP: PTRAIN_STEP_CALL(createGroup(in_group, &comm_grid_pp));
// SUBGROUP-LABEL: ptrain_step_finalize(void) {
// SUBGROUP: if (comm_grid_pp_pp_0_2) {
// SUBGROUP-NEXT: PTRAIN_STEP_CALL(ptrain_nccl_comm_destroy(comm_grid_pp_pp_0_2));

//--- subgroup-stall.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 3, stages = [@stage0_train, @stage1_train, @stage2_train], micro_batches = 1>} {
  ptrain.grid @grid(pp = 3)
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %w = arith.constant dense<1.0> : tensor<4xf32>
    %r = ptrain.all_reduce_start %w on @grid axes [pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 2>}} : tensor<4xf32> loc("/stage0/FusedEmbeddingSync")
    %s = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
    %x = ptrain.send_start %s to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4xf32> loc("/stage0/Send")
    ptrain.wait %x : !ptrain.request
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage1/Recv")
    %x = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
    %s = ptrain.send_start %x to @grid axis pp offset 1 {ptrain.tag = 1 : i64} : tensor<4xf32> loc("/stage1/Send")
    ptrain.wait %s : !ptrain.request
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage2_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<2>} {
    %q = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage2/Recv")
    %y = ptrain.wait %q : !ptrain.request<tensor<4xf32>> loc("/stage2/WaitRecv")
    %r = ptrain.all_reduce_start %y on @grid axes [pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 2>}} : tensor<4xf32> loc("/stage2/FusedEmbeddingSync")
    %s = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage0_eval(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<0>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_eval(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<1>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage2_eval(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "eval", ptrain.stage = #ptrain.stage<2>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}
// SUBSTALL: error: loc("/stage0/FusedEmbeddingSync"): --emit-cuda: in the train step the pipeline would stop on NCCL: stage 0 waits at this all-reduce over pp for stages that never reach it
// SUBSTALL: note: loc("/stage2/WaitRecv"): stage 2 stops here

//--- gpipe.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 4>} {
  ptrain.grid @grid(pp = 2)
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<4xf32>
    %x0 = ptrain.unary neg %x : tensor<4xf32>
    %s0 = ptrain.send_start %x0 to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4xf32> loc("/stage0/SendActivation0")
    %x1 = ptrain.unary neg %x : tensor<4xf32>
    %s1 = ptrain.send_start %x1 to @grid axis pp offset 1 {ptrain.tag = 2 : i64} : tensor<4xf32> loc("/stage0/SendActivation1")
    %x2 = ptrain.unary neg %x : tensor<4xf32>
    %s2 = ptrain.send_start %x2 to @grid axis pp offset 1 {ptrain.tag = 4 : i64} : tensor<4xf32> loc("/stage0/SendActivation2")
    %x3 = ptrain.unary neg %x : tensor<4xf32>
    %s3 = ptrain.send_start %x3 to @grid axis pp offset 1 {ptrain.tag = 6 : i64} : tensor<4xf32> loc("/stage0/SendActivation3")
    %r0 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage0/RecvGradient0")
    %g0 = ptrain.wait %r0 : !ptrain.request<tensor<4xf32>>
    %r1 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 3 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage0/RecvGradient1")
    %g1 = ptrain.wait %r1 : !ptrain.request<tensor<4xf32>>
    %r2 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 5 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage0/RecvGradient2")
    %g2 = ptrain.wait %r2 : !ptrain.request<tensor<4xf32>>
    %r3 = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 7 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage0/RecvGradient3")
    %g3 = ptrain.wait %r3 : !ptrain.request<tensor<4xf32>>
    ptrain.wait %s0 : !ptrain.request
    ptrain.wait %s1 : !ptrain.request
    ptrain.wait %s2 : !ptrain.request
    ptrain.wait %s3 : !ptrain.request
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %r0 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>>
    %a0 = ptrain.wait %r0 : !ptrain.request<tensor<4xf32>>
    %y0 = ptrain.unary neg %a0 : tensor<4xf32>
    %s0 = ptrain.send_start %y0 to @grid axis pp offset -1 {ptrain.tag = 1 : i64} : tensor<4xf32>
    %r1 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 2 : i64} : !ptrain.request<tensor<4xf32>>
    %a1 = ptrain.wait %r1 : !ptrain.request<tensor<4xf32>>
    %y1 = ptrain.unary neg %a1 : tensor<4xf32>
    %s1 = ptrain.send_start %y1 to @grid axis pp offset -1 {ptrain.tag = 3 : i64} : tensor<4xf32>
    %r2 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 4 : i64} : !ptrain.request<tensor<4xf32>>
    %a2 = ptrain.wait %r2 : !ptrain.request<tensor<4xf32>>
    %y2 = ptrain.unary neg %a2 : tensor<4xf32>
    %s2 = ptrain.send_start %y2 to @grid axis pp offset -1 {ptrain.tag = 5 : i64} : tensor<4xf32>
    %r3 = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 6 : i64} : !ptrain.request<tensor<4xf32>>
    %a3 = ptrain.wait %r3 : !ptrain.request<tensor<4xf32>>
    %y3 = ptrain.unary neg %a3 : tensor<4xf32>
    %s3 = ptrain.send_start %y3 to @grid axis pp offset -1 {ptrain.tag = 7 : i64} : tensor<4xf32>
    ptrain.wait %s0 : !ptrain.request
    ptrain.wait %s1 : !ptrain.request
    ptrain.wait %s2 : !ptrain.request
    ptrain.wait %s3 : !ptrain.request
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
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
// GPIPE: ptrain_nccl_comm_t comm_pp_0_to_1 = nullptr;
// GPIPE: ptrain_nccl_comm_t comm_pp_1_to_0 = nullptr;
// GPIPE: constexpr int32_t kNumTransferEvents = 16;
// The four activation sends of stage 0 on one channel, in program order, before the first gradient receive.
// GPIPE-LABEL: ptrain_status_t device_stage0_train(
// GPIPE: // "/stage0/SendActivation0"
// GPIPE: ptrain_nccl_send(comm_pp_0_to_1,
// GPIPE: // "/stage0/SendActivation3"
// GPIPE: ptrain_nccl_send(comm_pp_0_to_1,
// GPIPE: // "/stage0/RecvGradient0"
// GPIPE: PTRAIN_STEP_CALL(ptrain_cuda_stream_wait_event(stream_pp_1_to_0, ev_posted[4]));
// GPIPE: ptrain_nccl_recv(comm_pp_1_to_0,
// GPIPE: ptrain_nccl_wait_event(comm_pp_1_to_0, ev_done[4], "the receive of 16 bytes (tag 1) from stage 1 at \"/stage0/RecvGradient0\"")

//--- stall.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 1>} {
  ptrain.grid @grid(pp = 2)
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %r = ptrain.recv_start from @grid axis pp offset 1 {ptrain.tag = 1 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage0/RecvGradient")
    %g = ptrain.wait %r : !ptrain.request<tensor<4xf32>> loc("/stage0/WaitGradient")
    %s = ptrain.send_start %g to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4xf32> loc("/stage0/SendActivation")
    ptrain.wait %s : !ptrain.request
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage1/RecvActivation")
    %x = ptrain.wait %r : !ptrain.request<tensor<4xf32>> loc("/stage1/WaitActivation")
    %s = ptrain.send_start %x to @grid axis pp offset -1 {ptrain.tag = 1 : i64} : tensor<4xf32> loc("/stage1/SendGradient")
    ptrain.wait %s : !ptrain.request
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
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
// STALL: error: loc("/stage0/RecvGradient"): --emit-cuda: in the train step the pipeline would stop on NCCL: stage 0 waits for this receive (tag 1), which never completes; on CUDA a transfer starts on its channel's stream only when the compute stream reached its start op
// STALL: note: loc("/stage0/WaitGradient"): stage 0 waits here
// STALL: note: loc("/stage1/WaitActivation"): stage 1 stops here

//--- collective.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 1>} {
  ptrain.grid @grid(pp = 2)
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %l = arith.constant dense<0.0> : tensor<f32>
    %lr = ptrain.all_reduce_start %l on @grid axes [pp] reduction = sum : tensor<f32> loc("/stage0/Loss")
    %x = arith.constant dense<1.0> : tensor<4xf32>
    %s = ptrain.send_start %x to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4xf32> loc("/stage0/SendActivation")
    ptrain.wait %s : !ptrain.request loc("/stage0/WaitActivation")
    %loss = ptrain.wait %lr : !ptrain.request<tensor<f32>>
    return %loss : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>> loc("/stage1/RecvActivation")
    %x = ptrain.wait %r : !ptrain.request<tensor<4xf32>> loc("/stage1/WaitActivation")
    %l = arith.constant dense<2.0> : tensor<f32>
    %lr = ptrain.all_reduce_start %l on @grid axes [pp] reduction = sum : tensor<f32> loc("/stage1/Loss")
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
// COLLECTIVE: error: loc("/stage0/Loss"): --emit-cuda: in the train step the pipeline would stop on NCCL: stage 0 waits at this all-reduce over pp for stages that never reach it; on CUDA
// COLLECTIVE: note: loc("/stage1/WaitActivation"): stage 1 stops here

//--- nowait.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@stage0_train, @stage1_train], micro_batches = 1>} {
  ptrain.grid @grid(pp = 2)
  func.func @stage0_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>} {
    %x = arith.constant dense<1.0> : tensor<4xf32>
    %s = ptrain.send_start %x to @grid axis pp offset 1 {ptrain.tag = 0 : i64} : tensor<4xf32> loc("/stage0/SendActivation")
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage1_train(%t: tensor<1x4xi64>) -> tensor<f32> attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
    %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<4xf32>>
    %x = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
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
// NOWAIT: error: loc("/stage0/SendActivation"): --emit-cuda: this transfer's request is never waited on (ptrain.wait) in @stage0_train: its buffer could be reused while the pipeline channel's stream still reads or writes it
