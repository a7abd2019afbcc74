// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// SumTo (C1): the result broadcasts to the input.
func.func @sum_to_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result 'tensor<3xf32>' must broadcast to the input 'tensor<4x8xf32>'}}
  %0 = ptrain.sum_to %x : tensor<4x8xf32> -> tensor<3xf32>
  return
}

// -----

// Pad (C1): one entry per dimension.
func.func @pad_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{needs one low and one high entry per dimension of 'tensor<4x8xf32>'}}
  %0 = ptrain.pad %x {low = array<i64: 0>, high = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<4x9xf32>
  return
}

// -----

// Pad (C1): non-negative padding.
func.func @pad_c1_negative(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{padding of dimension 1 must be >= 0}}
  %0 = ptrain.pad %x {low = array<i64: 0, -1>, high = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Pad (C2): the padded shape.
func.func @pad_c2(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result must be 'tensor<4x9xf32>', got 'tensor<4x10xf32>'}}
  %0 = ptrain.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<4x10xf32>
  return
}

// -----

// LayerNormGrad (C1): scale has the normalized shape.
func.func @layer_norm_grad_c1(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{grad must be 'tensor<4x8xf32>' and scale 'tensor<8xf32>'}}
  %dx, %dg = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// LayerNormGrad (C2): gradients have the input's and the scale's types.
func.func @layer_norm_grad_c2(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{gradients must be 'tensor<4x8xf32>' for the input and 'tensor<8xf32>' for scale and bias}}
  %dx, %dg = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// EmbeddingGrad (C1): grad is ids.shape x H of the V x H table.
func.func @embedding_grad_c1(%dy: tensor<4x8xf32>, %ids: tensor<5xi64>) {
  // expected-error@+1 {{grad 'tensor<4x8xf32>' must be ids.shape x H for the V x H table 'tensor<16x8xf32>'}}
  %0 = ptrain.embedding_grad %dy, %ids : tensor<4x8xf32>, tensor<5xi64> -> tensor<16x8xf32>
  return
}

// -----

// CrossEntropyGrad (C1): a scalar loss gradient.
func.func @cross_entropy_grad_c1(%d: tensor<4xf32>, %l: tensor<4x16xf32>, %y: tensor<4xi64>) {
  // expected-error@+1 {{grad must be a scalar, got 'tensor<4xf32>'}}
  %0 = ptrain.cross_entropy_grad %d, %l, %y : tensor<4xf32>, tensor<4x16xf32>, tensor<4xi64>
  return
}

// -----

// CrossEntropyGrad (C1): labels have the logits' leading shape.
func.func @cross_entropy_grad_c1_labels(%d: tensor<f32>, %l: tensor<4x16xf32>, %y: tensor<3xi64>) {
  // expected-error@+1 {{labels 'tensor<3xi64>' must have the logits' shape without the class dimension, got 'tensor<4x16xf32>'}}
  %0 = ptrain.cross_entropy_grad %d, %l, %y : tensor<f32>, tensor<4x16xf32>, tensor<3xi64>
  return
}

// -----

// Slice (C1): one offset and size per dimension.
func.func @slice_c1(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{needs one offset and one size per dimension of 'tensor<4x8xf32>'}}
  %0 = ptrain.slice %x {offsets = array<i64: 0>, sizes = array<i64: 4>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Slice (C2): in bounds.
func.func @slice_c2(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{slice [6, 10) of dimension 1 is out of bounds for 'tensor<4x8xf32>'}}
  %0 = ptrain.slice %x {offsets = array<i64: 0, 6>, sizes = array<i64: 4, 4>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

// Slice (C3): the result shape is the sizes.
func.func @slice_c3(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<4x4xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  %0 = ptrain.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 4>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return
}

// -----

// Concat (C2): axis in range.
func.func @concat_c2(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = ptrain.concat %x, %x {axis = 2 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return
}

// -----

// Concat (C3): the other dimensions agree.
func.func @concat_c3(%x: tensor<4x8xf32>, %y: tensor<3x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inputs differ in dimension 0: 'tensor<4x8xf32>' and 'tensor<3x8xf32>'}}
  %0 = ptrain.concat %x, %y {axis = 1 : i64} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x16xf32>
  return
}

// -----

// LRSchedule: warm-up within the schedule.
// expected-error@+1 {{learning-rate schedule needs 0 <= warmup <= total and total >= 1, got warmup 200 and total 100}}
func.func private @lr_schedule_warmup() attributes {s = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 200, total = 100, min_ratio = 0.1 : f64>}

// -----

// LRSchedule: a positive peak.
// expected-error@+1 {{learning-rate peak must be > 0}}
func.func private @lr_schedule_peak() attributes {s = #ptrain.lr_schedule<peak = 0.0 : f64, warmup = 1, total = 100, min_ratio = 0.1 : f64>}

// -----

// LRSchedule: a finite peak (an infinite rate makes every update NaN).
// expected-error@+1 {{learning-rate peak must be > 0 and finite, got INF}}
func.func private @lr_schedule_peak_inf() attributes {s = #ptrain.lr_schedule<peak = 0x7FF0000000000000 : f64, warmup = 1, total = 100, min_ratio = 0.1 : f64>}

// -----

// LRSchedule: a NaN min_ratio is not in [0, 1].
// expected-error@+1 {{learning-rate min_ratio must be in [0, 1], got nan}}
func.func private @lr_schedule_ratio_nan() attributes {s = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 100, min_ratio = 0x7FF8000000000000 : f64>}

// -----

// LRSchedule: min_ratio in [0, 1].
// expected-error@+1 {{learning-rate min_ratio must be in [0, 1], got 2}}
func.func private @lr_schedule_ratio() attributes {s = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 100, min_ratio = 2.0 : f64>}

// -----

// AdamW: parameter, gradient and moments share one type.
func.func @adamw_types(%p: tensor<8xf32>, %g: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{failed to verify that all of {param, grad, m, v, new_param, new_m, new_v} have same type}}
  %0:3 = "ptrain.adamw"(%p, %g, %p, %p, %t) <{schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 100, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64}> : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// AdamW (C1): beta1 = 1 makes the bias correction 1 - beta1^t zero.
func.func @adamw_c1_beta1(%p: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{(C1) beta1 and beta2 must be in [0, 1), got beta1 1.000000e+00 and beta2 9.500000e-01}}
  %0:3 = ptrain.adamw %p, %p, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 100, min_ratio = 0.1 : f64>, beta1 = 1.0 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
  return
}

// -----

// AdamW (C1): beta2 in [0, 1).
func.func @adamw_c1_beta2(%p: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{(C1) beta1 and beta2 must be in [0, 1), got beta1 9.000000e-01 and beta2 -5.000000e-01}}
  %0:3 = ptrain.adamw %p, %p, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 100, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = -0.5 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
  return
}

// -----

// AdamW (C2): epsilon > 0.
func.func @adamw_c2_epsilon(%p: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{(C2) needs a finite epsilon > 0 and a finite weight_decay >= 0, got epsilon 0.000000e+00 and weight_decay 0.000000e+00}}
  %0:3 = ptrain.adamw %p, %p, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 100, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
  return
}

// -----

// AdamW (C2): weight_decay >= 0.
func.func @adamw_c2_decay(%p: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error@+1 {{(C2) needs a finite epsilon > 0 and a finite weight_decay >= 0, got epsilon 1.000000e-08 and weight_decay -1.000000e-01}}
  %0:3 = ptrain.adamw %p, %p, %p, %p, %t {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 1, total = 100, min_ratio = 0.1 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = -0.1 : f64} : tensor<8xf32>, tensor<i64>
  return
}

// -----

// OnnxNode (C1): an op type.
func.func @onnx_node_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{op_type must not be empty}}
  %0 = ptrain.onnx_node ""(%x) {domain = "", opset = 17 : i64, onnx_attrs = {}} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// OnnxNode (C2): an opset.
func.func @onnx_node_c2(%x: tensor<4xf32>) {
  // expected-error@+1 {{opset must be >= 1, got 0}}
  %0 = ptrain.onnx_node "Relu"(%x) {domain = "", opset = 0 : i64, onnx_attrs = {}} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// CrossEntropyGrad (C2): class weights as for cross_entropy (C4).
func.func @cross_entropy_grad_c2_weight(%d: tensor<f32>, %l: tensor<4x16xf32>, %y: tensor<4xi64>, %w: tensor<4xf32>) {
  // expected-error@+1 {{weight must be [C] of the logits' element type for logits 'tensor<4x16xf32>', got 'tensor<4xf32>'}}
  %0 = ptrain.cross_entropy_grad %d, %l, %y weight %w : tensor<f32>, tensor<4x16xf32>, tensor<4xi64>, tensor<4xf32>
  return
}

// -----

// CrossEntropyGrad (C2): the reduction as for cross_entropy (C5).
func.func @cross_entropy_grad_c2_reduction(%d: tensor<f32>, %l: tensor<4x16xf32>, %y: tensor<4xi64>) {
  // expected-error@+1 {{reduction must be "mean" or "sum", got "avg"}}
  %0 = ptrain.cross_entropy_grad %d, %l, %y {reduction = "avg"} : tensor<f32>, tensor<4x16xf32>, tensor<4xi64>
  return
}

// -----

// CrossEntropyGrad (C2): the ignore_index as for cross_entropy (C6).
func.func @cross_entropy_grad_c2_ignore(%d: tensor<f32>, %l: tensor<4x16xf32>, %y: tensor<4xi16>) {
  // expected-error@+1 {{ignore_index 40000 does not fit the labels' type 'i16'}}
  %0 = ptrain.cross_entropy_grad %d, %l, %y {ignore_index = 40000 : i64} : tensor<f32>, tensor<4x16xf32>, tensor<4xi16>
  return
}
