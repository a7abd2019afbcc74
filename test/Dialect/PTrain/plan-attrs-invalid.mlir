// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// The constraints of the typed plan attributes (PTrainAttrs.td; lib/Dialect/PTrain/IR/PTrainPlanAttrs.cpp).

// TPSlice (C1): a grid axis.
// expected-error@+1 {{tp_slice needs a grid axis}}
func.func private @tp_slice_c1() attributes {s = #ptrain.tp_slice<axis = "", dim = 0, groups = 1, shape = [4]>}

// -----

// TPSlice (C2): sizes >= 1 (an empty shape, which the parser cannot make, is unittests/Dialect/PlanAttrTest.cpp's).
// expected-error@+1 {{tp_slice shape must be a non-empty list of sizes >= 1}}
func.func private @tp_slice_c2_size() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [4, 0]>}

// -----

// TPSlice (C3): dim is a dimension of the shape.
// expected-error@+1 {{tp_slice dim 2 is not a dimension of the rank-2 shape}}
func.func private @tp_slice_c3() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 2, groups = 1, shape = [4, 4]>}

// -----

// TPSlice (C4): groups >= 1.
// expected-error@+1 {{tp_slice groups 0 must be >= 1 and divide shape[0] = 4}}
func.func private @tp_slice_c4_zero() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 0, shape = [4]>}

// -----

// TPSlice (C4): groups divide the sliced size.
// expected-error@+1 {{tp_slice groups 3 must be >= 1 and divide shape[0] = 4}}
func.func private @tp_slice_c4_divide() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 3, shape = [4]>}

// -----

// TPSlice (C5): padded is at least the size.
// expected-error@+1 {{tp_slice padded 8 must be >= shape[0] = 9, with groups 1}}
func.func private @tp_slice_c5_short() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [9], padded = 8>}

// -----

// TPSlice (C5): a padded slice is one group.
// expected-error@+1 {{tp_slice padded 10 must be >= shape[0] = 8, with groups 1}}
func.func private @tp_slice_c5_groups() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 2, shape = [8], padded = 10>}

// -----

// (C6) ptrain.tp_slice is a #ptrain.tp_slice.
// expected-error@+1 {{'ptrain.tp_slice' must be a #ptrain.tp_slice, got {axis = "tp"}}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = {axis = "tp"}} : tensor<4x4xf32>

// -----

// (C7) on a ptrain.state.
// expected-error@+1 {{'ptrain.tp_slice' belongs on a ptrain.state}}
func.func private @f() attributes {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [4]>}

// -----

// (C8) the state has the slice's rank.
// expected-error@+1 {{'ptrain.tp_slice' shape has rank 1, the state 2}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [8]>} : tensor<4x4xf32>

// -----

// (C8) every dimension but dim is the sliced tensor's.
// expected-error@+1 {{'ptrain.tp_slice' dimension 1 of the state (1) differs from the sliced tensor's (2)}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [3, 2]>} : tensor<3x1xf32>

// -----

// (C9) the local size is a multiple of groups.
// expected-error@+1 {{'ptrain.tp_slice' the state's size 3 in dimension 0 must be a multiple of groups (2) and divide 12}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 2, shape = [12, 4]>} : tensor<3x4xf32>

// -----

// (C9) the local size divides the (padded) global size.
// expected-error@+1 {{'ptrain.tp_slice' the state's size 4 in dimension 0 must be a multiple of groups (1) and divide 6}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [6, 4]>} : tensor<4x4xf32>

// -----

// Pipeline (C1): pp >= 1.
// expected-error@+1 {{pipeline pp must be >= 1, got 0}}
func.func private @pipeline_c1() attributes {p = #ptrain.pipeline<pp = 0, stages = []>}

// -----

// Pipeline (C2): virtual_stages >= 1.
// expected-error@+1 {{pipeline virtual_stages must be >= 1, and 1 when pp is 1, got 0}}
func.func private @pipeline_c2_zero() attributes {p = #ptrain.pipeline<pp = 2, virtual_stages = 0, stages = []>}

// -----

// Pipeline (C2): one rank runs no chunks.
// expected-error@+1 {{pipeline virtual_stages must be >= 1, and 1 when pp is 1, got 2}}
func.func private @pipeline_c2_one_rank() attributes {p = #ptrain.pipeline<pp = 1, virtual_stages = 2, stages = [@a, @b]>}

// -----

// Pipeline (C3): pp x virtual_stages stage functions.
// expected-error@+1 {{pipeline lists 3 stage functions, pp x virtual_stages = 4}}
func.func private @pipeline_c3() attributes {p = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@a, @b, @c]>}

// -----

// Pipeline (C4): micro_batches >= 1.
// expected-error@+1 {{pipeline micro_batches must be >= 1, got 0}}
func.func private @pipeline_c4() attributes {p = #ptrain.pipeline<pp = 1, stages = [@a], micro_batches = 0>}

// -----

// Pipeline (C5): labels belong to a training step.
// expected-error@+1 {{pipeline labels needs micro_batches (a training step)}}
func.func private @pipeline_c5() attributes {p = #ptrain.pipeline<pp = 1, stages = [@a], labels = true>}

// -----

// Pipeline (C5): so does the dp-invariant sum order.
// expected-error@+1 {{pipeline deterministic_dp needs micro_batches (a training step)}}
func.func private @pipeline_c5_deterministic() attributes {p = #ptrain.pipeline<pp = 1, stages = [@a], deterministic_dp = true>}

// -----

// (C6) ptrain.pipeline is a #ptrain.pipeline.
// expected-error@+1 {{'ptrain.pipeline' must be a #ptrain.pipeline, got {pp = 1 : i64, stages = [@f]}}}
module attributes {ptrain.pipeline = {pp = 1 : i64, stages = [@f]}} {
  func.func private @f()
}

// -----

// (C7) on a builtin.module.
// expected-error@+1 {{'ptrain.pipeline' belongs on a builtin.module}}
func.func private @f() attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@f]>}

// -----

// (C8) every stage is a func.func of the module.
// expected-error@+1 {{'ptrain.pipeline' stage @forward_stage1 is not a func.func of the module}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>} {
  func.func private @forward_stage0()
  ptrain.state @forward_stage1 key "w" kind parameter : tensor<4xf32>
}

// -----

// Stage (C1): index >= 0.
// expected-error@+1 {{stage index must be >= 0, got -1}}
func.func private @stage_c1() attributes {s = #ptrain.stage<-1>}

// -----

// Stage (C2): ptrain.stage is a #ptrain.stage.
// expected-error@+1 {{'ptrain.stage' must be a #ptrain.stage, got 1 : i64}}
func.func private @f() attributes {ptrain.stage = 1 : i64}

// -----

// Stage (C3): on a func.func.
// expected-error@+1 {{'ptrain.stage' belongs on a func.func}}
ptrain.state @w key "w" kind parameter {ptrain.stage = #ptrain.stage<0>} : tensor<4xf32>

// -----

// Stage (C4): a rank of the module's pipeline.
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>} {
  func.func private @forward_stage0() attributes {ptrain.stage = #ptrain.stage<0>}
  // expected-error@+1 {{'ptrain.stage' index 2 is not a rank of the module's pipeline (pp = 2)}}
  func.func private @forward_stage1() attributes {ptrain.stage = #ptrain.stage<2>}
}

// -----

// Schedule (C1): a known kind.
// expected-error@+1 {{schedule kind must be gpipe, 1f1b or interleaved, got 'zigzag'}}
func.func private @schedule_c1() attributes {s = #ptrain.schedule<kind = "zigzag", micro_batches = 1, table = [["FB0", "O"]]>}

// -----

// Schedule (C2): micro_batches >= 1.
// expected-error@+1 {{schedule micro_batches and virtual_stages must be >= 1, got 0 and 1}}
func.func private @schedule_c2() attributes {s = #ptrain.schedule<kind = "1f1b", micro_batches = 0, table = [["O"]]>}

// -----

// Schedule (C3): rows of step strings.
// expected-error@+1 {{schedule table must be a non-empty list of rows of step strings}}
func.func private @schedule_c3() attributes {s = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", 0]]>}

// -----

// Schedule (C4): slack has the table's shape.
// expected-error@+1 {{schedule slack must have the shape of the table, of floats}}
func.func private @schedule_c4_shape() attributes {s = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]], slack = [[0.0]]>}

// -----

// Schedule (C4): send_critical holds bools.
// expected-error@+1 {{schedule send_critical must have the shape of the table, of bools}}
func.func private @schedule_c4_type() attributes {s = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]], send_critical = [[0.0, 1.0]]>}

// -----

// Schedule (C5): one data-parallel flag per row.
// expected-error@+1 {{schedule dp_all_reduce_critical must have one bool per row of the table (1)}}
func.func private @schedule_c5() attributes {s = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]], dp_all_reduce_critical = [true, false]>}

// -----

// (C6) ptrain.schedule is a #ptrain.schedule.
// expected-error@+1 {{'ptrain.schedule' must be a #ptrain.schedule, got {kind = "1f1b"}}}
module attributes {ptrain.schedule = {kind = "1f1b"}} {
}

// -----

// (C7) on a builtin.module.
// expected-error@+1 {{'ptrain.schedule' belongs on a builtin.module}}
func.func private @f() attributes {ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]]>}

// -----

// (C7) with a pipeline.
// expected-error@+1 {{'ptrain.schedule' needs a #ptrain.pipeline on the module}}
module attributes {ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 1, table = [["FB0", "O"]]>} {
}

// -----

// (C8) one row per pipeline rank, the pipeline's micro-batches.
// expected-error@+1 {{'ptrain.schedule' (1 rows, virtual_stages 1, micro_batches 2) does not fit the pipeline (pp 2, virtual_stages 1, micro_batches 2)}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>,
                   ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2, table = [["FB0", "FB1", "O"]]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}

// -----

// Compression (C1): a known policy.
// expected-error@+1 {{compression policy must be optimus-cc, mcbench, none or auto, got 'magic'}}
func.func private @compression_c1() attributes {c = #ptrain.compression<policy = "magic", backward_sends = [[false]], dp_all_reduce = [false]>}

// -----

// Compression (C2): rows of one length.
// expected-error@+1 {{compression backward_sends must be a non-empty list of rows of one length, of true, false or codecs}}
func.func private @compression_c2() attributes {c = #ptrain.compression<policy = "none", backward_sends = [[false, false], [false]], dp_all_reduce = [false, false]>}

// -----

// Compression (C2): entries true, false or a codec.
// expected-error@+1 {{compression backward_sends must be a non-empty list of rows of one length, of true, false or codecs}}
func.func private @compression_c2_entry() attributes {c = #ptrain.compression<policy = "none", backward_sends = [[false, 1]], dp_all_reduce = [false]>}

// -----

// Compression (C2): forward_sends has the shape of backward_sends.
// expected-error@+1 {{compression forward_sends must have the shape of backward_sends}}
func.func private @compression_c2_forward() attributes {c = #ptrain.compression<policy = "none", backward_sends = [[false, false], [false, false]], forward_sends = [[false], [false]], dp_all_reduce = [false, false]>}

// -----

// Compression (C3): a send marked true needs the direction's codec.
// expected-error@+1 {{compression backward_sends marks a send true but there is no backward_codec}}
func.func private @compression_c3() attributes {c = #ptrain.compression<policy = "none", backward_sends = [[false], [true]], dp_all_reduce = [false, false]>}

// -----

// Compression (C4): one dp flag per stage.
// expected-error@+1 {{compression dp_all_reduce must have one bool per row of backward_sends (2)}}
func.func private @compression_c4() attributes {c = #ptrain.compression<policy = "none", backward_sends = [[false], [false]], dp_all_reduce = [false]>}

// -----

// Compression (C5): sc_rank >= 1.
// expected-error@+1 {{compression sc_rank must be >= 1 and skip_stages, tp_skip_layers >= 0, got 0, 0, 0}}
func.func private @compression_c5() attributes {c = #ptrain.compression<policy = "none", backward_sends = [[false]], dp_all_reduce = [false], sc_rank = 0>}

// -----

// Compression (C6): a dp codec or false.
// expected-error@+1 {{compression dp_codecs entry 'wte/grad' must be a codec or false}}
func.func private @compression_c6() attributes {c = #ptrain.compression<policy = "none", backward_sends = [[false]], dp_all_reduce = [false], dp_codecs = {"wte/grad" = true}>}

// -----

// Compression (C7): tensor-parallel sites are #ptrain.tp_site.
// expected-error@+1 {{compression tp_all_reduces must be a list of #ptrain.tp_site}}
func.func private @compression_c7() attributes {c = #ptrain.compression<policy = "none", backward_sends = [[false]], dp_all_reduce = [false], tp_all_reduces = [1]>}

// -----

// (C8) ptrain.compression is a #ptrain.compression.
// expected-error@+1 {{'ptrain.compression' must be a #ptrain.compression, got {policy = "none"}}}
module attributes {ptrain.compression = {policy = "none"}} {
}

// -----

// (C9) on a builtin.module.
// expected-error@+1 {{'ptrain.compression' belongs on a builtin.module}}
func.func private @f() attributes {ptrain.compression = #ptrain.compression<policy = "none", backward_sends = [[false]], dp_all_reduce = [false]>}

// -----

// (C9) with a pipeline.
// expected-error@+1 {{'ptrain.compression' needs a #ptrain.pipeline on the module}}
module attributes {ptrain.compression = #ptrain.compression<policy = "none", backward_sends = [[false]], dp_all_reduce = [false]>} {
}

// -----

// (C10) one row per pipeline rank, of virtual_stages x micro_batches sends.
// expected-error@+1 {{'ptrain.compression' has 2 rows of 1 sends, the pipeline needs 2 rows of 2 (virtual_stages x micro_batches)}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>,
                   ptrain.compression = #ptrain.compression<policy = "none", backward_sends = [[false], [false]], dp_all_reduce = [false, false]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}

// -----

// (C11) stage 0 sends no gradient backward.
// expected-error@+1 {{'ptrain.compression' compresses a gradient out of stage 0, which sends none backward}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 1>,
                   ptrain.compression = #ptrain.compression<policy = "none", backward_sends = [[#ptrain.cast<bf16>], [false]], dp_all_reduce = [false, false]>} {
  func.func private @forward_stage0()
  func.func private @forward_stage1()
}

// -----

// (C11) the last virtual stage sends no activation forward.
// expected-error@+1 {{'ptrain.compression' compresses an activation out of the last virtual stage, which sends none forward}}
module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2, stages = [@s0, @s1, @s2, @s3], micro_batches = 1>,
                   ptrain.compression = #ptrain.compression<policy = "none", backward_sends = [[false, false], [false, false]],
                                                            forward_sends = [[false, false], [false, #ptrain.cast<bf16>]], dp_all_reduce = [false, false]>} {
  func.func private @s0()
  func.func private @s1()
  func.func private @s2()
  func.func private @s3()
}

// -----

// TPSite (C1): a layer >= 0.
// expected-error@+1 {{tp_site layer must be >= 0, got -1}}
func.func private @tp_site_c1() attributes {s = #ptrain.tp_site<layer = -1, role = "attn_out", direction = "forward", codec = #ptrain.cast<f16>>}

// -----

// TPSite (C2): forward or backward.
// expected-error@+1 {{tp_site direction must be forward or backward, got 'sideways'}}
func.func private @tp_site_c2() attributes {s = #ptrain.tp_site<layer = 0, role = "attn_out", direction = "sideways", codec = #ptrain.cast<f16>>}

// -----

// TPSite (C3): the role is a site of its direction (attn_in is f's backward all-reduce, not a forward one).
// expected-error@+1 {{tp_site role 'attn_in' is not a forward site (forward: attn_out, mlp_down; backward: attn_in, mlp_in)}}
func.func private @tp_site_c3() attributes {s = #ptrain.tp_site<layer = 0, role = "attn_in", direction = "forward", codec = #ptrain.cast<f16>>}

// -----

// TPSite (C4): no error feedback on a forward site.
// expected-error@+1 {{tp_site: the forward site mlp_down cannot have error feedback}}
func.func private @tp_site_c4() attributes {s = #ptrain.tp_site<layer = 0, role = "mlp_down", direction = "forward", codec = #ptrain.cast<f16>, error_feedback = true>}

// -----

// ZeroBucket (C1): a grid axis.
// expected-error@+1 {{zero_bucket needs a grid axis}}
func.func private @zero_bucket_c1() attributes {z = #ptrain.zero_bucket<params = ["w"], elements = 4, padded = 4, axis = "">}

// -----

// ZeroBucket (C2): padded covers the elements.
// expected-error@+1 {{zero_bucket elements must be >= 1 and padded >= elements, got 4 and 3}}
func.func private @zero_bucket_c2() attributes {z = #ptrain.zero_bucket<params = ["w"], elements = 4, padded = 3, axis = "dp">}

// -----

// ZeroBucket (C3): parameter keys.
// expected-error@+1 {{zero_bucket params must be a non-empty list of parameter keys (strings)}}
func.func private @zero_bucket_c3() attributes {z = #ptrain.zero_bucket<params = [1], elements = 4, padded = 4, axis = "dp">}

// -----

// (C4) ptrain.zero_bucket is a #ptrain.zero_bucket.
// expected-error@+1 {{'ptrain.zero_bucket' must be a #ptrain.zero_bucket, got {axis = "dp"}}}
ptrain.state @zero_bucket_c4 key "m" kind optimizer_moment {ptrain.zero_bucket = {axis = "dp"}} : tensor<2xf32>

// -----

// (C5) on an optimizer moment.
// expected-error@+1 {{'ptrain.zero_bucket' belongs on a ptrain.state of kind optimizer_moment}}
ptrain.state @zero_bucket_c5 key "w" kind parameter {ptrain.zero_bucket = #ptrain.zero_bucket<params = ["w"], elements = 4, padded = 4, axis = "dp">} : tensor<2xf32>

// -----

// (C6) the state is a rank-1 shard of the padded bucket.
// expected-error@+1 {{'ptrain.zero_bucket' the state's type 'tensor<3xf32>' must be rank 1 with a size that divides padded (4)}}
ptrain.state @zero_bucket_c6 key "m" kind optimizer_moment {ptrain.zero_bucket = #ptrain.zero_bucket<params = ["w"], elements = 4, padded = 4, axis = "dp">} : tensor<3xf32>

// -----

// DropoutLayout (C1): counts >= 1 (dimension 0 holds the batch rows, never the sharded one).
// expected-error@+1 {{dropout_layout shard_dim must be >= 1, got 0}}
func.func private @dropout_layout_c1() attributes {d = #ptrain.dropout_layout<shard_axis = "tp", shard_dim = 0>}

// -----

// DropoutLayout (C2): shard_axis without shard_dim.
// expected-error@+1 {{dropout_layout: shard_axis and shard_dim come together}}
func.func private @dropout_layout_c2() attributes {d = #ptrain.dropout_layout<shard_axis = "tp">}

// -----

// DropoutLayout (C3): replica_axis without replica_rows.
// expected-error@+1 {{dropout_layout: replica_axis and replica_rows come together}}
func.func private @dropout_layout_c3() attributes {d = #ptrain.dropout_layout<batch_rows = 4, replica_axis = "dp">}

// -----

// DropoutLayout (C3): the replicas' rows need the batch rows (the row packed into the counter).
// expected-error@+1 {{dropout_layout: replica_rows needs batch_rows (the row packed into the counter)}}
func.func private @dropout_layout_c3_rows() attributes {d = #ptrain.dropout_layout<replica_axis = "dp", replica_rows = 8>}

// -----

// Precision (C1): ptrain.precision is a #ptrain.precision (the string of earlier builds is refused).
// expected-error@+1 {{'ptrain.precision' must be a #ptrain.precision, got "bf16"}}
module attributes {ptrain.precision = "bf16"} {}

// -----

// Precision (C1): an unknown format does not parse.
// expected-error@+2 {{expected ::mlir::ptrain::Precision to be one of: fp32, bf16}}
// expected-error@+1 {{failed to parse PTrain_PrecisionAttr parameter 'value'}}
module attributes {ptrain.precision = #ptrain.precision<fp8>} {}

// -----

// Precision (C2): on a module.
// expected-error@+1 {{'ptrain.precision' belongs on a builtin.module}}
func.func private @precision_c2() attributes {ptrain.precision = #ptrain.precision<bf16>}
