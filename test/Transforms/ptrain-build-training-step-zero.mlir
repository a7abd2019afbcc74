// ZeRO-1 (zero=1, docs/DistributedOptimizer.md): the dp all-reduce of each gradient bucket becomes a
// reduce-scatter, AdamW runs on the rank's shard with shard-sized moments, the parameters are all-gathered.
// dp = 3: the matrices' bucket (head, wte: 256 elements) is padded to 258, the vector's (bias: 8) to 9.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" | FileCheck %s
// The options that zero=1 cannot build, each an error naming them.
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=1 zero=1" 2>&1 | FileCheck %s --check-prefix=DP1
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 zero=2" 2>&1 | FileCheck %s --check-prefix=ZERO2
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 zero=-1" 2>&1 | FileCheck %s --check-prefix=ZERO2
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 zero=1 optimizer=sgd" 2>&1 | FileCheck %s --check-prefix=SGD
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 zero=1 deterministic-dp=true" 2>&1 | FileCheck %s --check-prefix=DET
// With clipping: every shard waited, their squared norms all-reduced over dp, each shard scaled before AdamW.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 zero=1 clip-norm=1.0" | FileCheck %s --check-prefix=CLIP
// RUN: not ptrain-opt %s --ptrain-build-training-step="zero=1" 2>&1 | FileCheck %s --check-prefix=DP1
// DP1: error: --ptrain-build-training-step: zero=1 shards the optimizer state over dp and needs dp > 1, got dp = 1
// ZERO2: error: --ptrain-build-training-step: zero must be 0 (plain data parallelism) or 1 (ZeRO-1, the distributed optimizer)
// SGD: error: --ptrain-build-training-step: zero=1 shards AdamW's moments and needs optimizer=adamw, got optimizer=sgd
// DET: error: --ptrain-build-training-step: zero=1 and deterministic-dp=true: the reduce-scatter sums the replicas in the communicator's order
// CLIP-LABEL: func.func @stage0_optimizer_step()
// CLIP: %[[R0:.*]] = ptrain.reduce_scatter_start
// CLIP: %[[R1:.*]] = ptrain.reduce_scatter_start
// CLIP: %[[G0:.*]] = ptrain.wait %[[R0]]
// CLIP: %[[G1:.*]] = ptrain.wait %[[R1]]
// CLIP: ptrain.sum_squares %[[G0]]
// CLIP: ptrain.sum_squares %[[G1]]
// CLIP: %[[N:.*]] = ptrain.all_reduce_start %{{.*}} on @grid axes [dp] reduction = sum {ptrain.global_norm}
// CLIP: %[[SCALE:.*]] = ptrain.clip_scale %{{.*}} {max_norm = 1.000000e+00 : f64}
// CLIP: %[[S0:.*]] = ptrain.binary mul %[[G0]], %[[SCALE]]
// CLIP: ptrain.adamw %{{.*}}, %[[S0]],

// The moments hold one shard each; the attribute names the bucket's parameters and sizes.
// CHECK-DAG: ptrain.state @stage0_zero_bucket0_adam_m key "stage0.zero_bucket0/adam_m" kind optimizer_moment {ptrain.zero_bucket = #ptrain.zero_bucket<params = ["head", "wte"], elements = 256, padded = 258, axis = "dp">} : tensor<86xf32>
// CHECK-DAG: ptrain.state @stage0_zero_bucket0_adam_v key "stage0.zero_bucket0/adam_v" kind optimizer_moment {{.*}} : tensor<86xf32>
// CHECK-DAG: ptrain.state @stage0_zero_bucket1_adam_m key "stage0.zero_bucket1/adam_m" kind optimizer_moment {ptrain.zero_bucket = #ptrain.zero_bucket<params = ["bias"], elements = 8, padded = 9, axis = "dp">} : tensor<3xf32>
// No whole-parameter moments.
// CHECK-NOT: @wte.adam_m
// CHECK-LABEL: func.func @stage0_optimizer_step()
// Both reduce-scatters start before the first wait.
// CHECK: %[[HG:.*]] = ptrain.state_read @head.grad : tensor<8x16xf32>
// CHECK: %[[WG:.*]] = ptrain.state_read @wte.grad : tensor<16x8xf32>
// CHECK: %[[PAD:.*]] = arith.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: %[[FLAT:.*]] = ptrain.concat %{{.*}}, %{{.*}}, %[[PAD]] {axis = 0 : i64} : tensor<128xf32>, tensor<128xf32>, tensor<2xf32> -> tensor<258xf32>
// CHECK: %[[RS0:.*]] = ptrain.reduce_scatter_start %[[FLAT]] on @grid axes [dp] scatter_dim = 0 reduction = avg : tensor<258xf32> -> !ptrain.request<tensor<86xf32>>
// CHECK: %[[RS1:.*]] = ptrain.reduce_scatter_start %{{.*}} on @grid axes [dp] scatter_dim = 0 reduction = avg : tensor<9xf32> -> !ptrain.request<tensor<3xf32>>
// CHECK: %[[G0:.*]] = ptrain.wait %[[RS0]]
// The rank's shard of the replicated parameters, updated with decay (matrices).
// CHECK: %[[P0:.*]] = ptrain.tp_split %{{.*}} on @grid axis dp dim 0 : tensor<258xf32> -> tensor<86xf32>
// CHECK: %[[NP0:.*]], %{{.*}}, %{{.*}} = ptrain.adamw %[[P0]], %[[G0]], {{.*}} weight_decay = 1.000000e-01 : f64} : tensor<86xf32>
// CHECK: %[[AG0:.*]] = ptrain.all_gather_start %[[NP0]] on @grid axes [dp] gather_dim = 0 : tensor<86xf32> -> !ptrain.request<tensor<258xf32>>
// The vectors' bucket: no decay.
// CHECK: ptrain.adamw {{.*}} weight_decay = 0.000000e+00 : f64} : tensor<3xf32>
// CHECK: %[[FULL:.*]] = ptrain.wait %[[AG0]] : !ptrain.request<tensor<258xf32>>
// CHECK: %[[CUT:.*]] = ptrain.slice %[[FULL]] {offsets = array<i64: 0>, sizes = array<i64: 256>} : tensor<258xf32> -> tensor<256xf32>
// CHECK: %[[PARTS:.*]]:2 = ptrain.split %[[CUT]] {axis = 0 : i64, sizes = array<i64: 128, 128>}
// CHECK: %[[H:.*]] = ptrain.reshape %[[PARTS]]#0 : tensor<128xf32> -> tensor<8x16xf32>
// CHECK: ptrain.state_write %[[H]] to @head
// CHECK: ptrain.state_write %{{.*}} to @bias : tensor<8xf32>
// The accumulators are zeroed.
// CHECK: ptrain.state_write %{{.*}} to @wte.grad
// CHECK-NOT: all_reduce_start
// CHECK: return

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @bias key "bias" kind parameter : tensor<8xf32>
ptrain.state @head key "head" kind parameter : tensor<8x16xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %b = ptrain.state_read @bias : tensor<8xf32>
  %h = ptrain.state_read @head : tensor<8x16xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %y = ptrain.binary add %x, %b : tensor<2x5x8xf32>, tensor<8xf32>
  %logits = ptrain.matmul %y, %h : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}
