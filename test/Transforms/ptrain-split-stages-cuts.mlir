// RUN: ptrain-opt %s --ptrain-split-stages="pp=2 cuts=/blocks.3" | FileCheck %s --check-prefix=SCOPE
// RUN: ptrain-opt %s --ptrain-split-stages="pp=2 cuts=/blocks.1/attn/MatMul" | FileCheck %s --check-prefix=NODE
// RUN: ptrain-opt %s --ptrain-split-stages="pp=2 virtual-stages=2" | FileCheck %s --check-prefix=VIRTUAL
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=3 cuts=/blocks.1" 2>&1 | FileCheck %s --check-prefix=C1
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=2 cuts=/blocks.9" 2>&1 | FileCheck %s --check-prefix=C2
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=2 cuts=/wte" 2>&1 | FileCheck %s --check-prefix=C3
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=2 cuts=/blocks.0/attn/MatMul" 2>&1 | FileCheck %s --check-prefix=C4
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=3 cuts=/blocks.2,/blocks.2/Add" 2>&1 | FileCheck %s --check-prefix=C5

// User cuts and virtual stages on four layers whose ops carry the importer's ONNX node names (NameLoc).

// A scope names every node under it: the stage boundary goes before layer 3.
// SCOPE-LABEL: func.func @forward_stage0(
// SCOPE: ptrain.state_read @w2
// SCOPE-LABEL: func.func @forward_stage1(
// SCOPE-NOT: ptrain.state_read @w2
// SCOPE: ptrain.state_read @w3

// A node name: the boundary goes before the layer that holds it (layer 1).
// NODE-LABEL: func.func @forward_stage0(
// NODE: ptrain.state_read @w0
// NODE-NOT: ptrain.state_read @w1
// NODE-LABEL: func.func @forward_stage1(
// NODE: ptrain.state_read @w1
// NODE: ptrain.state_read @w3

// Interleaved: pp x v = 4 virtual stages of one layer each; virtual stage c runs on rank c mod pp.
// VIRTUAL: ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3]>
// VIRTUAL-LABEL: func.func @forward_stage0(%{{.*}}: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.virtual_stage = 0 : i64}
// VIRTUAL-LABEL: func.func @forward_stage1(%{{.*}}: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.virtual_stage = 1 : i64}
// VIRTUAL-LABEL: func.func @forward_stage2(%{{.*}}: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<0>, ptrain.virtual_stage = 2 : i64}
// VIRTUAL-LABEL: func.func @forward_stage3(%{{.*}}: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> attributes {ptrain.stage = #ptrain.stage<1>, ptrain.virtual_stage = 3 : i64}

// The cut errors, (C1)-(C5) of the pass description, each at @forward and naming the cut.
// C1: error: --ptrain-split-stages: cuts= names 1 cut(s) but pp = 3 needs exactly 2
// C2: error: --ptrain-split-stages: cut '/blocks.9' names no op of @forward (an ONNX node name, or a scope such as /blocks.2, in the ops' locations)
// C3: error: --ptrain-split-stages: cut '/wte' names only parameter reads, constants and ops on them, which every stage recomputes; name an op of the layer that starts the stage
// C4: error: --ptrain-split-stages: cut '/blocks.0/attn/MatMul' (ONNX node '/blocks.0/attn/MatMul') is in the first layer; a cut starts a stage at a later layer
// C5: error: --ptrain-split-stages: cuts '/blocks.2' and '/blocks.2/Add' start the same layer (each stage needs one)

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @w0 key "blocks.0.w" kind parameter : tensor<8x8xf32>
ptrain.state @w1 key "blocks.1.w" kind parameter : tensor<8x8xf32>
ptrain.state @w2 key "blocks.2.w" kind parameter : tensor<8x8xf32>
ptrain.state @w3 key "blocks.3.w" kind parameter : tensor<8x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %wte = ptrain.state_read @wte : tensor<16x8xf32> loc("/wte")
  %x0 = ptrain.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64> loc("/embed/Gather")
  %w0 = ptrain.state_read @w0 : tensor<8x8xf32> loc("/blocks.0/w")
  %s0 = ptrain.matmul %x0, %w0 : tensor<2x4x8xf32>, tensor<8x8xf32> loc("/blocks.0/attn/MatMul")
  %p0 = ptrain.softmax %s0 {axis = -1 : i64} : tensor<2x4x8xf32> loc("/blocks.0/attn/Softmax")
  %x1 = ptrain.binary add %x0, %p0 : tensor<2x4x8xf32>, tensor<2x4x8xf32> loc("/blocks.0/Add")
  %w1 = ptrain.state_read @w1 : tensor<8x8xf32> loc("/blocks.1/w")
  %s1 = ptrain.matmul %x1, %w1 : tensor<2x4x8xf32>, tensor<8x8xf32> loc("/blocks.1/attn/MatMul")
  %p1 = ptrain.softmax %s1 {axis = -1 : i64} : tensor<2x4x8xf32> loc("/blocks.1/attn/Softmax")
  %x2 = ptrain.binary add %x1, %p1 : tensor<2x4x8xf32>, tensor<2x4x8xf32> loc("/blocks.1/Add")
  %w2 = ptrain.state_read @w2 : tensor<8x8xf32> loc("/blocks.2/w")
  %s2 = ptrain.matmul %x2, %w2 : tensor<2x4x8xf32>, tensor<8x8xf32> loc("/blocks.2/attn/MatMul")
  %p2 = ptrain.softmax %s2 {axis = -1 : i64} : tensor<2x4x8xf32> loc("/blocks.2/attn/Softmax")
  %x3 = ptrain.binary add %x2, %p2 : tensor<2x4x8xf32>, tensor<2x4x8xf32> loc("/blocks.2/Add")
  %w3 = ptrain.state_read @w3 : tensor<8x8xf32> loc("/blocks.3/w")
  %s3 = ptrain.matmul %x3, %w3 : tensor<2x4x8xf32>, tensor<8x8xf32> loc("/blocks.3/attn/MatMul")
  %p3 = ptrain.softmax %s3 {axis = -1 : i64} : tensor<2x4x8xf32> loc("/blocks.3/attn/Softmax")
  %x4 = ptrain.binary add %x3, %p3 : tensor<2x4x8xf32>, tensor<2x4x8xf32> loc("/blocks.3/Add")
  %wt = ptrain.transpose %wte {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32> loc("/head/Transpose")
  %logits = ptrain.matmul %x4, %wt : tensor<2x4x8xf32>, tensor<8x16xf32> loc("/head/MatMul")
  return %logits : tensor<2x4x16xf32>
}
