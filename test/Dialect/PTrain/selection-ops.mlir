// RUN: ptrain-opt %s | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s

// Round trip of the masks, selection, reduction, cast, broadcast, gather, log-softmax and dropout model ops, in
// the custom and the generic form.

// CHECK-LABEL: func.func @masks
func.func @masks(%pos: tensor<64xi64>, %len: tensor<1xi64>, %s: tensor<4x64xf32>, %m: tensor<64xi1>)
    -> (tensor<64xi1>, tensor<4x64xf32>) {
  // CHECK: ptrain.compare lt %{{.*}}, %{{.*}} : tensor<64xi64>, tensor<1xi64>
  %lt = ptrain.compare lt %pos, %len : tensor<64xi64>, tensor<1xi64>
  // CHECK: ptrain.compare and %{{.*}}, %{{.*}} : tensor<64xi1>, tensor<64xi1>
  %both = ptrain.compare and %lt, %m : tensor<64xi1>, tensor<64xi1>
  %neg = arith.constant dense<-1.0e+09> : tensor<f32>
  // CHECK: ptrain.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<64xi1>, tensor<4x64xf32>, tensor<f32>
  %sel = ptrain.select %both, %s, %neg : tensor<64xi1>, tensor<4x64xf32>, tensor<f32>
  return %both, %sel : tensor<64xi1>, tensor<4x64xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<4x64x128xf32>) -> (tensor<4x64x1xf32>, tensor<4xf32>, tensor<4x64x128xf32>) {
  // CHECK: ptrain.reduce mean %{{.*}} {axes = array<i64: -1>, keepdims = true} : tensor<4x64x128xf32> -> tensor<4x64x1xf32>
  %mean = ptrain.reduce mean %x {axes = array<i64: -1>, keepdims = true} : tensor<4x64x128xf32> -> tensor<4x64x1xf32>
  // CHECK: ptrain.reduce max %{{.*}} {axes = array<i64: 1, 2>, keepdims = false} : tensor<4x64x128xf32> -> tensor<4xf32>
  %max = ptrain.reduce max %x {axes = array<i64: 1, 2>, keepdims = false} : tensor<4x64x128xf32> -> tensor<4xf32>
  // CHECK: ptrain.log_softmax %{{.*}} {axis = -1 : i64} : tensor<4x64x128xf32>
  %lp = ptrain.log_softmax %x {axis = -1 : i64} : tensor<4x64x128xf32>
  return %mean, %max, %lp : tensor<4x64x1xf32>, tensor<4xf32>, tensor<4x64x128xf32>
}

// CHECK-LABEL: func.func @conversions
func.func @conversions(%x: tensor<4x64xf32>, %p: tensor<1x64xi64>, %h: tensor<4x64x32xf32>, %i: tensor<i64>)
    -> (tensor<4x64xbf16>, tensor<4x64xi64>, tensor<4x32xf32>) {
  // CHECK: ptrain.cast %{{.*}} : tensor<4x64xf32> -> tensor<4x64xbf16>
  %b = ptrain.cast %x : tensor<4x64xf32> -> tensor<4x64xbf16>
  // CHECK: ptrain.broadcast_to %{{.*}} : tensor<1x64xi64> -> tensor<4x64xi64>
  %e = ptrain.broadcast_to %p : tensor<1x64xi64> -> tensor<4x64xi64>
  // CHECK: ptrain.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<4x64x32xf32>, tensor<i64> -> tensor<4x32xf32>
  %g = ptrain.gather %h, %i {axis = 1 : i64} : tensor<4x64x32xf32>, tensor<i64> -> tensor<4x32xf32>
  return %b, %e, %g : tensor<4x64xbf16>, tensor<4x64xi64>, tensor<4x32xf32>
}

// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<4x64x128xf32>, %t: tensor<i64>) -> tensor<4x64x128xf32> {
  // CHECK: ptrain.dropout %{{.*}}, %{{.*}} {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<4x64x128xf32>, tensor<i64>
  %y = ptrain.dropout %x, %t {ratio = 0.1 : f64, seed = 7 : i64} : tensor<4x64x128xf32>, tensor<i64>
  // CHECK: ptrain.dropout %{{.*}}, %{{.*}} {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 4, replica_axis = "dp", replica_rows = 8, shard_axis = "tp", shard_dim = 1>, ratio = 1.000000e-01 : f64, seed = 9 : i64}
  %z = ptrain.dropout %y, %t {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 4, replica_axis = "dp", replica_rows = 8, shard_axis = "tp", shard_dim = 1>, ratio = 0.1 : f64, seed = 9 : i64} : tensor<4x64x128xf32>, tensor<i64>
  return %z : tensor<4x64x128xf32>
}
