// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=adamw precision=bf16" | FileCheck %s
// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=adamw precision=fp16" | FileCheck %s --check-prefix=F16
// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=adamw precision=bf16 half-activations=false" | FileCheck %s --check-prefix=OFF
// RUN: not ptrain-opt %s --split-input-file --ptrain-build-training-step="precision=fp32 half-activations=false" 2>&1 | FileCheck %s --check-prefix=BAD

// 16-bit activations, slice 2 (docs/MixedPrecision.md, "16-bit activations"): under precision=bf16 the outputs of
// the embedding sum, the layer norm, the bias add a GELU reads, the GELU, the softmax and the residual add are
// rounded to bf16 once, right after their op, and each reader reads a widening placed right before it; a GEMM
// reads the bf16 value itself. A plain bias add, the gradients and the loss stay fp32.

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @wpe key "wpe" kind parameter : tensor<5x8xf32>
ptrain.state @ln key "ln.weight" kind parameter : tensor<8xf32>
ptrain.state @fc key "fc.weight" kind parameter : tensor<8x8xf32>
ptrain.state @fcb key "fc.bias" kind parameter : tensor<8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %p = ptrain.state_read @wpe : tensor<5x8xf32>
  %g = ptrain.state_read @ln : tensor<8xf32>
  %fw = ptrain.state_read @fc : tensor<8x8xf32>
  %fb = ptrain.state_read @fcb : tensor<8xf32>
  %pos = arith.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
  %te = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %pe = ptrain.embedding %p, %pos : tensor<5x8xf32>, tensor<5xi64>
  %x = ptrain.binary add %te, %pe : tensor<2x5x8xf32>, tensor<5x8xf32>
  %h = ptrain.layer_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x5x8xf32>, tensor<8xf32>
  %m = ptrain.matmul %h, %fw : tensor<2x5x8xf32>, tensor<8x8xf32>
  %mb = ptrain.binary add %m, %fb : tensor<2x5x8xf32>, tensor<8xf32>
  %a = ptrain.gelu %mb : tensor<2x5x8xf32>
  %sc = ptrain.binary add %a, %fb : tensor<2x5x8xf32>, tensor<8xf32>
  %s = ptrain.softmax %sc {axis = -1 : i64} : tensor<2x5x8xf32>
  %r = ptrain.binary add %x, %s : tensor<2x5x8xf32>, tensor<2x5x8xf32>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %r, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}

// The forward the step clones: each activation rounded once right after its op, read back widened right before
// each reader; the GEMMs read the bf16 values (no second cast).
// CHECK-LABEL: func.func @train_step
// CHECK: %[[X:.*]] = ptrain.binary add %{{.*}}, %{{.*}} : tensor<2x5x8xf32>, tensor<5x8xf32>
// CHECK-NEXT: %[[XB:.*]] = ptrain.cast %[[X]] : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
// CHECK-NEXT: %[[XW:.*]] = ptrain.cast %[[XB]] : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
// CHECK-NEXT: %[[H:.*]] = ptrain.layer_norm %[[XW]], %{{.*}} {{.*}} : tensor<2x5x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[HB:.*]] = ptrain.cast %[[H]] : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
// CHECK-NEXT: ptrain.matmul %[[HB]], %{{.*}} {accumulate = f32} : tensor<2x5x8xbf16>, tensor<8x8xbf16>
// The bias add a GELU reads is rounded (bias-GELU), and the GELU's output.
// CHECK-NEXT: %[[MB:.*]] = ptrain.binary add %{{.*}}, %{{.*}} : tensor<2x5x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[MBB:.*]] = ptrain.cast %[[MB]] : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
// CHECK-NEXT: %[[MBW:.*]] = ptrain.cast %[[MBB]] : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
// CHECK-NEXT: %[[A:.*]] = ptrain.gelu %[[MBW]] : tensor<2x5x8xf32>
// CHECK-NEXT: %[[AB:.*]] = ptrain.cast %[[A]] : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
// CHECK-NEXT: %[[AW:.*]] = ptrain.cast %[[AB]] : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
// A plain bias add is not: the softmax reads it in fp32 (the attention scores' place), its output is rounded.
// CHECK-NEXT: %[[SC:.*]] = ptrain.binary add %[[AW]], %{{.*}} : tensor<2x5x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[S:.*]] = ptrain.softmax %[[SC]] {axis = -1 : i64} : tensor<2x5x8xf32>
// CHECK-NEXT: %[[SB:.*]] = ptrain.cast %[[S]] : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
// The residual add reads both 16-bit values widened, and its output feeds the logits GEMM as bf16.
// CHECK-NEXT: %[[XW2:.*]] = ptrain.cast %[[XB]] : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
// CHECK-NEXT: %[[SW:.*]] = ptrain.cast %[[SB]] : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
// CHECK-NEXT: %[[R:.*]] = ptrain.binary add %[[XW2]], %[[SW]] : tensor<2x5x8xf32>, tensor<2x5x8xf32>
// CHECK-NEXT: %[[RB:.*]] = ptrain.cast %[[R]] : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
// CHECK: %[[LOGITS:.*]] = ptrain.matmul %[[RB]], %{{.*}} {accumulate = f32} : tensor<2x5x8xbf16>, tensor<8x16xbf16>
// The loss stays fp32.
// CHECK: ptrain.cross_entropy %{{.*}}, %{{.*}} : tensor<2x4x16xf32>, tensor<2x4xi64>
// The backward reads the saved 16-bit values, widened right before each gradient op; gradients are not rounded
// (only cast as GEMM operands).
// CHECK: %[[SW3:.*]] = ptrain.cast %[[SB]] : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
// CHECK-NEXT: %[[DS:.*]] = ptrain.softmax_grad %{{.*}}, %[[SW3]] {axis = -1 : i64} : tensor<2x5x8xf32>
// CHECK: %[[MBW2:.*]] = ptrain.cast %[[MBB]] : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
// CHECK-NEXT: %[[DA:.*]] = ptrain.gelu_grad %[[DS]], %[[MBW2]] : tensor<2x5x8xf32>
// CHECK-NEXT: %[[DAB:.*]] = ptrain.cast %[[DA]] : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
// CHECK-NOT: ptrain.cast %[[DAB]]
// CHECK: %[[XW3:.*]] = ptrain.cast %[[XB]] : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
// CHECK-NEXT: %{{.*}}, %{{.*}} = ptrain.layer_norm_grad %{{.*}}, %[[XW3]], %{{.*}} {{.*}} : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[DX:.*]] = ptrain.binary add %{{.*}}, %{{.*}} : tensor<2x5x8xf32>, tensor<2x5x8xf32>
// CHECK-NOT: ptrain.cast %[[DX]]
// CHECK: ptrain.adamw
// CHECK: return

// precision=fp16: the same places in IEEE binary16.
// F16-LABEL: func.func @train_step
// F16: %[[X:.*]] = ptrain.binary add %{{.*}}, %{{.*}} : tensor<2x5x8xf32>, tensor<5x8xf32>
// F16-NEXT: %[[XH:.*]] = ptrain.cast %[[X]] : tensor<2x5x8xf32> -> tensor<2x5x8xf16>
// F16-NEXT: %[[XW:.*]] = ptrain.cast %[[XH]] : tensor<2x5x8xf16> -> tensor<2x5x8xf32>
// F16-NEXT: ptrain.layer_norm %[[XW]]
// F16: ptrain.softmax
// F16-NEXT: ptrain.cast %{{.*}} : tensor<2x5x8xf32> -> tensor<2x5x8xf16>
// F16-NOT: bf16
// F16: return

// half-activations=false: only the GEMM operands are cast (the step before slice 2): nothing is read back widened.
// OFF-LABEL: func.func @train_step
// OFF-NOT: xbf16> -> tensor<2x5x8xf32>
// OFF: ptrain.adamw

// BAD: --ptrain-build-training-step: half-activations=false keeps a 16-bit step's activations fp32 and needs precision=bf16 or fp16, got precision=fp32
