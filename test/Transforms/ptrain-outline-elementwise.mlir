// RUN: ptrain-opt %s --split-input-file --ptrain-outline-elementwise --mlir-print-local-scope | FileCheck %s

// The attention scores' scale and mask: a scalar and a broadcast mask, one kernel of one loop nest.
// CHECK-LABEL: func.func @scale_mask
// CHECK: ptrain.binary mul {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 0 : i64
// CHECK: ptrain.binary add {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 1 : i64
// CHECK: ptrain.binary max
// CHECK-NOT: ptrain.kernel
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_kernel_0(%[[X:.*]]: memref<2x4x4xf32>, %[[S:.*]]: memref<f32>, %[[M:.*]]: memref<4x4xf32>, %[[OUT:.*]]: memref<2x4x4xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[S]], %[[M]] : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK: %[[Q:.*]] = arith.addf %[[P]], %[[C]] : f32
// CHECK: linalg.yield %[[Q]] : f32
func.func @scale_mask(%x: tensor<2x4x4xf32>, %mask: tensor<4x4xf32>) -> tensor<2x4x4xf32> {
  %scale = arith.constant dense<0.5> : tensor<f32>
  %0 = ptrain.binary mul %x, %scale : tensor<2x4x4xf32>, tensor<f32>
  %1 = ptrain.binary add %0, %mask : tensor<2x4x4xf32>, tensor<4x4xf32>
  %2 = ptrain.binary max %1, %x : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  return %2 : tensor<2x4x4xf32>
}

// -----

// Scale, mask and a softmax over the last axis: one kernel, a loop per leading dimension (the innermost over
// groups of four rows), then per row the runtime's softmax passes (prologue stored, max, fp64 exp), the four
// rows' fp64 sums in one loop (four chains in column order), and each row's scaling by its reciprocal.
// CHECK-LABEL: func.func @scale_mask_softmax
// CHECK: ptrain.binary mul {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 0 : i64
// CHECK: ptrain.binary add {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 1 : i64
// CHECK: ptrain.softmax {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 2 : i64
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_kernel_0(%[[X:.*]]: memref<2x4x4xf32>, %[[S:.*]]: memref<f32>, %[[M:.*]]: memref<4x4xf32>, %[[Y:.*]]: memref<2x4x4xf32>)
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[I:[^ ]*]] = %{{.*}} to %{{.*}} step %c1{{(_[0-9]+)?}} {
// CHECK: scf.for %[[J:[^ ]*]] = %{{.*}} to %{{.*}} step %c4{{(_[0-9]+)?}} {
// CHECK: scf.for %[[C:[^ ]*]] =
// CHECK: %[[A:.*]] = memref.load %[[X]][%[[I]], %[[J]], %[[C]]]
// CHECK: %[[B:.*]] = memref.load %[[S]][]
// CHECK: %[[D:.*]] = memref.load %[[M]][%[[J]], %[[C]]]
// CHECK: %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK: arith.addf %[[P]], %[[D]] : f32
// CHECK: memref.store {{.*}}, %[[Y]][%[[I]], %[[J]], %[[C]]]
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: arith.cmpf oeq, {{.*}} : f32
// CHECK: scf.for
// CHECK: arith.subf {{.*}} : f32
// CHECK: arith.extf {{.*}} : f32 to f64
// CHECK: arith.truncf {{.*}} : f64 to f32
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f64, f64, f64, f64)
// CHECK-COUNT-4: arith.addf {{.*}} : f64
// CHECK: arith.divf {{.*}} : f64
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : f32
func.func @scale_mask_softmax(%x: tensor<2x4x4xf32>, %mask: tensor<4x4xf32>) -> tensor<2x4x4xf32> {
  %scale = arith.constant dense<0.5> : tensor<f32>
  %0 = ptrain.binary mul %x, %scale : tensor<2x4x4xf32>, tensor<f32>
  %1 = ptrain.binary add %0, %mask : tensor<2x4x4xf32>, tensor<4x4xf32>
  %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<2x4x4xf32>
  return %2 : tensor<2x4x4xf32>
}

// -----

// Rows that are not a multiple of four go one at a time; the softmax input read after the chain is a second
// output, stored in the rows' first pass.
// CHECK-LABEL: func.func @softmax_rows_one_by_one
// CHECK: func.func @ptrain_kernel_0(%{{.*}}: memref<3x5xf32>, %{{.*}}: memref<3x5xf32>, %[[T:.*]]: memref<3x5xf32>, %[[Y:.*]]: memref<3x5xf32>)
// CHECK: scf.for %[[I:[^ ]*]] = %{{.*}} to %c3 step %c1{{(_[0-9]+)?}} {
// CHECK: scf.for %[[C:[^ ]*]] = %{{.*}} to %c5 step %c1{{(_[0-9]+)?}} {
// CHECK: memref.store %[[V:.*]], %[[T]][%[[I]], %[[C]]]
// CHECK-NEXT: memref.store %[[V]], %[[Y]][%[[I]], %[[C]]]
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f64) {
func.func @softmax_rows_one_by_one(%x: tensor<3x5xf32>, %b: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = ptrain.binary sub %x, %b : tensor<3x5xf32>, tensor<3x5xf32>
  %1 = ptrain.softmax %0 {axis = 1 : i64} : tensor<3x5xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<3x5xf32>
}

// -----

// The softmax gradient starts a chain: per row the dot of dy and y (one row at a time), then dx and the
// scale's gradient per element; the dead sum_to's of the mask's and the scale's gradients between them are passed
// over (nothing is emitted for them) and are no outputs.
// CHECK-LABEL: func.func @softmax_grad_scale
// CHECK: ptrain.softmax_grad {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 0 : i64
// CHECK: ptrain.sum_to
// CHECK-NOT: ptrain.kernel
// CHECK: ptrain.binary mul {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 1 : i64
// CHECK: ptrain.binary mul
// CHECK-NOT: ptrain.kernel
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_kernel_0(%[[DY:.*]]: memref<2x4x4xf32>, %[[Y:.*]]: memref<2x4x4xf32>, %[[S:.*]]: memref<f32>, %[[OUT:[^ ]*]]: memref<2x4x4xf32>) {
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f64) {
// CHECK: arith.mulf {{.*}} : f64
// CHECK: arith.addf {{.*}} : f64
// CHECK: scf.for
// CHECK: arith.subf {{.*}} : f64
// CHECK: arith.mulf {{.*}} : f64
// CHECK: arith.truncf {{.*}} : f64 to f32
// CHECK: memref.load %[[S]][]
// CHECK: arith.mulf {{.*}} : f32
// CHECK: memref.store {{.*}}, %[[OUT]]
func.func @softmax_grad_scale(%dy: tensor<2x4x4xf32>, %y: tensor<2x4x4xf32>, %scores: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %scale = arith.constant dense<0.5> : tensor<f32>
  %0 = ptrain.softmax_grad %dy, %y {axis = -1 : i64} : tensor<2x4x4xf32>
  %1 = ptrain.sum_to %0 : tensor<2x4x4xf32> -> tensor<4x4xf32>
  %2 = ptrain.binary mul %0, %scale : tensor<2x4x4xf32>, tensor<f32>
  %3 = ptrain.binary mul %0, %scores : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %4 = ptrain.sum_to %3 : tensor<2x4x4xf32> -> tensor<f32>
  return %2 : tensor<2x4x4xf32>
}

// -----

// A softmax ends a chain, never starts or continues one, and one over another axis or alone is no chain; a softmax
// gradient never ends one.
// CHECK-LABEL: func.func @softmax_not_fused
// CHECK: ptrain.softmax %{{.*}} {axis = 1 : i64} : tensor<2x4x4xf32>
// CHECK-NOT: ptrain.kernel
// CHECK: ptrain.softmax %{{.*}} {axis = -1 : i64} : tensor<2x4x4xf32>
// CHECK-NOT: ptrain.kernel
// CHECK: ptrain.binary mul {{.*}}ptrain.kernel_op = 0
// CHECK: ptrain.binary add {{.*}}ptrain.kernel_op = 1
// CHECK: ptrain.softmax_grad
// CHECK-NOT: ptrain.kernel
// CHECK: return
func.func @softmax_not_fused(%x: tensor<2x4x4xf32>, %mask: tensor<4x4xf32>) -> tensor<2x4x4xf32> {
  %0 = ptrain.binary add %x, %mask : tensor<2x4x4xf32>, tensor<4x4xf32>
  %1 = ptrain.softmax %0 {axis = 1 : i64} : tensor<2x4x4xf32>
  %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<2x4x4xf32>
  %3 = ptrain.binary mul %2, %x : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %4 = ptrain.binary add %3, %mask : tensor<2x4x4xf32>, tensor<4x4xf32>
  %5 = ptrain.softmax_grad %4, %2 {axis = -1 : i64} : tensor<2x4x4xf32>
  return %5 : tensor<2x4x4xf32>
}

// -----

// An intermediate read after the chain is a second output; a size-1 dimension is read at index 0.
// CHECK-LABEL: func.func @two_outputs
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_kernel_0(%{{.*}}: memref<3x5xf32>, %{{.*}}: memref<1x5xf32>, %{{.*}}: memref<3x5xf32>, %{{.*}}: memref<3x5xf32>, %{{.*}}: memref<3x5xf32>)
// CHECK-NEXT: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>,
// CHECK: arith.subf
// CHECK: arith.divf
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, f32
func.func @two_outputs(%a: tensor<3x5xf32>, %b: tensor<1x5xf32>, %c: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = ptrain.binary sub %a, %b : tensor<3x5xf32>, tensor<1x5xf32>
  %1 = ptrain.binary div %0, %c : tensor<3x5xf32>, tensor<3x5xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<3x5xf32>
}

// -----

// Two residual adds of the same computation share one kernel; max (its NaN rule), a lone op and a pow are not
// chains.
// CHECK-LABEL: func.func @shared_kernel
// CHECK-COUNT-2: ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 0
// CHECK: ptrain.binary pow
// CHECK-NOT: ptrain.kernel_op
// CHECK: module @ptrain_kernels
// CHECK: func.func @ptrain_kernel_0
// CHECK-NOT: func.func @ptrain_kernel_1
func.func @shared_kernel(%x: tensor<8xf32>, %r: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ptrain.binary add %x, %b : tensor<8xf32>, tensor<8xf32>
  %1 = ptrain.binary add %r, %0 : tensor<8xf32>, tensor<8xf32>
  %2 = ptrain.binary max %1, %x : tensor<8xf32>, tensor<8xf32>
  %3 = ptrain.binary add %2, %b : tensor<8xf32>, tensor<8xf32>
  %4 = ptrain.binary add %r, %3 : tensor<8xf32>, tensor<8xf32>
  %5 = ptrain.binary pow %4, %x : tensor<8xf32>, tensor<8xf32>
  %6 = ptrain.binary mul %5, %5 : tensor<8xf32>, tensor<8xf32>
  return %6 : tensor<8xf32>
}

// -----

// Two different chains: two kernels, numbered in order.
// CHECK-LABEL: func.func @two_kernels
// CHECK: ptrain.binary add {{.*}}@ptrain_kernels::@ptrain_kernel_0
// CHECK: ptrain.binary mul {{.*}}@ptrain_kernels::@ptrain_kernel_0
// CHECK: ptrain.binary sub {{.*}}@ptrain_kernels::@ptrain_kernel_1
// CHECK: ptrain.binary div {{.*}}@ptrain_kernels::@ptrain_kernel_1
// CHECK: func.func @ptrain_kernel_0
// CHECK: func.func @ptrain_kernel_1
func.func @two_kernels(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ptrain.binary add %x, %y : tensor<8xf32>, tensor<8xf32>
  %1 = ptrain.binary mul %0, %y : tensor<8xf32>, tensor<8xf32>
  %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<8xf32>
  %3 = ptrain.binary sub %2, %y : tensor<8xf32>, tensor<8xf32>
  %4 = ptrain.binary div %3, %x : tensor<8xf32>, tensor<8xf32>
  return %4 : tensor<8xf32>
}

// -----

// Bias + GELU (the exact form): one kernel whose body is the runtime's fp64 GELU (GeluArith.h): the f32 sum
// widened, erfc's reciprocal, exp's 2^k built in the exponent bits, the product rounded back to f32.
// CHECK-LABEL: func.func @bias_gelu
// CHECK: ptrain.binary add {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 0 : i64
// CHECK: ptrain.gelu {{.*}}ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 1 : i64
// CHECK: func.func @ptrain_kernel_0(%{{.*}}: memref<4x16xf32>, %{{.*}}: memref<16xf32>, %{{.*}}: memref<4x16xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[SUM:.*]] = arith.addf %[[X]], %[[B]] : f32
// CHECK: %[[WIDE:.*]] = arith.extf %[[SUM]] : f32 to f64
// CHECK: arith.cmpf olt, %[[WIDE]]
// CHECK: arith.divf
// CHECK: arith.bitcast %{{.*}} : f64 to i64
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i64 to f64
// CHECK: %[[Y:.*]] = arith.mulf %[[WIDE]], %{{.*}} : f64
// CHECK: %[[NARROW:.*]] = arith.truncf %[[Y]] : f64 to f32
// CHECK: linalg.yield %[[NARROW]] : f32
func.func @bias_gelu(%x: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = ptrain.binary add %x, %b : tensor<4x16xf32>, tensor<16xf32>
  %1 = ptrain.gelu %0 : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// GELU's gradient then a residual add (the backward's dx + the skip connection's gradient): one kernel of
// three inputs.
// CHECK-LABEL: func.func @gelu_grad_residual
// CHECK: ptrain.gelu_grad {{.*}}ptrain.kernel_op = 0 : i64
// CHECK: ptrain.binary add {{.*}}ptrain.kernel_op = 1 : i64
// CHECK: func.func @ptrain_kernel_0(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>)
// CHECK: ^bb0(%[[DY:.*]]: f32, %[[X:.*]]: f32, %[[R:.*]]: f32, %{{.*}}: f32):
// CHECK: arith.extf %[[X]] : f32 to f64
// CHECK: %[[DYW:.*]] = arith.extf %[[DY]] : f32 to f64
// CHECK: %[[DX:.*]] = arith.mulf %[[DYW]], %{{.*}} : f64
// CHECK: %[[DXN:.*]] = arith.truncf %[[DX]] : f64 to f32
// CHECK: %[[OUT:.*]] = arith.addf %[[R]], %[[DXN]] : f32
// CHECK: linalg.yield %[[OUT]] : f32
func.func @gelu_grad_residual(%dy: tensor<8xf32>, %x: tensor<8xf32>, %r: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ptrain.gelu_grad %dy, %x : tensor<8xf32>
  %1 = ptrain.binary add %r, %0 : tensor<8xf32>, tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// The tanh-approximated GELU has no arith twin of its runtime kernel: it breaks the chain, forward and backward.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-NOT: ptrain.kernel
// CHECK: return
func.func @gelu_tanh(%x: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ptrain.binary add %x, %b : tensor<8xf32>, tensor<8xf32>
  %1 = ptrain.gelu %0 {approximate = #ptrain<gelu_approximation tanh>} : tensor<8xf32>
  %2 = ptrain.gelu_grad %1, %x {approximate = #ptrain<gelu_approximation tanh>} : tensor<8xf32>
  %3 = ptrain.binary add %2, %b : tensor<8xf32>, tensor<8xf32>
  return %3 : tensor<8xf32>
}

// -----

// A lone exact GELU or GELU gradient (the bundled GPT's MLP, whose bias rides on the GEMM) stays the runtime's
// kernel: the generated loop alone is no faster (bench/README.md, "GELU in the chains").
// CHECK-LABEL: func.func @lone_gelu
// CHECK-NOT: ptrain.kernel
// CHECK: return
func.func @lone_gelu(%x: tensor<8xf32>, %dy: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ptrain.gelu %x : tensor<8xf32>
  %1 = ptrain.binary max %0, %x : tensor<8xf32>, tensor<8xf32>
  %2 = ptrain.gelu_grad %dy, %1 : tensor<8xf32>
  return %2 : tensor<8xf32>
}
