// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule="schedule=1f1b" | FileCheck %s
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=4" --ptrain-schedule | FileCheck %s --check-prefix=PP4
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=3" --ptrain-schedule="schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: not ptrain-opt %t.mlir --ptrain-schedule 2>&1 | FileCheck %s --check-prefix=NOPIPE
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4" -o %t.pp2.mlir
// RUN: not ptrain-opt %t.pp2.mlir --ptrain-schedule="micro-batches=8" 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-schedule="micro-batches=2" 2>&1 | FileCheck %s --check-prefix=NOSTEP
// RUN: ptrain-opt %t.pp2.mlir --ptrain-schedule --ptrain-critical-path=cluster=%S/../../clusters/h200-node.json -o %t.cp.mlir
// RUN: not ptrain-opt %t.cp.mlir --ptrain-schedule="schedule=gpipe" 2>&1 | FileCheck %s --check-prefix=AFTERCP
// RUN: ptrain-opt %t.pp2.mlir --ptrain-schedule --ptrain-lower-to-runtime -o %t.low.mlir
// RUN: not ptrain-opt %t.low.mlir --ptrain-schedule="schedule=gpipe" 2>&1 | FileCheck %s --check-prefix=LOWERED
// RUN: not ptrain-opt %t.pp2.mlir --ptrain-schedule="schedule=zb" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not ptrain-opt %t.pp2.mlir --ptrain-schedule="schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=NOCHUNKS
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2 virtual-stages=2" --ptrain-build-training-step="micro-batches=4" -o %t.v2.mlir
// RUN: ptrain-opt %t.v2.mlir --ptrain-schedule="schedule=interleaved" --ptrain-print-schedule | FileCheck %s --check-prefix=INTERLEAVED
// RUN: not ptrain-opt %t.v2.mlir --ptrain-schedule="schedule=1f1b" 2>&1 | FileCheck %s --check-prefix=V1F1B
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2 virtual-stages=2" --ptrain-build-training-step="micro-batches=3" | not ptrain-opt --ptrain-schedule="schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=DIVISIBLE
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=1" --ptrain-schedule="schedule=1f1b" --ptrain-print-schedule -o /dev/null | FileCheck %s --check-prefix=FEW1
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=2" --ptrain-schedule="schedule=gpipe" --ptrain-print-schedule -o /dev/null | FileCheck %s --check-prefix=FEW2
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=8" --ptrain-schedule="schedule=1f1b" --ptrain-print-schedule -o /dev/null | FileCheck %s --check-prefix=BUBBLE
// RUN: not ptrain-opt %t.mlir --ptrain-print-schedule 2>&1 | FileCheck %s --check-prefix=NOSCHEDULE
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=1 virtual-stages=2" 2>&1 | FileCheck %s --check-prefix=V1PP
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=4 virtual-stages=2" 2>&1 | FileCheck %s --check-prefix=VLAYERS

// 1F1B: stage s runs P - s - 1 warm-up forwards, then one forward / one backward, then the cool-down; the
// last stage fuses forward, loss and backward per micro-batch; the optimizer step closes every stage.
// CHECK: ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 4, table = {{\[}}["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]>
// PP4: table = {{\[}}["F0", "F1", "F2", "F3", "B0", "B1", "B2", "B3", "O"], ["F0", "F1", "F2", "B0", "F3", "B1", "B2", "B3", "O"], ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]
// GPIPE: <kind = "gpipe", micro_batches = 3, table = {{\[}}["F0", "F1", "F2", "B0", "B1", "B2", "O"], ["FB0", "FB1", "FB2", "O"]]>

// NOPIPE: error: --ptrain-schedule: the module has no pipeline (run --ptrain-split-stages and --ptrain-build-training-step first)
// MISMATCH: error: --ptrain-schedule: micro-batches = 8 differs from the training step's 4 (its loss gradient is seeded with 1 / micro-batches)
// KIND: error: --ptrain-schedule: schedule must be gpipe, 1f1b or interleaved, got 'zb'
// NOCHUNKS: error: --ptrain-schedule: the interleaved schedule needs pp >= 2 and virtual stages >= 2 (--ptrain-split-stages virtual-stages=V), got pp = 2, virtual stages = 1

// Interleaved 1F1B (pp = 2, 2 model chunks per stage, 4 micro-batches): stage 0 holds virtual stages 0 and 2,
// stage 1 holds 1 and 3 (the last, fused FB); forwards go through the chunks in groups of pp micro-batches,
// backwards in reverse; the bubble is (P - 1) / (v M) = 1/8 with unit costs.
// INTERLEAVED: schedule interleaved: pp = 2, virtual stages = 2, micro-batches = 4
// INTERLEAVED-NEXT: stage 0: F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3 O
// INTERLEAVED-NEXT: stage 1: F0 F1 FB0.1 FB1.1 F2 B0 F3 B1 FB2.1 FB3.1 B2 B3 O
// INTERLEAVED: stage 0: busy 24, idle 3, bubble (idle / busy) 0.1250
// INTERLEAVED: stage 1: busy 24, idle 3, bubble (idle / busy) 0.1250
// INTERLEAVED: ptrain.schedule = #ptrain.schedule<kind = "interleaved", micro_batches = 4, virtual_stages = 2, table = {{\[}}["F0", "F1", "F0.1", "F1.1", {{.*}}, "O"]]>
// V1F1B: error: --ptrain-schedule: the 1f1b schedule runs one model chunk per stage, but the pipeline has 2 virtual stages per stage (use schedule=interleaved)
// DIVISIBLE: error: --ptrain-schedule: the interleaved schedule needs micro-batches to be a multiple of pp (chunks advance in groups of pp micro-batches; Megatron-LM), got 3 micro-batches for pp = 2

// Re-scheduling what later passes planned on the old table (or a split module without the training step, which
// failed later on a misleading count or grid) is an error; a lowered module was re-scheduled silently.
// NOSTEP: error: --ptrain-schedule: the pipeline has no training step (run --ptrain-build-training-step micro-batches=M first)
// AFTERCP: error: --ptrain-schedule: the module's schedule already has the critical path of --ptrain-critical-path (and what was planned on it); schedule before --ptrain-critical-path
// LOWERED: error: --ptrain-schedule: the module is already lowered (@stage0_train_step) for its schedule; schedule before --ptrain-compress and --ptrain-lower-to-runtime

// Fewer micro-batches than stages: a correct degenerate schedule (every forward, then every backward).
// FEW1: schedule 1f1b: pp = 4, virtual stages = 1, micro-batches = 1
// FEW1-NEXT: stage 0: F0 B0 O
// FEW1-NEXT: stage 1: F0 B0 O
// FEW1-NEXT: stage 2: F0 B0 O
// FEW1-NEXT: stage 3: FB0 O
// FEW2: stage 0: F0 F1 B0 B1 O
// FEW2: stage 3: FB0 FB1 O

// 1F1B with equal stages: bubble (P - 1) / M = 3/8 on every stage.
// BUBBLE: stage 0: busy 24, idle 9, bubble (idle / busy) 0.3750
// BUBBLE: stage 3: busy 24, idle 9, bubble (idle / busy) 0.3750

// NOSCHEDULE: error: --ptrain-print-schedule: no ptrain.schedule; run --ptrain-schedule first
// V1PP: error: --ptrain-split-stages: virtual-stages must be >= 1, and 1 when pp < 2 (the chunks of a rank exchange activations with other ranks), got virtual-stages = 2 with pp = 1
// VLAYERS: error: --ptrain-split-stages: pp = 4 x virtual-stages = 2 needs 7 cut points but @forward has only 3 layer boundaries where a single tensor crosses (more stages than layers)
