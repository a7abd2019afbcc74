// RUN: split-file %s %t
// RUN: ptrain-opt --ptrain-lower-to-runtime %t/pp2.mlir | ptrain-translate --emit-cpp -o %t/pp2.cpp
// RUN: FileCheck %s --input-file %t/pp2.cpp
// RUN: c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I%S/../../../include %t/pp2.cpp
// RUN: not ptrain-translate --emit-cpp %t/pp2.mlir 2>&1 | FileCheck %s --check-prefix=NOTLOWERED

// A two-stage pipeline (stage functions reduced to copies) scheduled 1F1B with two micro-batches and lowered by
// --ptrain-lower-to-runtime: the all-reduce, sends, receives and waits become runtime calls on the pp
// communicator, calls of stage functions become calls of their entry points, and ptrain_step_train/eval
// dispatch to this rank's lowered step.
// A stage's states are their indices in kStates, data; its table of descriptors is filled when they are
// allocated.
// The list is ranges (start, length), expanded with the state table at load (StateTable.h).
// CHECK: const int64_t kStage0StateIndicesRanges[2] = {0, 2};
// CHECK-NEXT: int64_t kStage0StateIndices[2] = {};
// CHECK: kStage0StateIndices[k++] = kStage0StateIndicesRanges[r] + j;
// CHECK: constexpr int64_t kNumStage0States = 2;
// CHECK-NEXT: ptrain_state_desc_t kStage0States[2] = {};
// CHECK-LABEL: ptrain_status_t allocateStage0Storage() {
// CHECK-NEXT: PTRAIN_STEP_CALL(allocateStates(kStage0StateIndices, kNumStage0States, kStage0States, storage_state_bytes));
// CHECK-LABEL: ptrain_status_t ptrain_step_init(
// CHECK: PTRAIN_STEP_CALL(ptrain_comm_init(&world));
// CHECK: return stepError("ptrain_step_init: the step was compiled for 2 ranks (grid @grid) but MPI_COMM_WORLD has %d
// CHECK: PTRAIN_STEP_CALL(createGroup(in_group, &comm_grid_pp));
// CHECK: active_states = kStage0States;
// CHECK-LABEL: ptrain_status_t ptrain_step_stage0_optimizer_step(void) {
// CHECK: ptrain_request_t [[REQ:v[0-9]+]]_request = nullptr;
// CHECK: PTRAIN_STEP_CALL(ptrain_all_reduce_start(comm_grid_pp, {{v[0-9]+}}, [[REQ]], 16, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &[[REQ]]_request));
// CHECK: PTRAIN_STEP_CALL(ptrain_wait(request));
// Stage 0: F0 F1 B0 B1 O, as data (include/ptrain/Target/Common/ScheduleTable.h): a row per op (its case, the
// integers that differ: arena offsets, tags, request slots), a case per distinct op. The forward's send is waited
// on before its backward.
// CHECK-LABEL: ptrain_status_t ptrain_step_stage0_train_step(const int64_t *arg0, float *out_0) {
// CHECK: static const ScheduleRow kSchedule[18] = {
// CHECK-NEXT: {[[SLICE:[0-9]+]], {0, [[T0:[0-9]+]]}}, // ptrain.slice
// CHECK-NEXT: {[[FWD:[0-9]+]], {[[T0]], [[OUT0:[0-9]+]]}}, // func.call ptrain_step_forward_stage0
// CHECK-NEXT: {[[SEND:[0-9]+]], {[[OUT0]], 0, [[S0:[0-9]+]]}}, // ptrain.send_start
// CHECK-NEXT: {[[SLICE]], {1, [[T1:[0-9]+]]}}, // ptrain.slice
// CHECK-NEXT: {[[FWD]], {[[T1]], [[OUT1:[0-9]+]]}}, // func.call ptrain_step_forward_stage0
// CHECK-NEXT: {[[SEND]], {[[OUT1]], 2, [[S1:[0-9]+]]}}, // ptrain.send_start
// CHECK-NEXT: {[[RECV:[0-9]+]], {[[DOUT:[0-9]+]], 1, [[R0:[0-9]+]]}}, // ptrain.recv_start
// CHECK-NEXT: {[[WAIT:[0-9]+]], {[[R0]]}}, // ptrain.wait
// CHECK-NEXT: {[[WAIT]], {[[S0]]}}, // ptrain.wait
// CHECK-NEXT: {[[BWD:[0-9]+]], {[[T0]], [[DOUT]]}}, // func.call ptrain_step_stage0_backward
// CHECK-NEXT: {[[RECV]], {{{[0-9]+}}, 3, [[R1:[0-9]+]]}}, // ptrain.recv_start
// CHECK-NEXT: {[[WAIT]], {[[R1]]}}, // ptrain.wait
// CHECK-NEXT: {[[WAIT]], {[[S1]]}}, // ptrain.wait
// CHECK-NEXT: {[[BWD]], {[[T1]], {{[0-9]+}}}}, // func.call ptrain_step_stage0_backward
// CHECK-NEXT: func.call ptrain_step_stage0_optimizer_step
// CHECK-NEXT: ptrain.all_reduce_start
// CHECK-NEXT: {[[WAIT]],
// CHECK-NEXT: func.return
// CHECK-NEXT: };
// CHECK-NEXT: ptrain_request_t ptrain_schedule_requests[5] = {};
// CHECK-NEXT: for (const ScheduleRow &row : kSchedule) {
// CHECK-NEXT: switch (row.op) {
// The slice's offset is a field: its array is no longer static.
// CHECK: case [[SLICE]]: {
// CHECK: const int64_t offsets[2] = {row.arg[0], 0};
// CHECK: PTRAIN_STEP_CALL(ptrain_slice(arg0, 8, 2, dims, offsets, out_dims, (reinterpret_cast<int64_t *>(ptrain_arena_stage0_train_step + row.arg[1]))));
// CHECK: case [[FWD]]: {
// CHECK: PTRAIN_STEP_CALL(ptrain_step_forward_stage0((reinterpret_cast<int64_t *>(ptrain_arena_stage0_train_step + row.arg[0])), (reinterpret_cast<float *>(ptrain_arena_stage0_train_step + row.arg[1]))));
// CHECK: case [[SEND]]: {
// CHECK: PTRAIN_STEP_CALL(ptrain_send_start(comm_grid_pp, (reinterpret_cast<float *>(ptrain_arena_stage0_train_step + row.arg[0])), 64, 1, row.arg[1], &ptrain_schedule_requests[row.arg[2]]));
// CHECK: case [[RECV]]: {
// CHECK: PTRAIN_STEP_CALL(ptrain_recv_start(comm_grid_pp, (reinterpret_cast<float *>(ptrain_arena_stage0_train_step + row.arg[0])), 64, 1, row.arg[1], &ptrain_schedule_requests[row.arg[2]]));
// CHECK: case [[WAIT]]: {
// CHECK: ptrain_request_t request = ptrain_schedule_requests[row.arg[0]];
// CHECK-NEXT: ptrain_schedule_requests[row.arg[0]] = nullptr;
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_wait(request));
// CHECK: PTRAIN_STEP_CALL(ptrain_step_stage0_optimizer_step());
// CHECK: PTRAIN_STEP_CALL(ptrain_all_reduce_start(comm_grid_pp, {{constant_[0-9]+}}, (reinterpret_cast<float *>(ptrain_arena_stage0_train_step + 0)), 1, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM,
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes((reinterpret_cast<float *>(ptrain_arena_stage0_train_step + 0)), 4, out_0));
// Stage 1: FB0 FB1 O; the loss sum and the gradients' sends.
// CHECK-LABEL: ptrain_status_t ptrain_step_stage1_train_step(const int64_t *arg0, float *out_0) {
// CHECK: {[[RECV1:[0-9]+]], {0}}, // ptrain.recv_start
// CHECK-NEXT: {[[WAIT1:[0-9]+]], {0}}, // ptrain.wait
// CHECK-NEXT: ptrain.slice
// CHECK-NEXT: func.call ptrain_step_stage1_forward_backward
// CHECK-NEXT: ptrain.send_start
// CHECK: func.call ptrain_step_stage1_optimizer_step
// CHECK: case [[RECV1]]: {
// CHECK: PTRAIN_STEP_CALL(ptrain_recv_start(comm_grid_pp, (reinterpret_cast<float *>(ptrain_arena_stage1_train_step + 0)), 64, 0, row.arg[0], &ptrain_schedule_requests[row.arg[0]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_send_start(comm_grid_pp, (reinterpret_cast<float *>(ptrain_arena_stage1_train_step + row.arg[0])), 64, 0, row.arg[1], &ptrain_schedule_requests[row.arg[1]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_step_stage1_optimizer_step());
// CHECK: PTRAIN_STEP_CALL(ptrain_all_reduce_start(comm_grid_pp,
// CHECK-LABEL: ptrain_step_train(const int64_t *tokens, float *out_loss) {
// CHECK: return ptrain_step_stage0_train_step(tokens, out_loss);
// CHECK: return ptrain_step_stage1_train_step(tokens, out_loss);
// CHECK-LABEL: ptrain_step_eval(const int64_t *tokens, float *out_loss) {
// CHECK: return ptrain_step_stage1_eval_step(tokens, out_loss);

// A scheduled but not lowered module is refused.
// NOTLOWERED: error: --emit-cpp: the pipeline module has no train step of stage 0 (a function with ptrain.entry = "train"); run --ptrain-lower-to-runtime before --emit-cpp

//--- pp2.mlir
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>,
    ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @w key "w" kind parameter : tensor<1x4x4xf32>
  ptrain.state @w.grad key "w/grad" kind gradient : tensor<1x4x4xf32>
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x4xf32> attributes {ptrain.stage = #ptrain.stage<0>} {
    %w = ptrain.state_read @w : tensor<1x4x4xf32>
    return %w : tensor<1x4x4xf32>
  }
  func.func @stage0_backward(%t: tensor<1x4xi64>, %d: tensor<1x4x4xf32>) attributes {ptrain.stage = #ptrain.stage<0>} {
    ptrain.state_write %d to @w.grad : tensor<1x4x4xf32>
    return
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = #ptrain.stage<0>} {
    %g = ptrain.state_read @w.grad : tensor<1x4x4xf32>
    %r = ptrain.all_reduce_start %g on @grid axes [pp] reduction = sum : tensor<1x4x4xf32>
    %s = ptrain.wait %r : !ptrain.request<tensor<1x4x4xf32>>
    ptrain.state_write %s to @w : tensor<1x4x4xf32>
    return
  }
  func.func @forward_stage1(%h: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {ptrain.stage = #ptrain.stage<1>} {
    return %h : tensor<1x4x4xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<1x4x4xf32>, %t: tensor<1x4xi64>) -> (tensor<f32>, tensor<1x4x4xf32>)
      attributes {ptrain.stage = #ptrain.stage<1>} {
    %l = arith.constant dense<1.0> : tensor<f32>
    return %l, %h : tensor<f32>, tensor<1x4x4xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = #ptrain.stage<1>} {
    %g = ptrain.state_read @w.grad : tensor<1x4x4xf32>
    %r = ptrain.all_reduce_start %g on @grid axes [pp] reduction = sum : tensor<1x4x4xf32>
    %s = ptrain.wait %r : !ptrain.request<tensor<1x4x4xf32>>
    ptrain.state_write %s to @w : tensor<1x4x4xf32>
    return
  }
}

