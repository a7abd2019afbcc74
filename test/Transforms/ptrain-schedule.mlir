// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=1f1b" | FileCheck %s
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule | FileCheck %s --check-prefix=PP4
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=3" --ptrain-schedule="schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: not ptrain-opt %t.mlir --ptrain-schedule 2>&1 | FileCheck %s --check-prefix=NOPIPE
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" -o %t.pp2.mlir
// RUN: not ptrain-opt %t.pp2.mlir --ptrain-schedule="micro-batches=8" 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not ptrain-opt %t.pp2.mlir --ptrain-schedule="schedule=zb" 2>&1 | FileCheck %s --check-prefix=KIND

// 1F1B: stage s runs P - s - 1 warm-up forwards, then one forward / one backward, then the cool-down; the
// last stage fuses forward, loss and backward per micro-batch; the optimizer step closes every stage.
// CHECK: ptrain.schedule = {kind = "1f1b", micro_batches = 4 : i64, table = {{\[}}["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]}
// PP4: table = {{\[}}["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3", "O"], ["F0", "F1", "F2", "B0", "F3", "B1", "B2", "B3", "O"], ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]
// GPIPE: {kind = "gpipe", micro_batches = 3 : i64, table = {{\[}}["F0", "F1", "F2", "B0", "B1", "B2", "O"], ["FB0", "FB1", "FB2", "O"]]}

// NOPIPE: error: --ptrain-schedule: the module has no pipeline (run --ptrain-split-stages and --ptrain-build-training-step first)
// MISMATCH: error: --ptrain-schedule: micro-batches = 8 differs from the training step's 4 (its loss gradient is seeded with 1 / micro-batches)
// KIND: error: --ptrain-schedule: schedule must be gpipe or 1f1b, got 'zb'
