// The communication of one micro-batch of a 2-stage pipeline training step under Optimus-CC, written in the
// ptrain dialect by hand until the compiler produces it (issue: walking skeleton).
//
// Grid: 2 data-parallel replicas x 2 pipeline stages. Activations of a GPT with hidden 128, sequence 64,
// micro-batch 4 cross the stage boundary.
//   * CB + LEP (Optimus-CC 4.1, 4.2): the last stage sends the activation gradient back compressed with
//     PowerSGD rank 16, warm-started Q, and a residual kept per link that is added to the next compressed
//     gradient on that link.
//   * FE (4.3): the tied word-embedding gradient is reduced once over {first, last stage} x DP.
//   * SC (4.4): the first stage's DP gradient all-reduce, on the critical path, is PowerSGD-compressed with
//     per-parameter error feedback.
// Run: ptrain-opt examples/optimus-cc-step.mlir --canonicalize --cse

ptrain.grid @grid(dp = 2, pp = 2)

ptrain.state @wte key "transformer.wte.weight" kind parameter : tensor<256x128xf32>
ptrain.state @cb_resid key "pp1->0/residual" kind codec_residual : tensor<4x64x128xf32>
ptrain.state @cb_q key "pp1->0/warm_start_q" kind codec_warm_start : tensor<128x16xf32>
ptrain.state @sc_resid key "sc/transformer.h.0.mlp.c_fc.weight/residual" kind codec_residual : tensor<128x512xf32>
ptrain.state @sc_q key "sc/transformer.h.0.mlp.c_fc.weight/warm_start_q" kind codec_warm_start : tensor<512x64xf32>

// Last stage: send the gradient of the stage's input activation to stage 0, compressed.
func.func @last_stage_backward_send(%dact: tensor<4x64x128xf32>) {
  %e = ptrain.state_read @cb_resid : tensor<4x64x128xf32>
  %q = ptrain.state_read @cb_q : tensor<128x16xf32>
  %p, %qn, %e1, %q1 = ptrain.compress %dact state(%e, %q) {codec = #ptrain.powersgd<rank = 16>, error_feedback}
      : tensor<4x64x128xf32> state(tensor<4x64x128xf32>, tensor<128x16xf32>)
      -> (tensor<256x16xf32>, tensor<128x16xf32>) state(tensor<4x64x128xf32>, tensor<128x16xf32>)
  ptrain.state_write %e1 to @cb_resid : tensor<4x64x128xf32>
  ptrain.state_write %q1 to @cb_q : tensor<128x16xf32>
  %sp = ptrain.send_start %p to @grid axis pp offset -1 : tensor<256x16xf32>
  %sq = ptrain.send_start %qn to @grid axis pp offset -1 : tensor<128x16xf32>
  ptrain.wait %sp : !ptrain.request
  ptrain.wait %sq : !ptrain.request
  return
}

// First stage: receive and decode the compressed activation gradient.
func.func @first_stage_backward_recv() -> tensor<4x64x128xf32> {
  %rp = ptrain.recv_start from @grid axis pp offset 1 : !ptrain.request<tensor<256x16xf32>>
  %rq = ptrain.recv_start from @grid axis pp offset 1 : !ptrain.request<tensor<128x16xf32>>
  %p = ptrain.wait %rp : !ptrain.request<tensor<256x16xf32>>
  %q = ptrain.wait %rq : !ptrain.request<tensor<128x16xf32>>
  %dact = ptrain.decompress %p, %q {codec = #ptrain.powersgd<rank = 16>}
      : (tensor<256x16xf32>, tensor<128x16xf32>) -> tensor<4x64x128xf32>
  return %dact : tensor<4x64x128xf32>
}

// Both stages: fused embedding synchronization, then the first stage's compressed DP all-reduce.
func.func @gradient_sync(%dwte: tensor<256x128xf32>, %dw: tensor<128x512xf32>)
    -> (tensor<256x128xf32>, tensor<128x512xf32>) {
  %fe = ptrain.all_reduce_start %dwte on @grid axes [pp, dp] reduction = sum : tensor<256x128xf32>
  %e = ptrain.state_read @sc_resid : tensor<128x512xf32>
  %q = ptrain.state_read @sc_q : tensor<512x64xf32>
  %sc, %e1, %q1 = ptrain.compressed_all_reduce_start %dw state(%e, %q) on @grid axes [dp] reduction = avg
      {codec = #ptrain.powersgd<rank = 64>, error_feedback}
      : tensor<128x512xf32> state(tensor<128x512xf32>, tensor<512x64xf32>)
      -> state(tensor<128x512xf32>, tensor<512x64xf32>)
  ptrain.state_write %e1 to @sc_resid : tensor<128x512xf32>
  ptrain.state_write %q1 to @sc_q : tensor<512x64xf32>
  %gwte = ptrain.wait %fe : !ptrain.request<tensor<256x128xf32>>
  %gw = ptrain.wait %sc : !ptrain.request<tensor<128x512xf32>>
  return %gwte, %gw : tensor<256x128xf32>, tensor<128x512xf32>
}
