// --ptrain-expand-codecs on the bundled GPT's compressed plan (the pass on hand-written IR:
// test/Transforms/ptrain-expand-codecs.mlir).
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 bucket-bytes=100000" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="sc-all=true sc-rank=4" --ptrain-lower-to-runtime --ptrain-expand-codecs --ptrain-verify-plan -o %t.expanded.mlir
// RUN: FileCheck %s --check-prefix=PLAN --input-file=%t.expanded.mlir
// RUN: not ptrain-translate --emit-cpp %t.expanded.mlir -o %t.cpp 2>&1 | FileCheck %s --check-prefix=EMIT

// The bundled GPT at dp = 2 x pp = 2 with SC rank 4 on both stages: every PowerSGD all-reduce is expanded,
// the matrices into phase P, Q and finish, the 1-D gradients (exact path) without phase Q, and the plan
// still verifies (every rank's collectives match).
// PLAN-NOT: ptrain.compressed_all_reduce_start
// PLAN-LABEL: func.func @stage0_optimizer_step(
// PLAN: ptrain.powersgd_phase_p {{.*}} {codec = #ptrain.powersgd<rank = 4>} : tensor<512x128xf32>
// PLAN: ptrain.powersgd_phase_q {{.*}} : tensor<512x128xf32>, tensor<512x4xf32>
// PLAN: ptrain.powersgd_finish {{.*}} {alpha = 5.000000e-01 : f32, beta = 5.000000e-01 : f32, codec = #ptrain.powersgd<rank = 1>} : tensor<1x1xf32>, tensor<128x1xf32>, tensor<128xf32>
// PLAN-LABEL: func.func @stage1_optimizer_step(
// PLAN: ptrain.powersgd_finish
// PLAN-NOT: ptrain.compressed_all_reduce_start

// The C++ code generator does not take the phase ops yet: a clear error naming the op, no output.
// EMIT: error: --emit-cpp: 'ptrain.powersgd_phase_p' is not supported by the CPU code generator
