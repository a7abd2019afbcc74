// RUN: split-file %s %t
// RUN: ptrain-translate --emit-cpp %t/pp2.mlir -o %t/pp2.cpp
// RUN: FileCheck %s --input-file %t/pp2.cpp
// RUN: c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I%S/../../../include %t/pp2.cpp
// RUN: not ptrain-translate --emit-cpp %t/no-schedule.mlir 2>&1 | FileCheck %s --check-prefix=NOSCHED
// RUN: not ptrain-translate --emit-cpp %t/bad-step.mlir 2>&1 | FileCheck %s --check-prefix=BADSTEP
// RUN: not ptrain-translate --emit-cpp %t/twice.mlir 2>&1 | FileCheck %s --check-prefix=TWICE

// A two-stage pipeline (stage functions reduced to copies) scheduled 1F1B with two
// micro-batches: the all-reduce and its wait become runtime calls on the pp communicator, and the driver
// runs each stage's row of the table.
// CHECK-LABEL: ptrain_status_t ptrain_step_init(
// CHECK: PTRAIN_STEP_CALL(ptrain_comm_init(&world));
// CHECK: return stepError("ptrain_step_init: the step was compiled for 2 ranks (grid @grid) but MPI_COMM_WORLD has %d
// CHECK: PTRAIN_STEP_CALL(createGroup(in_group, &comm_grid_pp));
// CHECK: active_states = kStage0States;
// CHECK-LABEL: ptrain_status_t ptrain_step_stage0_optimizer_step(void) {
// CHECK: ptrain_request_t [[REQ:v[0-9]+]]_request = nullptr;
// CHECK: PTRAIN_STEP_CALL(ptrain_all_reduce_start(comm_grid_pp, {{v[0-9]+}}, [[REQ]], 16, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &[[REQ]]_request));
// CHECK: PTRAIN_STEP_CALL(ptrain_wait(request));
// CHECK-LABEL: /// Stage 0 of 2, the schedule row: F0 F1 B0 B1 O
// CHECK-NEXT: ptrain_status_t trainStage0(const int64_t *tokens, float *out_loss) {
// CHECK: { // F0
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_step_forward_stage0(tokens + 0 * kTokensPerMicroBatch, stage0_out[0]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_send_start(comm_grid_pp, stage0_out[0], 64, 1, 2 * 0, &sends[2 * 0]));
// CHECK: { // B0
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_recv_start(comm_grid_pp, stage0_dout, 64, 1, 2 * 0 + 1, &recv));
// CHECK-NEXT: PTRAIN_STEP_CALL(waitRequest(&recv));
// CHECK-NEXT: PTRAIN_STEP_CALL(waitRequest(&sends[2 * 0]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_step_stage0_backward(tokens + 0 * kTokensPerMicroBatch, stage0_dout));
// CHECK: { // O
// CHECK: PTRAIN_STEP_CALL(ptrain_step_stage0_optimizer_step());
// CHECK-LABEL: /// Stage 1 of 2, the schedule row: FB0 FB1 O
// CHECK: { // FB0
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_recv_start(comm_grid_pp, stage1_in[0], 64, 0, 2 * 0, &recv));
// CHECK-NEXT: PTRAIN_STEP_CALL(waitRequest(&recv));
// CHECK-NEXT: float loss = 0.0f;
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_step_stage1_forward_backward(stage1_in[0], tokens + 0 * kTokensPerMicroBatch, &loss, stage1_din[0]));
// CHECK-NEXT: loss_sum += loss;
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_send_start(comm_grid_pp, stage1_din[0], 64, 0, 2 * 0 + 1, &sends[2 * 0 + 1]));
// CHECK: *out_loss = static_cast<float>(loss_sum / kMicroBatches);
// CHECK-LABEL: ptrain_step_train(const int64_t *tokens, float *out_loss) {
// CHECK: return trainStage0(tokens, out_loss);
// CHECK-LABEL: ptrain_step_eval(const int64_t *tokens, float *out_loss) {
// CHECK: return evalStage1(tokens, out_loss);

//--- pp2.mlir
module attributes {ptrain.pipeline = {micro_batches = 2 : i64, pp = 2 : i64, stages = [@forward_stage0, @forward_stage1]},
    ptrain.schedule = {kind = "1f1b", micro_batches = 2 : i64, table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]}} {
  ptrain.grid @grid(pp = 2)
  ptrain.state @w key "w" kind parameter : tensor<1x4x4xf32>
  ptrain.state @w.grad key "w/grad" kind gradient : tensor<1x4x4xf32>
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4x4xf32> attributes {ptrain.stage = 0 : i64} {
    %w = ptrain.state_read @w : tensor<1x4x4xf32>
    return %w : tensor<1x4x4xf32>
  }
  func.func @stage0_backward(%t: tensor<1x4xi64>, %d: tensor<1x4x4xf32>) attributes {ptrain.stage = 0 : i64} {
    ptrain.state_write %d to @w.grad : tensor<1x4x4xf32>
    return
  }
  func.func @stage0_optimizer_step() attributes {ptrain.stage = 0 : i64} {
    %g = ptrain.state_read @w.grad : tensor<1x4x4xf32>
    %r = ptrain.all_reduce_start %g on @grid axes [pp] reduction = sum : tensor<1x4x4xf32>
    %s = ptrain.wait %r : !ptrain.request<tensor<1x4x4xf32>>
    ptrain.state_write %s to @w : tensor<1x4x4xf32>
    return
  }
  func.func @forward_stage1(%h: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> attributes {ptrain.stage = 1 : i64} {
    return %h : tensor<1x4x4xf32>
  }
  func.func @stage1_forward_backward(%h: tensor<1x4x4xf32>, %t: tensor<1x4xi64>) -> (tensor<f32>, tensor<1x4x4xf32>)
      attributes {ptrain.stage = 1 : i64} {
    %l = arith.constant dense<1.0> : tensor<f32>
    return %l, %h : tensor<f32>, tensor<1x4x4xf32>
  }
  func.func @stage1_optimizer_step() attributes {ptrain.stage = 1 : i64} {
    %g = ptrain.state_read @w.grad : tensor<1x4x4xf32>
    %r = ptrain.all_reduce_start %g on @grid axes [pp] reduction = sum : tensor<1x4x4xf32>
    %s = ptrain.wait %r : !ptrain.request<tensor<1x4x4xf32>>
    ptrain.state_write %s to @w : tensor<1x4x4xf32>
    return
  }
}

//--- no-schedule.mlir
// NOSCHED: error: --emit-cpp: a pipeline module (ptrain.pipeline) needs the schedule attribute ptrain.schedule; run --ptrain-schedule first
module attributes {ptrain.pipeline = {micro_batches = 1 : i64, pp = 1 : i64, stages = [@forward_stage0]}} {
  ptrain.grid @grid(pp = 1)
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4xi64> attributes {ptrain.stage = 0 : i64} {
    return %t : tensor<1x4xi64>
  }
}

//--- bad-step.mlir
// BADSTEP: error: --emit-cpp: ptrain.schedule: stage 0 step 0 'X0': expected F<i>, B<i>, FB<i> or O
module attributes {ptrain.pipeline = {micro_batches = 1 : i64, pp = 1 : i64, stages = [@forward_stage0]},
    ptrain.schedule = {kind = "1f1b", micro_batches = 1 : i64, table = [["X0", "O"]]}} {
  ptrain.grid @grid(pp = 1)
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4xi64> attributes {ptrain.stage = 0 : i64} {
    return %t : tensor<1x4xi64>
  }
}

//--- twice.mlir
// TWICE: error: --emit-cpp: ptrain.schedule: stage 0 step 1 'FB0': micro-batch scheduled twice
module attributes {ptrain.pipeline = {micro_batches = 1 : i64, pp = 1 : i64, stages = [@forward_stage0]},
    ptrain.schedule = {kind = "1f1b", micro_batches = 1 : i64, table = [["FB0", "FB0", "O"]]}} {
  ptrain.grid @grid(pp = 1)
  func.func @forward_stage0(%t: tensor<1x4xi64>) -> tensor<1x4xi64> attributes {ptrain.stage = 0 : i64} {
    return %t : tensor<1x4xi64>
  }
}
