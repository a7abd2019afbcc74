// RUN: ptrain-opt %s --split-input-file --ptrain-build-training-step="optimizer=none" --verify-diagnostics | FileCheck %s

// Labels given as @forward's second argument (ptrain.role = "labels", from the importer's --signature): the
// step takes (tokens, labels) and the loss scores every position against its label, not the shifted tokens.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[TOKENS:.*]]: tensor<2x5xi64> {ptrain.onnx_name = "input_ids"}, %[[LABELS:.*]]: tensor<2x5xi64> {ptrain.onnx_name = "labels"})
// CHECK: %[[LOGITS:.*]] = ptrain.embedding
// CHECK-NOT: ptrain.slice
// CHECK: %[[LOSS:.*]] = ptrain.cross_entropy %[[LOGITS]], %[[LABELS]] : tensor<2x5x16xf32>, tensor<2x5xi64>
// CHECK: return %[[LOSS]]
module {
  ptrain.state @emb key "emb" kind parameter : tensor<16x16xf32>
  func.func @forward(%ids: tensor<2x5xi64> {ptrain.onnx_name = "input_ids"},
                     %labels: tensor<2x5xi64> {ptrain.onnx_name = "labels", ptrain.role = "labels"}) -> tensor<2x5x16xf32> {
    %w = ptrain.state_read @emb : tensor<16x16xf32>
    %x = ptrain.embedding %w, %ids : tensor<16x16xf32>, tensor<2x5xi64>
    return %x : tensor<2x5x16xf32>
  }
}

// -----

// Float labels are an error naming both types.
module {
  ptrain.state @emb key "emb" kind parameter : tensor<16x16xf32>
  // expected-error@+1 {{the training step needs @forward's labels to be integer class ids of the token ids' shape 'tensor<2x5xi64>', got 'tensor<2x5xf32>'}}
  func.func @forward(%ids: tensor<2x5xi64>, %labels: tensor<2x5xf32> {ptrain.role = "labels"}) -> tensor<2x5x16xf32> {
    %w = ptrain.state_read @emb : tensor<16x16xf32>
    %x = ptrain.embedding %w, %ids : tensor<16x16xf32>, tensor<2x5xi64>
    return %x : tensor<2x5x16xf32>
  }
}

// -----

// Labels of another shape than the tokens.
module {
  ptrain.state @emb key "emb" kind parameter : tensor<16x16xf32>
  // expected-error@+1 {{the training step needs @forward's labels to be integer class ids of the token ids' shape 'tensor<2x5xi64>', got 'tensor<2x4xi64>'}}
  func.func @forward(%ids: tensor<2x5xi64>, %labels: tensor<2x4xi64> {ptrain.role = "labels"}) -> tensor<2x5x16xf32> {
    %w = ptrain.state_read @emb : tensor<16x16xf32>
    %x = ptrain.embedding %w, %ids : tensor<16x16xf32>, tensor<2x5xi64>
    return %x : tensor<2x5x16xf32>
  }
}

// -----

// A second argument without the labels role is not a training signature.
module {
  ptrain.state @emb key "emb" kind parameter : tensor<16x16xf32>
  // expected-error@+1 {{the training step needs @forward to take token ids [batch, seq] and return logits [batch, seq, vocab]}}
  func.func @forward(%ids: tensor<2x5xi64>, %mask: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
    %w = ptrain.state_read @emb : tensor<16x16xf32>
    %x = ptrain.embedding %w, %ids : tensor<16x16xf32>, tensor<2x5xi64>
    return %x : tensor<2x5x16xf32>
  }
}
