// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" -o %t.cp.mlir
// RUN: FileCheck %s < %t.cp.mlir
// RUN: ptrain-opt %t.cp.mlir --ptrain-critical-path -o %t.cp2.mlir
// RUN: cat %t.cp.mlir %t.cp2.mlir | FileCheck %s --check-prefix=ATTACHED
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=8" --ptrain-schedule="schedule=gpipe" --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" | FileCheck %s --check-prefix=GPIPE

// pp = 2, 1F1B, 4 micro-batches on one H200 node: slack and critical flags of every table entry and of the
// transfer it sends, written next to the table; the first forward, the last backward and the optimizer
// step of stage 0 are on the critical path; entries that send nothing have send_slack -1.
// CHECK: ptrain.cluster = {{{.*}}gpus_per_node = 8 : i64{{.*}}name = "h200-node"
// CHECK-SAME: ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 4,
// CHECK-SAME: table = {{\[\[}}"F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]],
// CHECK-SAME: slack = {{\[\[}}0.000000e+00, {{[^]]*}}, 0.000000e+00]
// CHECK-SAME: critical = {{\[\[}}true, {{[^]]*}}, true, true], [{{[^]]*}}]],
// CHECK-SAME: send_slack = {{\[\[}}0.000000e+00, {{.*}}, -1.000000e+00, {{.*}}, -1.000000e+00], [{{.*}}, -1.000000e+00]],
// CHECK-SAME: send_critical = {{\[\[}}true, {{.*}}], [{{.*}}, false]],
// CHECK-SAME: iteration_time = {{.*}} : f64, bubble = {{.*}} : f64>

// Without cluster=, the pass reads the module's ptrain.cluster: the same iteration time.
// ATTACHED: iteration_time = [[T:[-+.0-9Ee]+]] : f64,
// ATTACHED: iteration_time = [[T]] : f64,

// GPipe, pp = 4, 8 micro-batches: the first forward of stage 0 is critical, its second is not (it can wait
// while stage 1 works through the forwards).
// GPIPE: table = {{\[\[}}"F0", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "B0", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "O"],
// GPIPE-SAME: critical = {{\[\[}}true, false,
