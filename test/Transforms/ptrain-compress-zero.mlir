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
// PowerSGD (optimus-cc's SC on every stage, rank 2): each gradient of a bucket is all-reduced compressed alone
// and each rank keeps its shard of the averaged bucket; the bias (rank 1 on its 8 x 1 view) likewise.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" \
// RUN:   --ptrain-compress="policy=optimus-cc sc-all=true sc-rank=2" \
// RUN:   --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=POWERSGD
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" \
// RUN:   --ptrain-compress="policy=optimus-cc sc-all=true sc-rank=2" \
// RUN:   --ptrain-report="cluster=%S/Inputs/toy-cluster.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PSGDREPORT
// A bucket mixing codecs the reduction cannot run together (overrides per parameter): a flat codec with none,
// and PowerSGD with a flat codec.
// RUN: rm -rf %t && mkdir -p %t
// RUN: echo '{"edges": [{"parameter": "head", "codec": "quant:bits=8,granularity=tensor"}]}' > %t/quant-head.json
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" --ptrain-compress="policy=none overrides=%t/quant-head.json" \
// RUN:   --ptrain-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=MIXFLAT
// RUN: echo '{"edges": [{"parameter": "head", "codec": "powersgd:rank=2"}, {"parameter": "wte", "codec": "quant:bits=8,granularity=tensor"}]}' > %t/mixed.json
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" --ptrain-compress="policy=none overrides=%t/mixed.json" \
// RUN:   --ptrain-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=MIXPSGD
// auto under ZeRO-1 searches PowerSGD only on the dp gradients; another dp candidate is an error naming it.
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/toy-cluster.json" --ptrain-compress="policy=auto auto-dp-codecs=bf16" \
// RUN:   2>&1 | FileCheck %s --check-prefix=AUTODP
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
// Under fp16's loss scaler the dp gradients may be inf/NaN on an overflowing step: quantization codes such a block
// with a NaN scale, so the scaler's check after the reduction sees it (docs/MixedPrecision.md, "Codecs on
// loss-scaled gradients"); quantized buckets and plain dp's quantized all-reduce compile, the skipped step keeps
// the bucket's residual through the select on the skip flag, and the kept residual (loss-scaled, marked
// ptrain.loss_scaled) is multiplied by new scale / old scale ("Residuals across a scale change"). (A cluster with
// fp16 peaks.)
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1 precision=fp16" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" \
// RUN:   --ptrain-compress="policy=mcbench dp-codec=quant:bits=8,granularity=block,block-size=43" \
// RUN:   --ptrain-lower-to-runtime --ptrain-verify-plan | FileCheck %s --check-prefix=FP16ZERO
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 precision=fp16" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" \
// RUN:   --ptrain-compress="policy=mcbench dp-codec=quant:bits=8" | FileCheck %s --check-prefix=FP16DP
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1 precision=fp16" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" \
// RUN:   --ptrain-compress="policy=optimus-cc sc-all=true sc-rank=2" | FileCheck %s --check-prefix=FP16PSGD
// The refusal of another auto-dp-codecs under ZeRO-1 hints at quantized buckets under fp16 too.
// RUN: not ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=3 zero=1 precision=fp16" --ptrain-schedule \
// RUN:   --ptrain-critical-path="cluster=%S/Inputs/h200-slow-link.json" \
// RUN:   --ptrain-compress="policy=auto auto-dp-codecs=bf16" 2>&1 | FileCheck %s --check-prefix=AUTODP

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

// POWERSGD-LABEL: func.func @stage0_optimizer_step
// POWERSGD-NOT: reduce_scatter_start
// POWERSGD: ptrain.compressed_all_reduce_start %{{.*}} state(%{{.*}}, %{{.*}}) on @grid axes [dp] reduction = avg {codec = #ptrain.powersgd<rank = 2>, error_feedback} : tensor<8x16xf32>
// POWERSGD: ptrain.compressed_all_reduce_start %{{.*}} state(%{{.*}}, %{{.*}}) on @grid axes [dp] reduction = avg {codec = #ptrain.powersgd<rank = 2>, error_feedback} : tensor<16x8xf32>
// POWERSGD: %[[HEAD:.*]] = ptrain.wait %{{.*}} : !ptrain.request<tensor<8x16xf32>>
// POWERSGD: %[[HEADF:.*]] = ptrain.reshape %[[HEAD]] : tensor<8x16xf32> -> tensor<128xf32>
// POWERSGD: %[[WTE:.*]] = ptrain.wait %{{.*}} : !ptrain.request<tensor<16x8xf32>>
// POWERSGD: %[[WTEF:.*]] = ptrain.reshape %[[WTE]] : tensor<16x8xf32> -> tensor<128xf32>
// POWERSGD: %[[FULL:.*]] = ptrain.concat %[[HEADF]], %[[WTEF]], %{{.*}} {axis = 0 : i64} : tensor<128xf32>, tensor<128xf32>, tensor<2xf32> -> tensor<258xf32>
// POWERSGD: %[[SHARD:.*]] = ptrain.tp_split %[[FULL]] on @grid axis dp dim 0 : tensor<258xf32> -> tensor<86xf32>
// POWERSGD: ptrain.adamw %{{.*}}, %[[SHARD]],
// POWERSGD: ptrain.all_gather_start
// POWERSGD-NOT: reduce_scatter_start
// POWERSGD: return

// The report prices each gradient's PowerSGD all-reduce (the bias's rank 1 on its 8 x 1 view is exact) plus the
// all-gather of the shards.
// PSGDREPORT: compression (policy optimus-cc)
// PSGDREPORT: dp all-reduce stage 0: #ptrain.powersgd<rank = 2> (clamped to min(n, m)) on 2 gradients, 1 exact

// MIXFLAT: error: --ptrain-lower-to-runtime: the ZeRO-1 bucket of 'head/grad' and 'wte/grad' is reduce-scattered as one flat tensor and needs one codec for all its gradients, got #ptrain.quant<bits = 8, granularity = tensor> and none
// MIXPSGD: error: --ptrain-lower-to-runtime: the ZeRO-1 bucket of 'head/grad' and 'wte/grad' all-reduces its PowerSGD gradients one by one and cannot also reduce-scatter a flat codec, got #ptrain.powersgd<rank = 2> and #ptrain.quant<bits = 8, granularity = tensor>

// AUTODP: error: --ptrain-compress: auto-dp-codecs=bf16: under ZeRO-1 auto searches PowerSGD only on the data-parallel gradients (give auto-dp-codecs=none, or quantize the buckets with policy=mcbench dp-codec=quant:...,granularity=block)
// CHANNEL: error: --ptrain-lower-to-runtime: a ZeRO-1 bucket is a flat tensor: quantize it with granularity tensor or block (e.g. quant:bits=8,granularity=block,block-size=256), not #ptrain.quant<bits = 8> (channel granularity would keep a scale per element)
// CAST: error: --ptrain-lower-to-runtime: the ZeRO-1 reduce-scatter compresses a bucket with quantization (#ptrain.quant); #ptrain.cast<bf16> on a ZeRO-1 bucket is not built
// FP16ZERO: ptrain.state @sc_stage0_zero_bucket0_residual key "sc/stage0.zero_bucket0/residual" kind codec_residual {ptrain.loss_scaled} : tensor<258xf32>
// FP16ZERO: ptrain.compressed_reduce_scatter_start %{{.*}} state(%{{.*}}) on @grid axes [dp] reduction = avg {codec = #ptrain.quant<bits = 8, granularity = block, block_size = 43>, error_feedback}
// FP16ZERO-LABEL: func.func @stage0_train_step(
// FP16ZERO: %[[OLD:.*]] = ptrain.loss_scale
// FP16ZERO: %[[E0:.*]] = ptrain.state_read @sc_stage0_zero_bucket0_residual : tensor<258xf32>
// FP16ZERO: %[[FLAG:.*]] = call @stage0_optimizer_step() : () -> tensor<f32>
// FP16ZERO: %[[SKIP:.*]] = ptrain.compare gt %[[FLAG]], %{{.*}} : tensor<f32>, tensor<f32>
// FP16ZERO: %[[NEW:.*]] = ptrain.loss_scale
// FP16ZERO-NEXT: %[[RATIO:.*]] = ptrain.binary div %[[NEW]], %[[OLD]]
// FP16ZERO: %[[E1:.*]] = ptrain.state_read @sc_stage0_zero_bucket0_residual : tensor<258xf32>
// FP16ZERO-NEXT: %[[E2:.*]] = ptrain.select %[[SKIP]], %[[E0]], %[[E1]]
// FP16ZERO-NEXT: %[[E3:.*]] = ptrain.binary mul %[[E2]], %[[RATIO]] : tensor<258xf32>, tensor<f32>
// FP16ZERO-NEXT: ptrain.state_write %[[E3]] to @sc_stage0_zero_bucket0_residual
// FP16DP: dp_codecs = {{.*}}"wte/grad" = #ptrain.quant<bits = 8>}
// FP16PSGD: ptrain.compression = #ptrain.compression<policy = "optimus-cc"
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
