// --ptrain-verify-plan on the bundled GPT's lowered steps (the pass on hand-written plans and their mutations:
// test/Transforms/ptrain-verify-plan.mlir, ptrain-verify-plan-symmetric.mlir).

// The lowered steps of pp=2 1F1B and of dp=2 x pp=4 GPipe with bucketed gradient all-reduces pass; the
// unlowered import is refused.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o /dev/null
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=2 dp=2 bucket-bytes=100000" --ptrain-schedule="schedule=gpipe" --ptrain-lower-to-runtime --ptrain-verify-plan -o /dev/null
// RUN: not ptrain-opt %t.mlir --ptrain-verify-plan 2>&1 | FileCheck %s --check-prefix=UNLOWERED

// UNLOWERED: error: --ptrain-verify-plan: no function with ptrain.entry = "train" or "eval" (run --ptrain-lower-to-runtime first)

// The symmetry shortcut at dp = 2 x tp = 2 x pp = 2 (8 ranks): dp and tp are symmetric, 2 ranks run and a
// remark says so; all-ranks=true runs all 8 and says nothing.
// RUN: ptrain-opt %t.mlir --ptrain-raise --ptrain-shard-tp="tp=2" --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime -o %t.plan.mlir
// RUN: ptrain-opt %t.plan.mlir --ptrain-verify-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPT
// RUN: ptrain-opt %t.plan.mlir --ptrain-verify-plan="all-ranks=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALL --allow-empty

// GPT: remark: --ptrain-verify-plan: ran 2 of 8 ranks, one per coordinate of the other axes: the replicas over dp, tp run
// ALL-NOT: remark
