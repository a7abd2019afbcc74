// RUN: ptrain-opt %s --ptrain-outline-elementwise=remarks=true -o /dev/null 2>&1 | FileCheck %s
// RUN: ptrain-opt %s --ptrain-outline-elementwise -o /dev/null 2>&1 | FileCheck %s --check-prefix=QUIET --allow-empty

// The bytes a chain moves (bench/generated_kernels/bytes_per_step.py sums them per step). Bias + GELU over 4 x 16
// f32: fused, x (256 B) and the bias (64 B) read once and the GELU written once (256 B): 576 B; one call per op,
// the add reads 320 B and writes 256, the GELU reads and writes 256 each: 1088 B.
// CHECK: remark: elementwise chain in @bias_gelu: ptrain_kernel_0, 2 ops, fused 576 bytes, unfused 1088 bytes
// QUIET-NOT: remark
func.func @bias_gelu(%x: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = ptrain.binary add %x, %b : tensor<4x16xf32>, tensor<16xf32>
  %1 = ptrain.gelu %0 : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
