// RUN: ptrain-opt %s | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s

// Module-level keyed state: a parameter, its AdamW moments and a codec residual, read and written in a step.

// CHECK: ptrain.state @wte key "transformer.wte.weight" kind parameter : tensor<256x128xf32>
ptrain.state @wte key "transformer.wte.weight" kind parameter : tensor<256x128xf32>
// CHECK: ptrain.state @wte_m key "transformer.wte.weight/adam_m" kind optimizer_moment : tensor<256x128xf32>
ptrain.state @wte_m key "transformer.wte.weight/adam_m" kind optimizer_moment : tensor<256x128xf32>
// CHECK: ptrain.state @resid key "cb/link1->0/residual" kind codec_residual : tensor<4x64x128xf32>
ptrain.state @resid key "cb/link1->0/residual" kind codec_residual : tensor<4x64x128xf32>
// CHECK: ptrain.state @q key "cb/link1->0/q" kind codec_warm_start : tensor<128x16xf32>
ptrain.state @q key "cb/link1->0/q" kind codec_warm_start : tensor<128x16xf32>
// CHECK: ptrain.state @seed key "tp/randk/seed" kind codec_seed : tensor<i64>
ptrain.state @seed key "tp/randk/seed" kind codec_seed : tensor<i64>
// CHECK: ptrain.state @step_count key "step" kind step_counter : tensor<i64>
ptrain.state @step_count key "step" kind step_counter : tensor<i64>
// Parameters no model file holds, with their defaults (the linear autoencoder's encoder and decoder).
// CHECK: ptrain.state @ae_encoder key "ae/0->1/encoder" kind parameter {ptrain.init = {kind = "orthogonal", seed = 7 : i64}} : tensor<128x64xf32>
ptrain.state @ae_encoder key "ae/0->1/encoder" kind parameter {ptrain.init = {kind = "orthogonal", seed = 7 : i64}} : tensor<128x64xf32>
// CHECK: ptrain.state @ae_decoder key "ae/0->1/decoder" kind parameter {ptrain.init = {kind = "orthogonal_transposed", seed = 7 : i64}} : tensor<64x128xf32>
ptrain.state @ae_decoder key "ae/0->1/decoder" kind parameter {ptrain.init = {kind = "orthogonal_transposed", seed = 7 : i64}} : tensor<64x128xf32>

// CHECK-LABEL: func.func @step
func.func @step(%grad: tensor<256x128xf32>) {
  // CHECK: %[[W:.*]] = ptrain.state_read @wte : tensor<256x128xf32>
  %w = ptrain.state_read @wte : tensor<256x128xf32>
  %m = ptrain.state_read @wte_m : tensor<256x128xf32>
  // CHECK: ptrain.state_write %{{.*}} to @wte : tensor<256x128xf32>
  ptrain.state_write %grad to @wte : tensor<256x128xf32>
  ptrain.state_write %w to @wte_m : tensor<256x128xf32>
  return
}
