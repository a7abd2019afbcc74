// ZeRO-1's compressed reduce-scatter (docs/DistributedOptimizer.md, "Compression"): mcbench's dp-codec puts a
// quantization codec on every dp gradient, and --ptrain-lower-to-runtime turns each ZeRO-1 bucket's
// reduce-scatter into ptrain.compressed_reduce_scatter_start with one error-feedback residual per bucket
// ("sc/stage0.zero_bucket<k>/residual", the padded bucket). dp = 3: buckets of 258 and 9 elements.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" \
// RUN:   --ptrain-compress="policy=mcbench dp-codec=quant:bits=8,granularity=block,block-size=43" \
// RUN:   --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s
// With clipping (the norm's all-reduce over [dp] is no gradient bucket) the buckets are compressed the same way.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1 clip-norm=1.0" \
// RUN:   --ptrain-schedule --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" \
// RUN:   --ptrain-compress="policy=mcbench dp-codec=quant:bits=8,granularity=block,block-size=43" \
// RUN:   --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=CLIP
// Without error feedback: no residual.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" \
// RUN:   --ptrain-compress="policy=mcbench dp-codec=quant:bits=4,granularity=tensor sc-error-feedback=false" \
// RUN:   --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=NOEF
// The timing model prices the codes: the report's dp bytes drop.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" \
// RUN:   --ptrain-compress="policy=mcbench dp-codec=quant:bits=8,granularity=tensor" \
// RUN:   --ptrain-report="cluster=%S/Inputs/toy-cluster.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// What the reduce-scatter does not run, each an error naming it.
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" --ptrain-compress="policy=mcbench dp-codec=quant:bits=8" \
// RUN:   --ptrain-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=CHANNEL
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" --ptrain-compress="policy=mcbench dp-codec=bf16" \
// RUN:   --ptrain-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=CAST
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" --ptrain-compress="policy=mcbench dp-codec=bf16" \
// RUN:   2>&1 | FileCheck %s --check-prefix=DP1

// The record: every gradient has the codec; one residual per bucket, the padded bucket.
// CHECK: dp_codecs = {"bias/grad" = #ptrain.quant<bits = 8, granularity = block, block_size = 43>, "head/grad" = #ptrain.quant<bits = 8, granularity = block, block_size = 43>, "wte/grad" = #ptrain.quant<bits = 8, granularity = block, block_size = 43>}
// CHECK-DAG: ptrain.state @sc_stage0_zero_bucket0_residual key "sc/stage0.zero_bucket0/residual" kind codec_residual : tensor<258xf32>
// CHECK-DAG: ptrain.state @sc_stage0_zero_bucket1_residual key "sc/stage0.zero_bucket1/residual" kind codec_residual : tensor<9xf32>
// CHECK-LABEL: func.func @stage0_optimizer_step
// CHECK: %[[E0:.*]] = ptrain.state_read @sc_stage0_zero_bucket0_residual : tensor<258xf32>
// CHECK: %[[R0:.*]], %[[N0:.*]] = ptrain.compressed_reduce_scatter_start %{{.*}} state(%[[E0]]) on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 43>, error_feedback} : tensor<258xf32> state(tensor<258xf32>) -> !ptrain.request<tensor<86xf32>> state(tensor<258xf32>)
// CHECK: ptrain.state_write %[[N0]] to @sc_stage0_zero_bucket0_residual
// CHECK: ptrain.compressed_reduce_scatter_start %{{.*}} state(%{{.*}}) on @grid axes [dp] reduction = avg {{.*}} : tensor<9xf32> state(tensor<9xf32>) -> !ptrain.request<tensor<3xf32>>
// CHECK: ptrain.wait %[[R0]] : !ptrain.request<tensor<86xf32>>
// CHECK-NOT: ptrain.reduce_scatter_start

// CLIP-LABEL: func.func @stage0_optimizer_step
// CLIP-COUNT-2: ptrain.compressed_reduce_scatter_start
// CLIP: ptrain.sum_squares

// NOEF-NOT: residual
// NOEF: ptrain.compressed_reduce_scatter_start %{{.*}} on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 4, granularity = tensor>} : tensor<258xf32> -> !ptrain.request<tensor<86xf32>>

// The compressed reduction is priced as the all-to-all of the chunk codes plus the all-gather of the shards.
// REPORT: compression (policy mcbench)
// REPORT: dp all-reduce stage 0

// CHANNEL: error: --ptrain-lower-to-runtime: a ZeRO-1 bucket is a flat tensor: quantize it with granularity tensor or block (e.g. quant:bits=8,granularity=block,block-size=256), not #ptrain.quant<bits = 8> (channel granularity would keep a scale per element)
// CAST: error: --ptrain-lower-to-runtime: the ZeRO-1 reduce-scatter compresses a bucket with quantization (#ptrain.quant); #ptrain.cast<bf16> on a ZeRO-1 bucket is not built
// DP1: error: --ptrain-compress: dp-codec=bf16 compresses the data-parallel gradient reductions, but dp = 1

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @bias key "bias" kind parameter : tensor<8xf32>
ptrain.state @head key "head" kind parameter : tensor<8x16xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %b = ptrain.state_read @bias : tensor<8xf32>
  %h = ptrain.state_read @head : tensor<8x16xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %y = ptrain.binary add %x, %b : tensor<2x5x8xf32>, tensor<8xf32>
  %logits = ptrain.matmul %y, %h : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}
