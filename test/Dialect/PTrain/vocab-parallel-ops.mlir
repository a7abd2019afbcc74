// RUN: ptrain-opt %s | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s

// The vocabulary-parallel ops round-trip in the custom and the generic form.
ptrain.grid @grid(tp = 4)

// CHECK-LABEL: func.func @vocab_parallel
func.func @vocab_parallel(%table: tensor<3x8xf32>, %ids: tensor<2x5xi64>, %dy: tensor<2x5x8xf32>,
                          %logits: tensor<2x5x3xf32>, %max: tensor<2x5xf32>) -> tensor<2x5x3xf32> {
  // CHECK: ptrain.vocab_parallel_embedding %{{.*}}, %{{.*}} on @grid axis tp : tensor<3x8xf32>, tensor<2x5xi64> -> tensor<2x5x8xf32>
  %x = ptrain.vocab_parallel_embedding %table, %ids on @grid axis tp : tensor<3x8xf32>, tensor<2x5xi64> -> tensor<2x5x8xf32>
  // CHECK: ptrain.vocab_parallel_embedding_grad %{{.*}}, %{{.*}} on @grid axis tp : tensor<2x5x8xf32>, tensor<2x5xi64> -> tensor<3x8xf32>
  %dt = ptrain.vocab_parallel_embedding_grad %dy, %ids on @grid axis tp : tensor<2x5x8xf32>, tensor<2x5xi64> -> tensor<3x8xf32>
  // CHECK: ptrain.tp_all_gather %{{.*}} on @grid axis tp dim 2 : tensor<2x5x3xf32> -> tensor<2x5x12xf32>
  %all = ptrain.tp_all_gather %logits on @grid axis tp dim 2 : tensor<2x5x3xf32> -> tensor<2x5x12xf32>
  // CHECK: %{{.*}}, %{{.*}} = ptrain.vocab_parallel_cross_entropy_parts %{{.*}}, %{{.*}}, %{{.*}} on @grid axis tp {vocab = 10 : i64} : tensor<2x5x3xf32>, tensor<2x5xi64>, tensor<2x5xf32>
  %s:2 = ptrain.vocab_parallel_cross_entropy_parts %logits, %ids, %max on @grid axis tp {vocab = 10 : i64} : tensor<2x5x3xf32>, tensor<2x5xi64>, tensor<2x5xf32>
  // CHECK: ptrain.vocab_parallel_cross_entropy_parts_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} on @grid axis tp {vocab = 10 : i64} : tensor<2x5xf32>, tensor<2x5x3xf32>, tensor<2x5xi64>
  %dl = ptrain.vocab_parallel_cross_entropy_parts_grad %s#0, %s#1, %logits, %ids, %max on @grid axis tp {vocab = 10 : i64} : tensor<2x5xf32>, tensor<2x5x3xf32>, tensor<2x5xi64>
  return %dl : tensor<2x5x3xf32>
}
