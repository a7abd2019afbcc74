// RUN: ptrain-opt %s --split-input-file | FileCheck %s
// RUN: ptrain-opt %s --split-input-file | ptrain-opt --split-input-file | FileCheck %s

// The typed plan attributes round-trip (PTrainAttrs.td, PTrainPlanAttrs.h).

// A fused Q|K|V weight sliced by columns in 3 groups: the default padded is not printed.
// CHECK-LABEL: ptrain.state @qkv
// CHECK-SAME: {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [8, 24]>} : tensor<8x12xf32>
ptrain.state @qkv key "h.0.attn.c_attn.weight" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [8, 24]>} : tensor<8x12xf32>

// -----

// A vocabulary of 9 padded to 10 rows, 5 per rank.
// CHECK-LABEL: ptrain.state @wte
// CHECK-SAME: {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [9, 4], padded = 10>} : tensor<5x4xf32>
ptrain.state @wte key "wte" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [9, 4], padded = 10>} : tensor<5x4xf32>

// -----

// A pipeline of 2 ranks before its training step: default virtual_stages, no micro_batches, no labels.
// CHECK-LABEL: module attributes
// CHECK-SAME: ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>
// CHECK: func.func private @forward_stage0() attributes {ptrain.stage = #ptrain.stage<0>}
// CHECK: func.func private @forward_stage1() attributes {ptrain.stage = #ptrain.stage<1>}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>} {
  func.func private @forward_stage0() attributes {ptrain.stage = #ptrain.stage<0>}
  func.func private @forward_stage1() attributes {ptrain.stage = #ptrain.stage<1>}
}

// -----

// Interleaved chunks with the training step and its schedule; fields given out of order print in order.
// CHECK-LABEL: module attributes
// CHECK-SAME: ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@s0, @s1, @s2, @s3], micro_batches = 2, labels = true, deterministic_dp = true>
// CHECK-SAME: ptrain.schedule = #ptrain.schedule<kind = "interleaved", micro_batches = 2, virtual_stages = 2, table = {{\[\[}}"F0", "O"], ["FB0", "O"]]>
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@s0, @s1, @s2, @s3], micro_batches = 2, labels = true, deterministic_dp = true>,
                   ptrain.schedule = #ptrain.schedule<kind = "interleaved", micro_batches = 2, virtual_stages = 2, table = [["F0", "O"], ["FB0", "O"]]>} {
  func.func private @s0()
  func.func private @s1()
  func.func private @s2()
  func.func private @s3()
}

// -----

// A schedule with its critical path (--ptrain-critical-path's fields).
// CHECK-LABEL: module attributes
// CHECK-SAME: ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = {{\[\[}}"FB0", "O"]], slack = {{\[\[}}0.000000e+00, 5.000000e-01]], critical = {{\[\[}}true, false]], send_slack = {{\[\[}}-1.000000e+00, -1.000000e+00]], send_critical = {{\[\[}}false, false]], dp_all_reduce_slack = [0.000000e+00], dp_all_reduce_critical = [true], iteration_time = 2.500000e+00 : f64, bubble = 0.000000e+00 : f64>
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 1>,
                   ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]],
                       slack = [[0.0, 0.5]], critical = [[true, false]], send_slack = [[-1.0, -1.0]],
                       send_critical = [[false, false]], dp_all_reduce_slack = [0.0], dp_all_reduce_critical = [true],
                       iteration_time = 2.5, bubble = 0.0>} {
  func.func private @forward_stage0()
}

// -----

// A compression record: the defaults (error feedback backward and on the dp PowerSGD, sc_rank 128, no fused
// embedding, no skipped stages) are not printed; a per-send codec, a dp codec and a tp site are.
// CHECK-LABEL: module attributes
// CHECK-SAME: ptrain.compression = #ptrain.compression<policy = "auto", backward_sends = {{\[\[}}false, false], [true, #ptrain.cast<bf16>]],
// CHECK-SAME: backward_codec = #ptrain.powersgd<rank = 2>, forward_sends = {{\[\[}}#ptrain.quant<bits = 8>, false], [false, false]],
// CHECK-SAME: forward_error_feedback = true, dp_all_reduce = [false, true], sc_rank = 4, dp_codecs = {"wte/grad" = false},
// CHECK-SAME: tp_all_reduces = [#ptrain.tp_site<layer = 0, role = "attn_out", direction = "forward", codec = #ptrain.cast<f16>>,
// CHECK-SAME: #ptrain.tp_site<layer = 1, role = "mlp_in", direction = "backward", codec = #ptrain.quant<bits = 8>, error_feedback = true>]>
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>,
                   ptrain.compression = #ptrain.compression<policy = "auto", backward_sends = [[false, false], [true, #ptrain.cast<bf16>]],
                       backward_codec = #ptrain.powersgd<rank = 2>, backward_error_feedback = true,
                       forward_sends = [[#ptrain.quant<bits = 8>, false], [false, false]], forward_error_feedback = true,
                       dp_all_reduce = [false, true], sc_rank = 4, sc_error_feedback = true, dp_codecs = {"wte/grad" = false},
                       fused_embedding = false, skip_stages = 0,
                       tp_all_reduces = [#ptrain.tp_site<layer = 0, role = "attn_out", direction = "forward", codec = #ptrain.cast<f16>, error_feedback = false>,
                                         #ptrain.tp_site<layer = 1, role = "mlp_in", direction = "backward", codec = #ptrain.quant<bits = 8>, error_feedback = true>]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}

// -----

// A ZeRO-1 bucket on its AdamW moment shard (dp = 3: 258 / 3 = 86 elements per rank).
// CHECK-LABEL: ptrain.state @m key "stage0.zero_bucket0/adam_m" kind optimizer_moment
// CHECK-SAME: {ptrain.zero_bucket = #ptrain.zero_bucket<params = ["head", "wte"], elements = 256, padded = 258, axis = "dp">} : tensor<86xf32>
ptrain.state @m key "stage0.zero_bucket0/adam_m" kind optimizer_moment
    {ptrain.zero_bucket = #ptrain.zero_bucket<params = ["head", "wte"], elements = 256, padded = 258, axis = "dp">} : tensor<86xf32>

// -----

// The precision a pipeline step was built in, on its module.
// CHECK: module attributes {ptrain.precision = #ptrain.precision<bf16>}
module attributes {ptrain.precision = #ptrain.precision<bf16>} {}
