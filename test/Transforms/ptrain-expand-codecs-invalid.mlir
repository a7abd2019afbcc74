// RUN: ptrain-opt %s --split-input-file --ptrain-expand-codecs --verify-diagnostics

// The PowerSGD all-reduce needs exactly one wait in its block.
ptrain.grid @grid(dp = 2)
func.func @no_wait(%g: tensor<4x4xf32>) {
  // expected-error@+1 {{--ptrain-expand-codecs: the PowerSGD all-reduce to expand needs exactly one ptrain.wait in its block}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp] reduction = avg
      {codec = #ptrain.powersgd<rank = 1, warm_start = false>} : tensor<4x4xf32>
  return
}

// -----

// The new state exists only after the wait: a use before it that is not a state write is an error.
ptrain.grid @grid(dp = 2)
func.func @early_use(%g: tensor<4x4xf32>, %e: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = avg
      {codec = #ptrain.powersgd<rank = 1, warm_start = false>, error_feedback}
      : tensor<4x4xf32> state(tensor<4x4xf32>) -> state(tensor<4x4xf32>)
  // expected-error@+1 {{--ptrain-expand-codecs: the PowerSGD all-reduce's new codec state is known only after its wait; this use before the wait is not a ptrain.state_write}}
  %n = ptrain.unary neg %e1 : tensor<4x4xf32>
  %out = ptrain.wait %r : !ptrain.request<tensor<4x4xf32>>
  return %n : tensor<4x4xf32>
}

// -----

// Moving the state write past a read of the same state would change what the read sees: an error.
ptrain.grid @grid(dp = 2)
ptrain.state @e key "sc/w/residual" kind codec_residual : tensor<4x4xf32>
func.func @read_between(%g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = ptrain.state_read @e : tensor<4x4xf32>
  %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [dp] reduction = avg
      {codec = #ptrain.powersgd<rank = 1, warm_start = false>, error_feedback}
      : tensor<4x4xf32> state(tensor<4x4xf32>) -> state(tensor<4x4xf32>)
  ptrain.state_write %e1 to @e : tensor<4x4xf32>
  // expected-error@+1 {{--ptrain-expand-codecs: touches codec state @e between the PowerSGD all-reduce and its wait, where --ptrain-expand-codecs moves its update}}
  %again = ptrain.state_read @e : tensor<4x4xf32>
  %out = ptrain.wait %r : !ptrain.request<tensor<4x4xf32>>
  return %again : tensor<4x4xf32>
}

// -----

// A gathered codec (top-k) needs its one wait in the start's block too: the decodes go where the wait is.
ptrain.grid @grid(dp = 2)
func.func @topk_no_wait(%g: tensor<8xf32>) {
  // expected-error@+1 {{--ptrain-expand-codecs: the gathered-codec all-reduce to expand needs exactly one ptrain.wait in its block}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp] reduction = sum {codec = #ptrain.topk<k = 2>}
      : tensor<8xf32>
  return
}
