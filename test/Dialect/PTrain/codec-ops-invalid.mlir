// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// Codec constraints that depend on the tensor, and the compress / decompress / compressed all-reduce
// constraints.

// PowerSGD (C2): rank <= min(n, m) of the matrix view.
func.func @powersgd_c2(%g: tensor<4x8x16xf32>) {
  // expected-error@+1 {{PowerSGD rank 40 exceeds min(n, m) = 16 of the 32x16 matrix view of 'tensor<4x8x16xf32>'}}
  %p, %q = ptrain.compress %g {codec = #ptrain.powersgd<rank = 40, warm_start = false>} : tensor<4x8x16xf32> -> (tensor<32x40xf32>, tensor<16x40xf32>)
  return
}

// -----

// PowerSGD (C3): a float element type.
func.func @powersgd_c3(%g: tensor<32x16xi32>) {
  // expected-error@+1 {{PowerSGD needs a float element type, got 'tensor<32x16xi32>'}}
  %p, %q = ptrain.compress %g {codec = #ptrain.powersgd<rank = 2, warm_start = false>} : tensor<32x16xi32> -> (tensor<32x2xi32>, tensor<16x2xi32>)
  return
}

// -----

// Codecs need a static shape.
func.func @static_shape(%g: tensor<?x16xf32>) {
  // expected-error@+1 {{PowerSGD needs a static shape, got 'tensor<?x16xf32>'}}
  %p, %q = ptrain.compress %g {codec = #ptrain.powersgd<rank = 2, warm_start = false>} : tensor<?x16xf32> -> (tensor<?x2xf32>, tensor<16x2xf32>)
  return
}

// -----

// MatrixView (C3): the view covers every dimension of the tensor.
func.func @matrix_view_c3(%g: tensor<4x8x16xf32>) {
  // expected-error@+1 {{matrix view #ptrain.matrix_view<rows = [0], cols = [2]> does not cover the 3 dimensions of 'tensor<4x8x16xf32>'}}
  %p, %q = ptrain.compress %g {codec = #ptrain.powersgd<rank = 2, warm_start = false, view = #ptrain.matrix_view<rows = [0], cols = [2]>>} : tensor<4x8x16xf32> -> (tensor<4x2xf32>, tensor<16x2xf32>)
  return
}

// -----

// MatrixView (C3): dimensions in range.
func.func @matrix_view_c3_range(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{matrix view dimension 2 is out of range for 'tensor<8x16xf32>'}}
  %c = ptrain.compress %g {codec = #ptrain.linear_ae<dim = 4, view = #ptrain.matrix_view<rows = [0], cols = [2]>>} : tensor<8x16xf32> -> (tensor<8x4xf32>)
  return
}

// -----

// TopK (C2): k <= number of elements.
func.func @topk_c2(%g: tensor<4x8xf32>) {
  // expected-error@+1 {{top-k k = 33 exceeds the 32 elements of 'tensor<4x8xf32>'}}
  %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 33>} : tensor<4x8xf32> -> (tensor<33xf32>, tensor<33xi32>)
  return
}

// -----

// RandK (C2): k <= number of elements.
func.func @randk_c2(%g: tensor<4x8xf32>, %n: tensor<i64>) {
  // expected-error@+1 {{rand-k k = 64 exceeds the 32 elements of 'tensor<4x8xf32>'}}
  %v, %n1 = ptrain.compress %g state(%n) {codec = #ptrain.randk<k = 64, seed = 3>} : tensor<4x8xf32> state(tensor<i64>) -> (tensor<64xf32>) state(tensor<i64>)
  return
}

// -----

// TahQuant (C4): a float element type.
func.func @tahquant_c4_float(%g: tensor<4x64xi32>) {
  // expected-error@+1 {{tahquant needs a float element type, got 'tensor<4x64xi32>'}}
  %p, %s, %z, %f = ptrain.compress %g {codec = #ptrain.tahquant<>} : tensor<4x64xi32> -> (tensor<104xi8>, tensor<4xf32>, tensor<4xf32>, tensor<4xi8>)
  return
}

// -----

// TahQuant (C4): the last dimension is a multiple of the tile size.
func.func @tahquant_c4_tiles(%g: tensor<4x48xf32>) {
  // expected-error@+1 {{tahquant needs the last dimension to be a multiple of tile_size = 64, got 'tensor<4x48xf32>'}}
  %p, %s, %z, %f = ptrain.compress %g {codec = #ptrain.tahquant<>} : tensor<4x48xf32> -> (tensor<104xi8>, tensor<4xf32>, tensor<4xf32>, tensor<4xi8>)
  return
}

// -----

// Quant (C3): a float element type.
func.func @quant_c3(%g: tensor<4x8xi32>) {
  // expected-error@+1 {{quantization needs a float element type, got 'tensor<4x8xi32>'}}
  %p, %s = ptrain.compress %g {codec = #ptrain.quant<bits = 8>} : tensor<4x8xi32> -> (tensor<32xi8>, tensor<8xf32>)
  return
}

// -----

// Cast (C2): a float element type.
func.func @cast_c2(%g: tensor<4x8xi32>) {
  // expected-error@+1 {{cast needs a float element type, got 'tensor<4x8xi32>'}}
  %c = ptrain.compress %g {codec = #ptrain.cast<f16>} : tensor<4x8xi32> -> (tensor<4x8xf16>)
  return
}

// -----

// Cast (C3): no cast codec on a bf16 input (the codes would be the input's size).
func.func @cast_c3(%g: tensor<4x8xbf16>) {
  // expected-error@+1 {{cast codec 'bf16' on the 16-bit input 'tensor<4x8xbf16>' saves no bytes: a bf16 or f16 tensor travels uncompressed instead}}
  %c = ptrain.compress %g {codec = #ptrain.cast<bf16>} : tensor<4x8xbf16> -> (tensor<4x8xbf16>)
  return
}

// -----

// Cast (C3): nor to the other 16-bit type on an f16 input, and not on the receiving side either.
func.func @cast_c3_f16(%c: tensor<4x8xbf16>) {
  // expected-error@+1 {{cast codec 'bf16' on the 16-bit input 'tensor<4x8xf16>' saves no bytes}}
  %d = ptrain.decompress %c {codec = #ptrain.cast<bf16>} : (tensor<4x8xbf16>) -> tensor<4x8xf16>
  return
}

// -----

// LinearAE (C3): f32 tensors only (W_e, W_d are fp32 model parameters).
func.func @linear_ae_c3(%g: tensor<8x16xbf16>, %we: tensor<16x4xbf16>) {
  // expected-error@+1 {{linear autoencoder codes f32 tensors (its weights are fp32 model parameters), got 'tensor<8x16xbf16>'}}
  %c = ptrain.compress %g params(%we) {codec = #ptrain.linear_ae<dim = 4>} : tensor<8x16xbf16> params(tensor<16x4xbf16>) -> (tensor<8x4xbf16>)
  return
}

// -----

// LinearAE (C2): dim <= m of the matrix view.
func.func @linear_ae_c2(%g: tensor<8x16xf32>, %we: tensor<16x32xf32>) {
  // expected-error@+1 {{linear autoencoder dim 32 exceeds m = 16 of the matrix view of 'tensor<8x16xf32>'}}
  %c = ptrain.compress %g params(%we) {codec = #ptrain.linear_ae<dim = 32>} : tensor<8x16xf32> params(tensor<16x32xf32>) -> (tensor<8x32xf32>)
  return
}

// -----

// Compress (C2): the residual type equals the input type.
func.func @compress_c2(%g: tensor<8x16xf32>, %e: tensor<8x16xf16>) {
  // expected-error@+1 {{residual type 'tensor<8x16xf16>' must equal the input type 'tensor<8x16xf32>'}}
  %c, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.cast<bf16>, error_feedback} : tensor<8x16xf32> state(tensor<8x16xf16>) -> (tensor<8x16xbf16>) state(tensor<8x16xf16>)
  return
}

// -----

// Compress (C2): a bf16 input keeps an f32 residual, not a bf16 one.
func.func @compress_c2_half(%g: tensor<8x16xbf16>, %e: tensor<8x16xbf16>) {
  // expected-error@+1 {{residual type 'tensor<8x16xbf16>' must be 'tensor<8x16xf32>': the residual of the 16-bit input 'tensor<8x16xbf16>' stays f32}}
  %v, %i, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.topk<k = 4>, error_feedback} : tensor<8x16xbf16> state(tensor<8x16xbf16>) -> (tensor<4xbf16>, tensor<4xi32>) state(tensor<8x16xbf16>)
  return
}

// -----

// Compress (C2): the same for an f16 input on a compressed all-reduce (a TP site of an fp16 plan).
module {
  ptrain.grid @grid(tp = 2)
  func.func @compressed_all_reduce_c2_half(%g: tensor<8x16xf16>, %e: tensor<8x16xf16>) {
    // expected-error@+1 {{residual type 'tensor<8x16xf16>' must be 'tensor<8x16xf32>': the residual of the 16-bit input 'tensor<8x16xf16>' stays f32}}
    %r, %e1 = ptrain.compressed_all_reduce_start %g state(%e) on @grid axes [tp] reduction = sum {codec = #ptrain.quant<bits = 8>, error_feedback} : tensor<8x16xf16> state(tensor<8x16xf16>) -> state(tensor<8x16xf16>)
    return
  }
}

// -----

// Compress (C6): a bf16 input's PowerSGD factors are f32, not bf16.
func.func @compress_c6_half_powersgd(%g: tensor<8x16xbf16>) {
  // expected-error@+1 {{codes must have types ('tensor<8x2xf32>', 'tensor<16x2xf32>') for codec #ptrain.powersgd<rank = 2, warm_start = false>, got ('tensor<8x2xbf16>', 'tensor<16x2xbf16>')}}
  %p, %q = ptrain.compress %g {codec = #ptrain.powersgd<rank = 2, warm_start = false>} : tensor<8x16xbf16> -> (tensor<8x2xbf16>, tensor<16x2xbf16>)
  return
}

// -----

// Compress (C6): a bf16 input's top-k values are bf16 (2 bytes), not f32.
func.func @compress_c6_half_topk(%g: tensor<8x16xbf16>) {
  // expected-error@+1 {{codes must have types ('tensor<4xbf16>', 'tensor<4xi32>') for codec #ptrain.topk<k = 4>, got ('tensor<4xf32>', 'tensor<4xi32>')}}
  %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 4>} : tensor<8x16xbf16> -> (tensor<4xf32>, tensor<4xi32>)
  return
}

// -----

// Compress (C3): a bf16 input's PowerSGD warm start is f32.
func.func @compress_c3_half_warm_start(%g: tensor<8x16xbf16>, %q: tensor<16x2xbf16>) {
  // expected-error@+1 {{state must have types ('tensor<16x2xf32>') for codec #ptrain.powersgd<rank = 2>, got ('tensor<16x2xbf16>')}}
  %p, %q1, %q2 = ptrain.compress %g state(%q) {codec = #ptrain.powersgd<rank = 2>} : tensor<8x16xbf16> state(tensor<16x2xbf16>) -> (tensor<8x2xf32>, tensor<16x2xf32>) state(tensor<16x2xbf16>)
  return
}

// -----

// Decompress (C2): the codes of a bf16 result are those of a bf16 input (rand-k: bf16 values).
func.func @decompress_c2_half(%v: tensor<4xf32>, %n: tensor<i64>) {
  // expected-error@+1 {{codes must have types ('tensor<4xbf16>') for codec #ptrain.randk<k = 4, seed = 1>, got ('tensor<4xf32>')}}
  %d, %n1 = ptrain.decompress %v state(%n) {codec = #ptrain.randk<k = 4, seed = 1>} : (tensor<4xf32>) state(tensor<i64>) -> tensor<8x16xbf16> state(tensor<i64>)
  return
}

// -----

// Compress (C2): error feedback needs the residual.
func.func @compress_c2_missing(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{with error_feedback the first state operand is the residual, but there is none}}
  %c = ptrain.compress %g {codec = #ptrain.cast<bf16>, error_feedback} : tensor<8x16xf32> -> (tensor<8x16xbf16>)
  return
}

// -----

// Compress (C3): the codec's own state follows the residual (PowerSGD's warm-start Q is missing).
func.func @compress_c3(%g: tensor<8x16xf32>, %e: tensor<8x16xf32>) {
  // expected-error@+1 {{state (residual, then codec state) must have types ('tensor<8x16xf32>', 'tensor<16x2xf32>') for codec #ptrain.powersgd<rank = 2>, got ('tensor<8x16xf32>')}}
  %p, %q, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.powersgd<rank = 2>, error_feedback} : tensor<8x16xf32> state(tensor<8x16xf32>) -> (tensor<8x2xf32>, tensor<16x2xf32>) state(tensor<8x16xf32>)
  return
}

// -----

// Compress (C4): the new state has the state's types.
func.func @compress_c4(%g: tensor<8x16xf32>, %q: tensor<16x2xf32>) {
  // expected-error@+1 {{new state must have types ('tensor<16x2xf32>') for codec #ptrain.powersgd<rank = 2>, got ()}}
  %p, %qn = ptrain.compress %g state(%q) {codec = #ptrain.powersgd<rank = 2>} : tensor<8x16xf32> state(tensor<16x2xf32>) -> (tensor<8x2xf32>, tensor<16x2xf32>)
  return
}

// -----

// Compress (C5): the linear autoencoder's encoder weight is a param.
func.func @compress_c5(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{params must have types ('tensor<16x4xf32>') for codec #ptrain.linear_ae<dim = 4>, got ()}}
  %c = ptrain.compress %g {codec = #ptrain.linear_ae<dim = 4>} : tensor<8x16xf32> -> (tensor<8x4xf32>)
  return
}

// -----

// Compress (C6): the codes have the codec's types.
func.func @compress_c6(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{codes must have types ('tensor<4xf32>', 'tensor<4xi32>') for codec #ptrain.topk<k = 4>, got ('tensor<4xf32>', 'tensor<4xi64>')}}
  %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 4>} : tensor<8x16xf32> -> (tensor<4xf32>, tensor<4xi64>)
  return
}

// -----

// Decompress (C1): the codec accepts the result type.
func.func @decompress_c1(%v: tensor<200xf32>, %i: tensor<200xi32>) {
  // expected-error@+1 {{top-k k = 200 exceeds the 128 elements of 'tensor<8x16xf32>'}}
  %d = ptrain.decompress %v, %i {codec = #ptrain.topk<k = 200>} : (tensor<200xf32>, tensor<200xi32>) -> tensor<8x16xf32>
  return
}

// -----

// Decompress (C2): the codes have the types the codec gives for the result type.
func.func @decompress_c2(%p: tensor<8x2xf32>, %q: tensor<32x2xf32>) {
  // expected-error@+1 {{codes must have types ('tensor<8x2xf32>', 'tensor<16x2xf32>') for codec #ptrain.powersgd<rank = 2>, got ('tensor<8x2xf32>', 'tensor<32x2xf32>')}}
  %d = ptrain.decompress %p, %q {codec = #ptrain.powersgd<rank = 2>} : (tensor<8x2xf32>, tensor<32x2xf32>) -> tensor<8x16xf32>
  return
}

// -----

// Decompress (C3): the codec of the compress that produced the codes.
func.func @decompress_c3_codec(%g: tensor<8x16xf32>) {
  %p, %q = ptrain.compress %g {codec = #ptrain.powersgd<rank = 2, warm_start = false>} : tensor<8x16xf32> -> (tensor<8x2xf32>, tensor<16x2xf32>)
  // expected-error@+1 {{codec #ptrain.powersgd<rank = 2> does not match the codec #ptrain.powersgd<rank = 2, warm_start = false> of the compress that produced its codes}}
  %d = ptrain.decompress %p, %q {codec = #ptrain.powersgd<rank = 2>} : (tensor<8x2xf32>, tensor<16x2xf32>) -> tensor<8x16xf32>
  return
}

// -----

// Decompress (C3): the type the compress encoded (same codes, another shape).
func.func @decompress_c3_type(%g: tensor<8x16xf32>) {
  %v, %i = ptrain.compress %g {codec = #ptrain.topk<k = 4>} : tensor<8x16xf32> -> (tensor<4xf32>, tensor<4xi32>)
  // expected-error@+1 {{result type 'tensor<16x8xf32>' does not match the type 'tensor<8x16xf32>' compressed by its compress}}
  %d = ptrain.decompress %v, %i {codec = #ptrain.topk<k = 4>} : (tensor<4xf32>, tensor<4xi32>) -> tensor<16x8xf32>
  return
}

// -----

// Decompress (C4): rand-k's decoder keeps a call counter.
func.func @decompress_c4(%v: tensor<4xf32>) {
  // expected-error@+1 {{state must have types ('tensor<i64>') for codec #ptrain.randk<k = 4, seed = 1>, got ()}}
  %d = ptrain.decompress %v {codec = #ptrain.randk<k = 4, seed = 1>} : (tensor<4xf32>) -> tensor<8x16xf32>
  return
}

// -----

// Decompress (C5): the linear autoencoder's decoder weight is a param.
func.func @decompress_c5(%c: tensor<8x4xf32>, %we: tensor<16x4xf32>) {
  // expected-error@+1 {{params must have types ('tensor<4x16xf32>') for codec #ptrain.linear_ae<dim = 4>, got ('tensor<16x4xf32>')}}
  %d = ptrain.decompress %c params(%we) {codec = #ptrain.linear_ae<dim = 4>} : (tensor<8x4xf32>) params(tensor<16x4xf32>) -> tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C1): the grid exists.
func.func @compressed_all_reduce_c1(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp] reduction = sum {codec = #ptrain.cast<bf16>} : tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C2): the axes exist.
ptrain.grid @grid(dp = 2)
func.func @compressed_all_reduce_c2(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["dp"]}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [tp] reduction = sum {codec = #ptrain.cast<bf16>} : tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C3): no axis twice.
ptrain.grid @grid(dp = 2)
func.func @compressed_all_reduce_c3(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{collective axes name grid axis 'dp' twice}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp, dp] reduction = sum {codec = #ptrain.cast<bf16>} : tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C4): codes are summed, so the reduction is sum or avg.
ptrain.grid @grid(dp = 2)
func.func @compressed_all_reduce_c4(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{a compressed all-reduce sums codes: reduction must be sum or avg, got max}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp] reduction = max {codec = #ptrain.cast<bf16>} : tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C5): the codec accepts the input type.
ptrain.grid @grid(dp = 2)
func.func @compressed_all_reduce_c5(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{PowerSGD rank 9 exceeds min(n, m) = 8 of the 8x16 matrix view of 'tensor<8x16xf32>'}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp] reduction = sum {codec = #ptrain.powersgd<rank = 9, warm_start = false>} : tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C6): error feedback needs its residual.
ptrain.grid @grid(dp = 2)
func.func @compressed_all_reduce_c6(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{with error_feedback the first state operand is the residual, but there is none}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [dp] reduction = sum {codec = #ptrain.topk<k = 8>, error_feedback} : tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C7): the request yields the input type (only reachable in generic form).
ptrain.grid @grid(dp = 2)
func.func @compressed_all_reduce_c7(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{the request yields the input type}}
  %r = "ptrain.compressed_all_reduce_start"(%g) <{codec = #ptrain.cast<bf16>, grid = @grid, grid_axes = ["dp"], operandSegmentSizes = array<i32: 1, 0, 0>, reduction = #ptrain<reduction sum>}> : (tensor<8x16xf32>) -> !ptrain.request<tensor<8x8xf32>>
  return
}

// -----

// Compressed all-reduce (C8): value_type is a 16-bit float.
ptrain.grid @grid(tp = 2)
func.func @compressed_all_reduce_c8_type(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{value_type must be bf16 or f16 (the 16-bit values a top-k or rand-k site sends), got 'f64'}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [tp] reduction = sum {codec = #ptrain.topk<k = 8>, value_type = f64} : tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C8): only top-k and rand-k send values.
ptrain.grid @grid(tp = 2)
func.func @compressed_all_reduce_c8_codec(%g: tensor<8x16xf32>) {
  // expected-error@+1 {{value_type is the type of the values top-k and rand-k send; the codec #ptrain.quant<bits = 8, granularity = tensor> sends none}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [tp] reduction = sum {codec = #ptrain.quant<bits = 8, granularity = tensor>, value_type = bf16} : tensor<8x16xf32>
  return
}

// -----

// Compressed all-reduce (C8): value_type marks the widened f32 form of a 16-bit site, not a 16-bit input.
ptrain.grid @grid(tp = 2)
func.func @compressed_all_reduce_c8_input(%g: tensor<8x16xbf16>) {
  // expected-error@+1 {{value_type needs an f32 input (the widened form of a 16-bit site); a 'tensor<8x16xbf16>' input's values already have its type}}
  %r = ptrain.compressed_all_reduce_start %g on @grid axes [tp] reduction = sum {codec = #ptrain.topk<k = 8>, value_type = bf16} : tensor<8x16xbf16>
  return
}

// -----

// powersgd_phase_p (C1): a PowerSGD codec (the attribute's type).
func.func @phase_p_c1(%g: tensor<4x4xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_phase_p' op attribute 'codec' failed to satisfy constraint: PowerSGD low-rank compression}}
  %m, %p, %q = ptrain.powersgd_phase_p %g {codec = #ptrain.topk<k = 2>} : tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  return
}

// -----

// powersgd_phase_p (C1): the codec accepts the input (rank <= min(n, m)).
func.func @phase_p_c1_rank(%g: tensor<4x4xf32>) {
  // expected-error@+1 {{PowerSGD rank 5 exceeds min(n, m) = 4}}
  %m, %p, %q = ptrain.powersgd_phase_p %g {codec = #ptrain.powersgd<rank = 5, warm_start = false>} : tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x5xf32>, tensor<4x5xf32>
  return
}

// -----

// powersgd_phase_p (C2): the residual has the input type.
func.func @phase_p_c2(%g: tensor<4x4xf32>, %e: tensor<4x3xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_phase_p' op residual must have type 'tensor<4x4xf32>', got 'tensor<4x3xf32>'}}
  %m, %p, %q = ptrain.powersgd_phase_p %g residual(%e) {codec = #ptrain.powersgd<rank = 1, warm_start = false>} : tensor<4x4xf32> residual(tensor<4x3xf32>) -> tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  return
}

// -----

// powersgd_phase_p (C3): a warm-starting codec needs warm_start_q.
func.func @phase_p_c3(%g: tensor<4x4xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_phase_p' op the codec warm-starts: warm_start_q is required}}
  %m, %p, %q = ptrain.powersgd_phase_p %g {codec = #ptrain.powersgd<rank = 1>} : tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  return
}

// -----

// powersgd_phase_p (C3): warm_start_q is m x r.
func.func @phase_p_c3_type(%g: tensor<4x4xf32>, %q0: tensor<4x2xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_phase_p' op warm_start_q must have type 'tensor<4x1xf32>', got 'tensor<4x2xf32>'}}
  %m, %p, %q = ptrain.powersgd_phase_p %g warm_start_q(%q0) {codec = #ptrain.powersgd<rank = 1>} : tensor<4x4xf32> warm_start_q(tensor<4x2xf32>) -> tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  return
}

// -----

// powersgd_phase_p (C4): P is n x r.
func.func @phase_p_c4(%g: tensor<8x4xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_phase_p' op p must have type 'tensor<8x1xf32>', got 'tensor<4x1xf32>'}}
  %m, %p, %q = ptrain.powersgd_phase_p %g {codec = #ptrain.powersgd<rank = 1, warm_start = false>} : tensor<8x4xf32> -> tensor<8x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  return
}

// -----

// powersgd_phase_q (C1): not on the exact path (a 1-D tensor is a 1 x 8 matrix).
func.func @phase_q_c1(%m: tensor<8xf32>, %p: tensor<1x1xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_phase_q' op rank 1 on a 1 x 8 matrix is PowerSGD's exact path ((n + m) r >= n m), which has no power step}}
  %ph, %q = ptrain.powersgd_phase_q %m, %p {codec = #ptrain.powersgd<rank = 1>} : tensor<8xf32>, tensor<1x1xf32> -> tensor<1x1xf32>, tensor<8x1xf32>
  return
}

// -----

// powersgd_phase_q (C2): Q is m x r.
func.func @phase_q_c2(%m: tensor<4x4xf32>, %p: tensor<4x1xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_phase_q' op q must have type 'tensor<4x1xf32>', got 'tensor<4x2xf32>'}}
  %ph, %q = ptrain.powersgd_phase_q %m, %p {codec = #ptrain.powersgd<rank = 1>} : tensor<4x4xf32>, tensor<4x1xf32> -> tensor<4x1xf32>, tensor<4x2xf32>
  return
}

// -----

// powersgd_finish (C1): a PowerSGD codec (the attribute's type).
func.func @finish_c1(%p: tensor<4x1xf32>, %q: tensor<4x1xf32>, %m: tensor<4x4xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_finish' op attribute 'codec' failed to satisfy constraint: PowerSGD low-rank compression}}
  %o, %e, %w = ptrain.powersgd_finish %p, %q, %m {codec = #ptrain.cast<f16>, alpha = 1.0 : f32, beta = 1.0 : f32} : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return
}

// -----

// powersgd_finish (C2): P^ is n x r.
func.func @finish_c2(%p: tensor<3x1xf32>, %q: tensor<4x1xf32>, %m: tensor<4x4xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_finish' op p_hat must have type 'tensor<4x1xf32>', got 'tensor<3x1xf32>'}}
  %o, %e, %w = ptrain.powersgd_finish %p, %q, %m {codec = #ptrain.powersgd<rank = 1>, alpha = 1.0 : f32, beta = 1.0 : f32} : tensor<3x1xf32>, tensor<4x1xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return
}

// -----

// powersgd_finish (C3): the result has the matrix type.
func.func @finish_c3(%p: tensor<4x1xf32>, %q: tensor<4x1xf32>, %m: tensor<4x4xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_finish' op result must have type 'tensor<4x4xf32>', got 'tensor<16xf32>'}}
  %o, %e, %w = ptrain.powersgd_finish %p, %q, %m {codec = #ptrain.powersgd<rank = 1>, alpha = 1.0 : f32, beta = 1.0 : f32} : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x4xf32> -> tensor<16xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return
}

// -----

// powersgd_finish (C4): alpha and beta are finite and > 0.
func.func @finish_c4(%p: tensor<4x1xf32>, %q: tensor<4x1xf32>, %m: tensor<4x4xf32>) {
  // expected-error@+1 {{'ptrain.powersgd_finish' op beta must be finite and > 0, got 0}}
  %o, %e, %w = ptrain.powersgd_finish %p, %q, %m {codec = #ptrain.powersgd<rank = 1>, alpha = 1.0 : f32, beta = 0.0 : f32} : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return
}

// -----

// Compressed reduce-scatter (C1): the grid exists.
func.func @compressed_reduce_scatter_c1(%g: tensor<16xf32>) {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<16xf32> -> !ptrain.request<tensor<8xf32>>
  return
}

// -----

// Compressed reduce-scatter (C2): the axes exist.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c2(%g: tensor<16xf32>) {
  // expected-error@+1 {{collective axes name axis 'tp', but grid @grid has axes ["dp"]}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [tp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<16xf32> -> !ptrain.request<tensor<8xf32>>
  return
}

// -----

// Compressed reduce-scatter (C3): no axis twice.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c3(%g: tensor<16xf32>) {
  // expected-error@+1 {{collective axes name grid axis 'dp' twice}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp, dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<16xf32> -> !ptrain.request<tensor<8xf32>>
  return
}

// -----

// Compressed reduce-scatter (C4): decoded chunks are summed, so the reduction is sum or avg.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c4(%g: tensor<16xf32>) {
  // expected-error@+1 {{a compressed reduce-scatter sums decoded chunks: reduction must be sum or avg, got max}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp] reduction = max {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<16xf32> -> !ptrain.request<tensor<8xf32>>
  return
}

// -----

// Compressed reduce-scatter (C5): the input is a flattened (1-D) bucket.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c5(%g: tensor<4x4xf32>) {
  // expected-error@+1 {{input must be a static 1-D tensor (a flattened bucket), got 'tensor<4x4xf32>'}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<4x4xf32> -> !ptrain.request<tensor<8xf32>>
  return
}

// -----

// Compressed reduce-scatter (C6): quantization, not a summable codec.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c6(%g: tensor<16xf32>) {
  // expected-error@+1 {{codec must be #ptrain.quant with granularity tensor or block (the chunk is 1-D: channel granularity would keep a scale per element), got #ptrain.cast<bf16>}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp] reduction = avg {codec = #ptrain.cast<bf16>} : tensor<16xf32> -> !ptrain.request<tensor<8xf32>>
  return
}

// -----

// Compressed reduce-scatter (C6): channel granularity on a 1-D chunk is a scale per element.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c6_channel(%g: tensor<16xf32>) {
  // expected-error@+1 {{codec must be #ptrain.quant with granularity tensor or block}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8>} : tensor<16xf32> -> !ptrain.request<tensor<8xf32>>
  return
}

// -----

// Compressed reduce-scatter (C7): the codec accepts the chunk type (a block quantizer on f32 chunks).
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c7(%g: tensor<16xi32>) {
  // expected-error@+1 {{'ptrain.compressed_reduce_scatter_start' op}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<16xi32> -> !ptrain.request<tensor<8xi32>>
  return
}

// -----

// Compressed reduce-scatter (C8): error feedback needs one residual of the input type.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c8(%g: tensor<16xf32>, %e: tensor<8xf32>) {
  // expected-error@+1 {{with error_feedback the state and new state are one residual of the input type 'tensor<16xf32>'; got 1 state and 1 new state values}}
  %r, %e1 = ptrain.compressed_reduce_scatter_start %g state(%e) on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>, error_feedback} : tensor<16xf32> state(tensor<8xf32>) -> !ptrain.request<tensor<8xf32>> state(tensor<8xf32>)
  return
}

// -----

// Compressed reduce-scatter (C8): without error feedback there is no state.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c8_none(%g: tensor<16xf32>, %e: tensor<16xf32>) {
  // expected-error@+1 {{without error_feedback there is no state; got 1 state and 1 new state values}}
  %r, %e1 = ptrain.compressed_reduce_scatter_start %g state(%e) on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<16xf32> state(tensor<16xf32>) -> !ptrain.request<tensor<8xf32>> state(tensor<16xf32>)
  return
}

// -----

// Compressed reduce-scatter (C9): the group size divides the bucket and each rank keeps 1 / D of it.
ptrain.grid @grid(dp = 2)
func.func @compressed_reduce_scatter_c9(%g: tensor<16xf32>) {
  // expected-error@+1 {{scatters 16 elements over 2 ranks ["dp"]: the group size must divide them and the request yield 8 elements each, got 4}}
  %r = ptrain.compressed_reduce_scatter_start %g on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = tensor>} : tensor<16xf32> -> !ptrain.request<tensor<4xf32>>
  return
}
