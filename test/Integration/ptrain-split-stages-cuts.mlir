// User cuts by ONNX node name (--ptrain-split-stages="pp=P cuts=..."; Passes.td, constraints C1-C5). The
// importer's NameLoc must survive the text round trip, hence --mlir-print-debuginfo.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx --mlir-print-debuginfo -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=3 cuts=/blocks.2,/blocks.3/mlp/fc/MatMul" -o %t3.mlir
// RUN: FileCheck %s --input-file=%t3.mlir
// RUN: ptrain-interpret %t3.mlir --pipeline --weights %S/../../models/gpt/gpt.onnx --input %S/../../models/gpt/test_data_set_0/input_0.pb --expect %S/../../models/gpt/test_data_set_0/output_0.pb --atol 1e-5 | FileCheck %s --check-prefix=RUN3
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2 virtual-stages=2 cuts=/blocks.3,/blocks.1,/blocks.2" -o %tv.mlir
// RUN: FileCheck %s --input-file=%tv.mlir --check-prefix=VIRTUAL
// The balanced split of pp = 3 is different (layers 0 | 1-2 | 3): the cuts decide.
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=3" -o - | FileCheck %s --check-prefix=BALANCED
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=3 cuts=/blocks.1" 2>&1 | FileCheck %s --check-prefix=C1
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=2 cuts=/blocks" 2>&1 | FileCheck %s --check-prefix=C2
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=2 cuts=/blocks.7/attn/Softmax" 2>&1 | FileCheck %s --check-prefix=C2B
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=2 cuts=/blocks.2/attn/qkv/Transpose" 2>&1 | FileCheck %s --check-prefix=C3
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=2 cuts=/blocks.0/mlp/fc/MatMul" 2>&1 | FileCheck %s --check-prefix=C4
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=3 cuts=/blocks.2,/blocks.2/mlp" 2>&1 | FileCheck %s --check-prefix=C5
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.nodebug.mlir
// RUN: not ptrain-opt %t.nodebug.mlir --ptrain-split-stages="pp=2 cuts=/blocks.2" 2>&1 | FileCheck %s --check-prefix=NONAMES

// Stage 0: layers 0 and 1; stage 1: layer 2; stage 2: layer 3 (cut at its MLP: the stage starts at the
// layer holding it) and the head with the tied embedding. Each layer once.
// CHECK: ptrain.pipeline = #ptrain.pipeline<pp = 3, stages = [@forward_stage0, @forward_stage1, @forward_stage2]>
// CHECK-LABEL: func.func @forward_stage0(
// CHECK: ptrain.state_read @wte.weight
// CHECK: ptrain.state_read @blocks.0.ln_1.weight
// CHECK: ptrain.state_read @blocks.1.mlp.proj.weight
// CHECK-NOT: @blocks.2.
// CHECK-LABEL: func.func @forward_stage1(
// CHECK-NOT: @blocks.1.
// CHECK: ptrain.state_read @blocks.2.ln_1.weight
// CHECK: ptrain.state_read @blocks.2.mlp.proj.weight
// CHECK-NOT: @blocks.3.
// CHECK-LABEL: func.func @forward_stage2(
// CHECK-NOT: @blocks.2.
// CHECK: ptrain.state_read @wte.weight
// CHECK: ptrain.state_read @blocks.3.ln_1.weight
// RUN3: stage @forward_stage2: 1 result(s)
// RUN3: max|x - expected| = {{.*}}: ok

// Four chunks of one layer each (the names may come in any order).
// VIRTUAL-LABEL: func.func @forward_stage1(
// VIRTUAL-SAME: ptrain.stage = #ptrain.stage<1>, ptrain.virtual_stage = 1 : i64
// VIRTUAL: @blocks.1.ln_1.weight
// VIRTUAL-NOT: @blocks.2.
// VIRTUAL-LABEL: func.func @forward_stage2(
// VIRTUAL-SAME: ptrain.stage = #ptrain.stage<0>, ptrain.virtual_stage = 2 : i64
// VIRTUAL: @blocks.2.ln_1.weight
// VIRTUAL-NOT: @blocks.3.
// VIRTUAL-LABEL: func.func @forward_stage3(

// BALANCED-LABEL: func.func @forward_stage1(
// BALANCED: @blocks.1.ln_1.weight
// BALANCED: @blocks.2.ln_1.weight
// BALANCED-LABEL: func.func @forward_stage2(

// C1: error: --ptrain-split-stages: cuts= names 1 cut(s) but pp = 3 needs exactly 2
// C2: error: --ptrain-split-stages: cut '/blocks' names no op of @forward (an ONNX node name, or a scope such as /blocks.2, in the ops' locations)
// C2B: error: --ptrain-split-stages: cut '/blocks.7/attn/Softmax' names no op of @forward
// A module written without --mlir-print-debuginfo has no node names: the cut that Plan.md's command takes was
// "names no op of @forward", as if /blocks.2 did not exist.
// NONAMES: error: --ptrain-split-stages: cut '/blocks.2': the ops of @forward carry no ONNX node names (a module written without --mlir-print-debuginfo); import with ptrain-translate --import-onnx ... --mlir-print-debuginfo
// C3: error: --ptrain-split-stages: cut '/blocks.2/attn/qkv/Transpose' names only parameter reads, constants and ops on them, which every stage recomputes
// C4: error: --ptrain-split-stages: cut '/blocks.0/mlp/fc/MatMul' (ONNX node '/blocks.0/mlp/fc/MatMul') is in the first layer; a cut starts a stage at a later layer
// C5: error: --ptrain-split-stages: cuts '/blocks.2' and '/blocks.2/mlp' start the same layer (each stage needs one)
