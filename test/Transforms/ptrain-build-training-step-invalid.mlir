// RUN: ptrain-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect --ptrain-build-training-step

// The forward must take token ids [batch, seq] and return logits [batch, seq, vocab].
// expected-error@+1 {{the training step needs @forward to take token ids [batch, seq] and return logits [batch, seq, vocab], got '(tensor<2x5xf32>) -> tensor<2x5x16xf32>'}}
func.func @forward(%x: tensor<2x5xf32>) -> tensor<2x5x16xf32> {
  %0 = ptrain.reshape %x : tensor<2x5xf32> -> tensor<2x5x1xf32>
  %1 = ptrain.binary add %0, %0 : tensor<2x5x1xf32>, tensor<2x5x1xf32>
  %2 = "test.unreachable"() : () -> tensor<2x5x16xf32>
  return %2 : tensor<2x5x16xf32>
}

// -----

// There is a forward to differentiate.
// expected-error@+1 {{--ptrain-build-training-step: no function @forward}}
module {
  func.func @model(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
    %0 = "test.unreachable"() : () -> tensor<2x5x16xf32>
    return %0 : tensor<2x5x16xf32>
  }
}

// -----

// An op on the path from a parameter to the loss without a gradient rule: the rule's error, then one naming
// the op and the initializer that made its input trainable (the ONNX node's name too, when the location
// has one: test/Import/ONNX/initializer-classes.onnxtext).
ptrain.state @w key "transformer.wte.weight" kind parameter : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @w : tensor<16x8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  // expected-error@+2 {{has no gradient rule for 'max'}}
  // expected-error@+1 {{'ptrain.binary' max is on the path to the loss but cannot be differentiated; its input is trainable through initializer 'transformer.wte.weight' (if that should be a constant, pass the importer --frozen '<name>'; docs/ImportONNX.md) (the rule's reason is above)}}
  %y = ptrain.binary max %x, %x : tensor<2x5x8xf32>, tensor<2x5x8xf32>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %y, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}

// -----

// An export with an attention mask beside the token ids: the error names the importer's --signature.
// expected-error@+1 {{got '(tensor<2x5xi64>, tensor<2x5xf32>) -> tensor<2x5x16xf32>'; import an export with more inputs or outputs with --signature (e.g. --signature auto; docs/ImportONNX.md)}}
func.func @forward(%ids: tensor<2x5xi64>, %mask: tensor<2x5xf32>) -> tensor<2x5x16xf32> {
  %0 = "test.unreachable"() : () -> tensor<2x5x16xf32>
  return %0 : tensor<2x5x16xf32>
}

// -----

// A batch of zero sequences trains on nothing.
// expected-error@+1 {{the training step needs @forward's token ids to have a batch of at least 1, got 'tensor<0x5xi64>'}}
func.func @forward(%ids: tensor<0x5xi64>) -> tensor<0x5x16xf32> {
  %0 = "test.unreachable"() : () -> tensor<0x5x16xf32>
  return %0 : tensor<0x5x16xf32>
}

// -----

// A sequence of one token leaves the next-token loss nothing to predict.
// expected-error@+1 {{the training step needs @forward's token ids 'tensor<2x1xi64>' to have a sequence of at least 2 tokens (a next-token loss over a shorter one has nothing to predict)}}
func.func @forward(%ids: tensor<2x1xi64>) -> tensor<2x1x16xf32> {
  %0 = "test.unreachable"() : () -> tensor<2x1x16xf32>
  return %0 : tensor<2x1x16xf32>
}
