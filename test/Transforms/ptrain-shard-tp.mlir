// RUN: ptrain-opt %s --split-input-file --ptrain-shard-tp="tp=2" | FileCheck %s
// RUN: ptrain-opt %s --split-input-file --ptrain-shard-tp="tp=1" | FileCheck %s --check-prefix=TP1

// One layer as --ptrain-raise leaves it (ptrain.layers on @forward, ptrain.linear roles on the projections,
// ptrain.attention on the softmax), without embeddings, norms or mask, which tensor parallelism leaves alone.

// Attention with 2 heads at tp = 2: the fused Q|K|V weight is column-parallel per head (dim 1 viewed as
// 3 groups x tp x 4: each rank keeps 4 columns of Q, of K and of V), everything between the projections runs
// on 1 head, and the output projection is row-parallel. f (tp_copy) before the first, g (tp_all_reduce)
// after the second.
// CHECK-LABEL: ptrain.grid @grid(tp = 2)
// CHECK: ptrain.state @qkv key "blocks.0.attn.qkv.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [8, 24]>} : tensor<8x12xf32>
// CHECK: ptrain.state @proj key "blocks.0.attn.proj.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [8, 8]>} : tensor<4x8xf32>
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:.*]]: tensor<2x4x8xf32>)
// CHECK-DAG: %[[WQKV:.*]] = ptrain.state_read @qkv : tensor<8x12xf32>
// CHECK-DAG: %[[WO:.*]] = ptrain.state_read @proj : tensor<4x8xf32>
// CHECK: %[[F:.*]] = ptrain.tp_copy %[[X]] on @grid axis tp : tensor<2x4x8xf32>
// CHECK-NEXT: %[[QKV:.*]] = ptrain.matmul %[[F]], %[[WQKV]] {{.*}} : tensor<2x4x8xf32>, tensor<8x12xf32>
// CHECK-NEXT: ptrain.split %[[QKV]] {axis = 2 : i64, sizes = array<i64: 4, 4, 4>}
// CHECK: ptrain.softmax %{{.*}} : tensor<2x1x4x4xf32>
// CHECK: %[[CTX:.*]] = ptrain.reshape %{{.*}} : tensor<2x4x1x4xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[PART:.*]] = ptrain.matmul %[[CTX]], %[[WO]] {{.*}} : tensor<2x4x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[G:.*]] = ptrain.tp_all_reduce %[[PART]] on @grid axis tp : tensor<2x4x8xf32>
// CHECK-NEXT: ptrain.binary add %[[X]], %[[G]]
// tp = 1 changes nothing: no grid, no slices, no f or g.
// TP1-NOT: ptrain.grid
// TP1-NOT: ptrain.tp_slice
// TP1-LABEL: func.func @forward(
// TP1-NOT: ptrain.tp_
// TP1: return
ptrain.state @qkv key "blocks.0.attn.qkv.weight" kind parameter : tensor<8x24xf32>
ptrain.state @proj key "blocks.0.attn.proj.weight" kind parameter : tensor<8x8xf32>
func.func @forward(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.layers = 1 : i64} {
  %wqkv = ptrain.state_read @qkv : tensor<8x24xf32>
  %wo = ptrain.state_read @proj : tensor<8x8xf32>
  %qkv = ptrain.matmul %x, %wqkv {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x4x8xf32>, tensor<8x24xf32>
  %q, %k, %v = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %q4 = ptrain.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %qh = ptrain.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %k4 = ptrain.reshape %k : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %kt = ptrain.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %v4 = ptrain.reshape %v : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %vh = ptrain.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %s = ptrain.matmul %qh, %kt : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %p = ptrain.softmax %s {axis = -1 : i64, ptrain.attention = {head_dim = 4 : i64, heads = 2 : i64, kv_heads = 2 : i64, layer = 0 : i64}} : tensor<2x2x4x4xf32>
  %c = ptrain.matmul %p, %vh : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %ct = ptrain.transpose %c {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %cm = ptrain.reshape %ct : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %o = ptrain.matmul %cm, %wo {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x4x8xf32>, tensor<8x8xf32>
  %y = ptrain.binary add %x, %o : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// MLP at tp = 2: the up-projection and its bias are column-parallel (8 of the 16 columns each), GELU runs on
// the rank's 8, the down-projection is row-parallel; g comes before the down-projection's bias, which stays
// replicated (added once, after the sum).
// CHECK-LABEL: ptrain.grid @grid(tp = 2)
// CHECK: ptrain.state @fc key "blocks.0.mlp.fc.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 1, shape = [8, 16]>} : tensor<8x8xf32>
// CHECK: ptrain.state @fc_b key "blocks.0.mlp.fc.bias" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [16]>} : tensor<8xf32>
// CHECK: ptrain.state @proj key "blocks.0.mlp.proj.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [16, 8]>} : tensor<8x8xf32>
// CHECK: ptrain.state @proj_b key "blocks.0.mlp.proj.bias" kind parameter : tensor<8xf32>
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:.*]]: tensor<2x4x8xf32>)
// CHECK: %[[F:.*]] = ptrain.tp_copy %[[X]] on @grid axis tp
// CHECK-NEXT: %[[U:.*]] = ptrain.matmul %[[F]], %{{.*}} {{.*}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: %[[UB:.*]] = ptrain.binary add %{{.*}}, %[[U]] : tensor<8xf32>, tensor<2x4x8xf32>
// CHECK-NEXT: %[[A:.*]] = ptrain.gelu %[[UB]]
// CHECK-NEXT: %[[D:.*]] = ptrain.matmul %[[A]], %{{.*}} {{.*}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: %[[G:.*]] = ptrain.tp_all_reduce %[[D]] on @grid axis tp : tensor<2x4x8xf32>
// CHECK-NEXT: ptrain.binary add %{{.*}}, %[[G]] : tensor<8xf32>, tensor<2x4x8xf32>
// TP1-NOT: ptrain.grid
// TP1-LABEL: func.func @forward(
// TP1-NOT: ptrain.tp_
// TP1: return
ptrain.state @fc key "blocks.0.mlp.fc.weight" kind parameter : tensor<8x16xf32>
ptrain.state @fc_b key "blocks.0.mlp.fc.bias" kind parameter : tensor<16xf32>
ptrain.state @proj key "blocks.0.mlp.proj.weight" kind parameter : tensor<16x8xf32>
ptrain.state @proj_b key "blocks.0.mlp.proj.bias" kind parameter : tensor<8xf32>
func.func @forward(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.layers = 1 : i64} {
  %w1 = ptrain.state_read @fc : tensor<8x16xf32>
  %b1 = ptrain.state_read @fc_b : tensor<16xf32>
  %w2 = ptrain.state_read @proj : tensor<16x8xf32>
  %b2 = ptrain.state_read @proj_b : tensor<8xf32>
  %u = ptrain.matmul %x, %w1 {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x4x8xf32>, tensor<8x16xf32>
  %ub = ptrain.binary add %b1, %u : tensor<16xf32>, tensor<2x4x16xf32>
  %g = ptrain.gelu %ub : tensor<2x4x16xf32>
  %d = ptrain.matmul %g, %w2 {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x4x16xf32>, tensor<16x8xf32>
  %db = ptrain.binary add %b2, %d : tensor<8xf32>, tensor<2x4x8xf32>
  %y = ptrain.binary add %x, %db : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
