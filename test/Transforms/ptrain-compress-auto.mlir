// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule -o %t.sched.mlir
// RUN: ptrain-opt %t.sched.mlir --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" --ptrain-compress="policy=auto" 2>&1 | FileCheck %s --check-prefix=SLOW
// RUN: ptrain-opt %t.sched.mlir --ptrain-critical-path="cluster=%S/Inputs/h200-free-link.json" --ptrain-compress="policy=auto" 2>&1 | FileCheck %s --check-prefix=FREE

// policy=auto: the greedy search by re-simulation (docs/Compression.md, "Policy auto").
// On a 1 GB/s link the 128 KiB gradient takes 131 us and dominates: the first pick is the cool-down send
// FB3 1 -> 0 (nothing overlaps it), at the smallest rank; the steady-state sends FB0, FB1 follow at a rank
// where their transfer hides behind the compute, FB2 already hides.
// SLOW: remark: --ptrain-compress policy=auto: pick 1: backward send stage 1 FB3 -> #ptrain.powersgd<rank = 4>, saves {{[0-9.]+}} ms
// SLOW: remark: --ptrain-compress policy=auto: pick 2: backward send stage 1 FB0 -> #ptrain.powersgd<rank = 64>
// SLOW: remark: --ptrain-compress policy=auto: pick 3: backward send stage 1 FB1 -> #ptrain.powersgd<rank = 64>
// SLOW: remark: --ptrain-compress policy=auto: 3 changes, modelled iteration 1.079 ms uncompressed, 0.930 ms with auto
// SLOW: backward_sends = {{\[}}[false, false, false, false], [#ptrain.powersgd<rank = 64>, #ptrain.powersgd<rank = 64>, false, #ptrain.powersgd<rank = 4>]]
// SLOW-SAME: policy = "auto"
// Free communication: codec kernels only cost, auto picks nothing.
// FREE-NOT: pick 1
// FREE: remark: --ptrain-compress policy=auto: 0 changes
// FREE: backward_sends = {{\[}}[false, false, false, false], [false, false, false, false]]
