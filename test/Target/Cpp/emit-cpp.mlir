// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// A one-layer language model step: embedding, LM head matmul, loss, AdamW on the table.
module attributes {ptrain.onnx_file = "model.onnx"} {
  ptrain.state @wte key "wte.weight" kind parameter : tensor<16x8xf32>
  ptrain.state @wte_m key "wte.weight/adam_m" kind optimizer_moment : tensor<16x8xf32>
  ptrain.state @wte_v key "wte.weight/adam_v" kind optimizer_moment : tensor<16x8xf32>
  ptrain.state @step key "step" kind step_counter : tensor<i64>
  func.func @train_step(%tokens: tensor<2x4xi64>) -> tensor<f32> {
    %w = ptrain.state_read @wte : tensor<16x8xf32> loc("wte.weight")
    %x = ptrain.embedding %w, %tokens : tensor<16x8xf32>, tensor<2x4xi64> loc("/embed/Gather")
    %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32> loc("/head/Transpose")
    %logits = ptrain.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32> loc("/head/MatMul")
    %pred = ptrain.slice %logits {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 3, 16>} : tensor<2x4x16xf32> -> tensor<2x3x16xf32>
    %labels = ptrain.slice %tokens {offsets = array<i64: 0, 1>, sizes = array<i64: 2, 3>} : tensor<2x4xi64> -> tensor<2x3xi64>
    %loss = ptrain.cross_entropy %pred, %labels : tensor<2x3x16xf32>, tensor<2x3xi64>
    %one = arith.constant dense<1.0> : tensor<f32>
    %dpred = ptrain.cross_entropy_grad %one, %pred, %labels : tensor<f32>, tensor<2x3x16xf32>, tensor<2x3xi64>
    %dlogits = ptrain.pad %dpred {low = array<i64: 0, 0, 0>, high = array<i64: 0, 1, 0>} : tensor<2x3x16xf32> -> tensor<2x4x16xf32>
    %xt = ptrain.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
    %dwt3 = ptrain.matmul %xt, %dlogits : tensor<2x8x4xf32>, tensor<2x4x16xf32>
    %dwt = ptrain.sum_to %dwt3 : tensor<2x8x16xf32> -> tensor<8x16xf32>
    %dw1 = ptrain.transpose %dwt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    %wtt = ptrain.transpose %wt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    %dx = ptrain.matmul %dlogits, %wtt : tensor<2x4x16xf32>, tensor<16x8xf32>
    %dw2 = ptrain.embedding_grad %dx, %tokens : tensor<2x4x8xf32>, tensor<2x4xi64> -> tensor<16x8xf32>
    %dw = ptrain.binary add %dw1, %dw2 : tensor<16x8xf32>, tensor<16x8xf32>
    %t = ptrain.state_read @step : tensor<i64>
    %c1 = arith.constant dense<1> : tensor<i64>
    %t1 = ptrain.binary add %t, %c1 : tensor<i64>, tensor<i64>
    ptrain.state_write %t1 to @step : tensor<i64>
    %m = ptrain.state_read @wte_m : tensor<16x8xf32>
    %v = ptrain.state_read @wte_v : tensor<16x8xf32>
    %w1, %m1, %v1 = ptrain.adamw %w, %dw, %m, %v, %t1 {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 100, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<16x8xf32>, tensor<i64> loc("wte.weight")
    ptrain.state_write %w1 to @wte : tensor<16x8xf32>
    ptrain.state_write %m1 to @wte_m : tensor<16x8xf32>
    ptrain.state_write %v1 to @wte_v : tensor<16x8xf32>
    return %loss : tensor<f32>
  }
}

// The state table: one heap block per state, allocated by ptrain_step_init, keyed, with its kind and shape
// (its dims in the flat kStateDims); no static storage sized by the model.
// CHECK: #include "ptrain/Runtime/ptrain_runtime.h"
// CHECK: float *state_f32[4] = {};
// CHECK-NEXT: int64_t *state_i64[4] = {};
// CHECK-NEXT: {{\[\[}}maybe_unused]] float *&state_0_wte_weight = state_f32[0];
// CHECK: {{\[\[}}maybe_unused]] int64_t *&state_3_step = state_i64[3];
// The table is runs of templates (StateTable.h), expanded into kStates and kStateDims at load: no state has a
// number in its key here, so one run of the four templates.
// CHECK: const StateTemplate kStateTemplates[4] = {
// CHECK-NEXT: {"wte.weight", "", false, PTRAIN_DTYPE_F32, PTRAIN_STATE_PARAMETER, 2, {16, 8}, PTRAIN_STATE_INIT_NONE, 0},
// CHECK-NEXT: {"wte.weight/adam_m", "", false, PTRAIN_DTYPE_F32, PTRAIN_STATE_OPTIMIZER_MOMENT, 2, {16, 8},
// CHECK-NEXT: {"wte.weight/adam_v",
// CHECK-NEXT: {"step", "", false, PTRAIN_DTYPE_I64, PTRAIN_STATE_STEP_COUNTER, 0, {0}, PTRAIN_STATE_INIT_NONE, 0},
// CHECK: const int64_t kStateRuns[5] = {0, 4, 1, 0, 0};
// CHECK-NEXT: constexpr int64_t kNumStates = 4;
// CHECK: int64_t kStateDims[6] = {};
// CHECK: ptrain_state_desc_t kStates[4] = {};
// CHECK: kStates[i] = {state_keys[i].c_str(), nullptr, t.dtype, t.kind, t.rank,
// CHECK: const bool state_table_expanded = expandStateTable();
// CHECK: unsigned char *ptrain_arena = nullptr;
// The states' blocks: one loop over kStates, each block's bytes from its descriptor and its name from its
// index and key.
// CHECK-LABEL: ptrain_status_t allocateModuleStorage() {
// CHECK-NEXT: PTRAIN_STEP_CALL(allocateStates(nullptr, kNumStates, nullptr, storage_state_bytes));
// CHECK-NEXT: PTRAIN_STEP_CALL(allocateBlock(ptrain_arena, [[ARENA:[0-9]+]], storage_arena_bytes, "ptrain_arena"));

// Initial values by key from the ONNX file the module names, after the storage; checkpoints by key.
// CHECK-LABEL: ptrain_status_t ptrain_step_init(const char *weights_onnx_path) {
// CHECK: weights_onnx_path ? weights_onnx_path : "model.onnx";
// CHECK-NEXT: PTRAIN_STEP_CALL(allocateStorage());
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_state_init_onnx(active_states, num_active_states, path));
// CHECK-LABEL: ptrain_status_t ptrain_step_finalize(void) {
// CHECK-NEXT: PTRAIN_STEP_CALL(releaseStorage());
// CHECK-LABEL: ptrain_status_t ptrain_step_save(const char *path) {
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_checkpoint_save(active_states, num_active_states, path));
// CHECK-LABEL: ptrain_status_t ptrain_step_load(const char *path) {
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_checkpoint_load(active_states, num_active_states, path));

// The entry point: tokens in, loss out; state reads use the state in place; every call is checked.
// CHECK: /// Arena: [[ARENA]] bytes
// CHECK-NEXT: extern "C" PTRAIN_STEP_API ptrain_status_t ptrain_step_train_step(const int64_t *arg0, float *out_0) {
// CHECK-NEXT: if (storage_stage == -2)
// CHECK-NEXT: return stepError("ptrain_step_train_step: call ptrain_step_init first");
// A state read used in place is declared by its first user (EmitCpp.cpp, BlockOutliner.h).
// CHECK-NOT: // ptrain.state_read
// CHECK: // "/embed/Gather"
// CHECK-NEXT: // ptrain.embedding
// CHECK-NEXT: float *[[W:v[0-9]+]] = state_0_wte_weight;
// CHECK-NEXT: float *[[X:v[0-9]+]] = reinterpret_cast<float *>(ptrain_arena + {{[0-9]+}});
// CHECK: PTRAIN_STEP_CALL(ptrain_cast_i64_i32(arg0, 8, [[IDS:.*]]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_embedding_fwd_f32([[W]], [[IDS]], 8, 16, 8, [[X]]));
// CHECK-NOT: "/head/Transpose"
// W^T is read from W with the transpose flag; the batch of the weight operand is broadcast: stride 0.
// CHECK: // "/head/MatMul"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(0, 1, 2, 4, 16, 8, 1.0f, [[X]], 32, [[W]], 0, 0.0f, [[LOGITS:v[0-9]+]], 64));
// CHECK: PTRAIN_STEP_CALL(ptrain_slice([[LOGITS]], 4, 3, dims, offsets, out_dims, [[PRED:v[0-9]+]]));
// Labels are the i64 tokens shifted by one (8-byte elements).
// CHECK: PTRAIN_STEP_CALL(ptrain_slice(arg0, 8, 2, dims, offsets, out_dims, [[LABELS:v[0-9]+]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_cross_entropy_fwd_f32([[PRED]], {{.*}}, 6, 16, [[LOSS:v[0-9]+]],
// CHECK: const float *[[ONE:v[0-9]+]] = constant_0;
// CHECK: PTRAIN_STEP_CALL(ptrain_cross_entropy_bwd_f32([[ONE]][0], [[PRED]],
// CHECK: PTRAIN_STEP_CALL(ptrain_zero_bytes([[DL:v[0-9]+]], 512));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_insert_slice({{v[0-9]+}}, 4, 3, x_dims, offsets, out_dims, [[DL]]));
// The weight gradient x^T dlogits summed over the batch: one GEMM over batch * seq, which writes its transpose
// through scratch (ptrain_gemm_transposed_f32; the transpose is an alias of it, GemmFusion.h).
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_transposed_f32(1, 0, 8, 16, 8, 1.0f, [[X]], [[DL]], 0.0f, [[DWT:v[0-9]+]]));
// CHECK-NOT: ptrain_permute_f32
// (W^T)^T is W itself.
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(0, 0, 2, 4, 8, 16, 1.0f, [[DL]], 64, [[W]], 0, 0.0f, {{v[0-9]+}}, 32));
// CHECK: PTRAIN_STEP_CALL(ptrain_zero_bytes([[DW2:v[0-9]+]], 512));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_embedding_bwd_f32({{v[0-9]+}}, {{.*}}, 8, 16, 8, [[DW2]]));
// The transpose (an alias of the GEMM's result, no code) is declared where it is first read: the gradients' sum.
// CHECK: float *[[DWTT:v[0-9]+]] = [[DWT]];
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD, [[DWTT]], 2, a_dims, [[DW2]], 2, b_dims, 2, out_dims, [[DW:v[0-9]+]]));
// The step counter: i64 add, written back.
// CHECK: int64_t *[[T:v[0-9]+]] = state_3_step;
// CHECK: PTRAIN_STEP_CALL(ptrain_add_i64([[T]], {{v[0-9]+}}, 1, [[T1:v[0-9]+]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes([[T1]], 8, state_3_step));
// AdamW: the 1-based step maps onto the runtime's schedule; the update runs on copies of p, m, v.
// CHECK: const int64_t t = [[T1]][0];
// CHECK: PTRAIN_STEP_CALL(ptrain_lr_warmup_cosine(t <= 10 ? t - 1 : t, 10, 100, 0.00100000005f, 9.99999975e-05f, &lr));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_copy_bytes([[W]], 512, [[P1:v[0-9]+]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_adamw_step_f32([[P1]], [[DW]], {{v[0-9]+}}, {{v[0-9]+}}, 128, t, lr, 0.899999976f, 0.949999988f, 9.99999994e-09f, 0.100000001f));
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes([[P1]], 512, state_0_wte_weight));
// CHECK: // func.return
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes([[LOSS]], 4, out_0));
// CHECK-NEXT: }
// CHECK-NEXT: return PTRAIN_OK;
