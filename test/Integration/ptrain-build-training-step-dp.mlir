// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 bucket-bytes=300000" | FileCheck %s
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2" | FileCheck %s --check-prefix=ONE
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2 bucket-bytes=0" | FileCheck %s --check-prefix=EACH
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2" --ptrain-schedule --ptrain-lower-to-runtime | FileCheck %s --check-prefix=LOSS
// RUN: not ptrain-opt %t.mlir --ptrain-build-training-step="dp=2" 2>&1 | FileCheck %s --check-prefix=SINGLE
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="dp=0" 2>&1 | FileCheck %s --check-prefix=DP0

// Data parallelism: the grid gets a dp axis; each stage's optimizer step averages its gradient accumulators
// over dp in buckets of at most bucket-bytes (parameters in reverse order of first use, all buckets started
// before the first wait), then sums the tied embedding over pp, then runs AdamW.

// CHECK: ptrain.grid @grid(dp = 2, pp = 2)
// CHECK-LABEL: func.func @stage0_optimizer_step
// The last parameter used on stage 0 (layer 1's MLP output projection) opens the first bucket.
// CHECK: %[[B0:.*]] = ptrain.state_read @blocks.1.mlp.proj.bias.grad : tensor<128xf32>
// CHECK: %[[W0:.*]] = ptrain.state_read @blocks.1.mlp.proj.weight.grad : tensor<128x512xf32>
// CHECK: %[[F0:.*]] = ptrain.reshape %[[W0]] : tensor<128x512xf32> -> tensor<65536xf32>
// CHECK: %[[CAT:.*]] = ptrain.concat %[[B0]], %[[F0]], %{{.*}} {axis = 0 : i64} : tensor<128xf32>, tensor<65536xf32>, tensor<512xf32> -> tensor<66176xf32>
// CHECK: %[[R0:.*]] = ptrain.all_reduce_start %[[CAT]] on @grid axes [dp] reduction = avg : tensor<66176xf32>
// CHECK-COUNT-6: ptrain.all_reduce_start {{.*}} on @grid axes [dp] reduction = avg
// CHECK-NOT: ptrain.all_reduce_start {{.*}} axes [dp]
// CHECK: ptrain.wait %[[R0]]
// CHECK: ptrain.split {{.*}} sizes = array<i64: 128, 65536, 512>
// CHECK: ptrain.all_reduce_start {{.*}} on @grid axes [pp] reduction = sum : tensor<256x128xf32>
// CHECK: ptrain.adamw

// ONE-LABEL: func.func @stage0_optimizer_step
// ONE-COUNT-1: ptrain.all_reduce_start {{.*}} axes [dp]
// ONE-NOT: ptrain.all_reduce_start {{.*}} axes [dp]
// ONE: axes [pp]
// ONE-LABEL: func.func @stage1_optimizer_step

// EACH-LABEL: func.func @stage1_optimizer_step
// EACH-NOT: ptrain.concat
// EACH: ptrain.all_reduce_start {{.*}} on @grid axes [dp] reduction = avg : tensor<256x128xf32>

// LOSS-LABEL: func.func @stage1_train_step
// LOSS: %[[D:.*]] = arith.constant dense<4.000000e+00> : tensor<f32>
// LOSS: ptrain.binary div %{{.*}}, %[[D]]
// LOSS: ptrain.all_reduce_start {{.*}} on @grid axes [dp, pp] reduction = sum : tensor<f32>

// SINGLE: error: --ptrain-build-training-step: dp = 2 needs a pipeline module (run --ptrain-split-stages, with pp=1 for data parallelism or micro-batches alone)
// DP0: error: --ptrain-build-training-step: dp must be >= 1 and bucket-bytes >= 0, got dp = 0, bucket-bytes = 26214400
