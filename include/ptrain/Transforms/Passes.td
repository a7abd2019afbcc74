//===- Passes.td - ptrain's passes -------------------------*- tablegen -*-===//

#ifndef PTRAIN_TRANSFORMS_PASSES_TD
#define PTRAIN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildTrainingStepPass : Pass<"ptrain-build-training-step", "::mlir::ModuleOp"> {
  let summary = "Builds the training step: next-token loss, reverse-mode gradients, optimizer update.";
  let description = [{
    From the L0 model graph `@forward(%tokens: tensor<B x S x int>) -> tensor<B x S x V x float>` (logits),
    builds `@train_step(%tokens)`:

    1. the forward, cloned;
    2. the next-token cross-entropy: logits at positions 0..S-2 against tokens 1..S-1, mean in nats;
    3. reverse-mode automatic differentiation from the loss through each op's gradient rule
       (GradientOpInterface) to every `ptrain.state` parameter read; a parameter read twice (a tied
       embedding) gets the sum of both gradients;
    4. the optimizer: `adamw` (default) keeps two moments per parameter and a step counter as new
       `ptrain.state` symbols (keys `<param>/adam_m`, `<param>/adam_v`, `step`, initialized to zero by the
       runtime) and writes the updated parameters back; weight decay applies to parameters of rank >= 2
       only (biases and layer-norm scales are not decayed, as in GPT-2 / Megatron); `sgd` is torch.optim.SGD
       (`ptrain.sgd`: L2 weight decay on the same parameters, with `momentum` > 0 a heavy-ball buffer per
       parameter, key `<param>/sgd_momentum`), with the same schedule; `none` returns the
       loss followed by one gradient per parameter (result attribute `ptrain.grad_of` = the parameter key)
       and updates nothing, for gradient checks.

    When `@forward` takes a second argument with `ptrain.role = "labels"` (integer class ids of the tokens'
    shape; the importer's `--signature <name>=labels`), `@train_step(%tokens, %labels)` scores every position
    against its label instead (mean cross-entropy over B x S positions). With pipeline stages the last
    stage's `@stage<P-1>_forward_backward(%h, %labels)` takes the micro-batch's labels in place of its
    token ids, and the module's `ptrain.pipeline` gets `labels = true`: the lowered steps take
    `(%tokens, %labels)` on every rank (each rank reads its own copy from the data; only the last stage
    uses them, nothing crosses the pipeline).

    Padding and class weights (`ignore-index=N`, `class-weights=w0,w1,...`; docs/TrainingStep.md): the loss
    is `ptrain.cross_entropy` with `ignore_index` and a `weight` constant, PyTorch's weighted mean
    sum(w[y] nll) / sum(w[y]) over the positions whose label is not N. In pipeline mode the mean is over the
    whole step (every micro-batch and dp replica), not a mean of means: the last stage's
    `@stage<P-1>_loss_weight(%labels) -> tensor<f32>` gives one micro-batch's sum(w[y]),
    `--ptrain-lower-to-runtime` sums it over the micro-batches and all-reduces it over dp into the step's
    normalizer %n, and `@stage<P-1>_forward_backward(%h, %labels, %n)` scores
    `cross_entropy {reduction = "sum"} / %n` with the loss gradient seeded with dp (the dp average divides
    by it again).

    The step returns the loss (rank-0). Fails, naming the function, when `@forward` does not have that
    signature or an op on the path to the loss has no gradient rule.

    After `--ptrain-split-stages` (the module has `ptrain.pipeline`), it builds per stage s of P instead, on
    the grid `@grid` (created with one axis `pp` = P when the module has none):
    * `@stage<s>_backward(%in, %dout) -> %din` for s < P - 1 (no %din for stage 0, whose input is token
      ids): recomputes the stage's forward (activation recomputation) and back-propagates `%dout`;
    * `@stage<P-1>_forward_backward(%h, %tokens) -> (%loss, %dh)`: forward, loss, backward, with the loss
      gradient seeded with 1 / micro-batches so that accumulated gradients are the mean over micro-batches;
    * both add their parameter gradients into `ptrain.state` accumulators (kind `gradient`, key
      `<param>/grad`);
    * `@stage<s>_optimizer_step()`: the tied-parameter gradient sync, then AdamW on the stage's parameters
      and zeroed accumulators. A parameter read by several stages (the tied embedding) is summed with an
      all-reduce over `pp` in which every stage takes part when its holders are the first and the last
      stage or all stages (stages without it contribute zeros; Optimus-CC's fused embedding sync, a
      first/last-stage group, replaces this in the compression passes). Any other holder set (a weight
      shared by middle stages, or by more than two) is summed among its holders only: each holder sends its
      gradient to every other holder along `pp` and receives theirs (tag 16384 + the parameter's index),
      all such transfers posted before any wait, then adds the parts in holder order, so the copies stay
      bit-equal and two groups may be synced in any order.
    `@forward_stage<s>` stays the stage's forward. Every `ptrain.dropout` of the stage functions is keyed by
    its global batch row (docs/TrainingStep.md, "Dropout masks"): its counter becomes step + the state
    `@micro_batch_row` (kind `step_counter`), which `--ptrain-lower-to-runtime` sets to 2^32 i b before the
    call for micro-batch i of b rows, and its `ptrain.dropout_layout` gets `batch_rows` = b and, when dp > 1,
    `replica_axis = "dp"`, `replica_rows` = M b, so micro-batches and replicas draw the one-rank step's masks.

    With virtual stages (`--ptrain-split-stages="virtual-stages=V"`, the interleaved schedule), the forward,
    backward and forward-backward functions are built per virtual stage c in [0, P V) (`ptrain.stage` = the
    rank c mod P, `ptrain.virtual_stage` = c; the last virtual stage has the loss), and one
    `@stage<s>_optimizer_step` per rank s covers the parameters of all its chunks.

    Data parallelism (`dp` = D > 1, pipeline mode only): the grid is `@grid(dp = D, pp = P)` (row-major, so
    the D replicas of a stage are P ranks apart) and each replica runs the same step on its own rows of the
    global batch (the driver gives replica d rows [d R, (d + 1) R) of D R). Before the tied-parameter sync,
    `@stage<s>_optimizer_step` averages every gradient accumulator of the stage over `dp` with
    `ptrain.all_reduce_start ... axes [dp] reduction = avg`, bucketed like PyTorch DDP (Li et al., "PyTorch
    Distributed", VLDB 2020, sec. 3.2.3): the stage's parameters in reverse order of first use (the order their
    gradients become final in a backward pass) fill buckets of at most `bucket-bytes` (a larger parameter gets
    its own bucket); a bucket of several gradients is flattened and concatenated into one 1-D tensor, reduced,
    and split back. All buckets are started before the first is waited on, so they are in flight together.
    The tied sync then sums the dp-averaged gradients over `pp`, so every replica of the first and of the last
    stage holds the same full gradient and updates its copy of the tied weight identically. The averaged
    gradient of D replicas of M micro-batches each is the mean over D M micro-batches: the step equals a
    one-rank step over the global batch.

    `deterministic-dp` (docs/Runtime.md, "Deterministic data parallelism"): the sums of the step do not depend
    on how its G = D M micro-batches are split between replicas. Every micro-batch's loss is seeded with 1 / G;
    its backward writes its gradient to the accumulator (no sum there), and --ptrain-lower-to-runtime adds the
    micro-batch gradients as a fixed pairwise tree over the global micro-batch index d M + i; the dp reduction
    is the tree's upper levels: each bucket is all-gathered over `dp` (replica order) and its D partial sums
    added pairwise ((P0 + P1) + (P2 + P3)), a sum, not an average, since the seed already divides by G. D and M
    must be powers of two and the schedule not interleaved; a weighted loss (ignore-index, class-weights) sums
    its weight sum as the same tree and seeds each micro-batch's part with 1.
    The pipeline attribute records `deterministic_dp = true`.
    ZeRO-1 (`zero=1`, optimizer=adamw, dp > 1; docs/DistributedOptimizer.md): Megatron-LM's distributed
    optimizer, ZeRO stage 1 "P_os" (Rajbhandari et al., SC'20, sec. 5.1). The tied-parameter sync runs first
    (on the replicas' own accumulated gradients); then the stage's parameters, matrices and the others apart
    (one weight decay per bucket), fill buckets of at most `bucket-bytes`, each flattened and zero-padded to a
    multiple of dp; every bucket is `ptrain.reduce_scatter_start ... axes [dp] reduction = avg`, this rank's
    shard of the parameters is `ptrain.tp_split ... axis dp`, one `ptrain.adamw` updates the shard with moment
    states of the shard's size only (`stage<s>_zero_bucket<k>_adam_m` / `_adam_v`, attribute
    `ptrain.zero_bucket = #ptrain.zero_bucket<...>` naming the bucket's parameters, elements and padded size), and
    `ptrain.all_gather_start ... gather_dim = 0` brings the updated parameters back to every replica. Optimizer
    state per rank is 1 / dp of plain data parallelism plus the padding. With clip-norm > 0 the buckets are also
    split by how they count in the global norm (a tied parameter on its first stage only, replicated ones 1 / tp),
    every reduce-scatter is waited first, and the shards' squared norms, all-reduced over [dp] plus pp and tp,
    give the scale of every shard. zero=1 with dp = 1 (nothing to shard) or with optimizer=sgd or none is an
    error naming the options; zero > 1 (ZeRO-2, -3) is not implemented and an error.

    ```mlir
    // dp = 2, zero = 1: one bucket of 2 parameters (4096 + 128 elements, padded to 4224)
    %r = ptrain.reduce_scatter_start %flat on @grid axes [dp] scatter_dim = 0 reduction = avg
        : tensor<4224xf32> -> !ptrain.request<tensor<2112xf32>>
    %g = ptrain.wait %r : !ptrain.request<tensor<2112xf32>>
    %p = ptrain.tp_split %params on @grid axis dp dim 0 : tensor<4224xf32> -> tensor<2112xf32>
    %p1, %m1, %v1 = ptrain.adamw %p, %g, %m, %v, %t {...} : tensor<2112xf32>
    %a = ptrain.all_gather_start %p1 on @grid axes [dp] gather_dim = 0
        : tensor<2112xf32> -> !ptrain.request<tensor<4224xf32>>
    ```

    Global-norm clipping (`clip-norm` = C > 0; 0, the default, is off; Megatron-LM's clip_grad_norm_fp32,
    torch.nn.utils.clip_grad_norm_): after the dp average and the tied sync, each rank sums the squared norms
    of its gradients (`ptrain.sum_squares`), a tied parameter on the first stage holding it only and, after
    --ptrain-shard-tp, a replicated (not tp-sliced) parameter weighted 1 / tp; the sums are all-reduced over
    `[pp]` / `[pp, tp]` / `[tp]` (the axes that partition the model; dp replicas hold equal gradients), and
    every gradient is multiplied by `ptrain.clip_scale` = min(1, C / (norm + 1e-6)) before the optimizer.
    A negative, infinite or NaN clip-norm is an error naming the option.

    ```mlir
    // clip-norm=1.0, pp = 2: stage 0's optimizer step
    %sq = ptrain.sum_squares %g0 : tensor<256x128xf32> -> tensor<f32>
    ...
    %r = ptrain.all_reduce_start %sum on @grid axes ["pp"] reduction = sum {ptrain.global_norm} : tensor<f32>
    %total = ptrain.wait %r : !ptrain.request<tensor<f32>>
    %scale = ptrain.clip_scale %total {max_norm = 1.0 : f64} : tensor<f32>
    %g0c = ptrain.binary mul %g0, %scale : tensor<256x128xf32>, tensor<f32>
    ```

    ```mlir
    // ptrain-opt gpt.mlir --ptrain-build-training-step="optimizer=adamw lr=3e-4 warmup-steps=100 total-steps=2000"
    func.func @train_step(%tokens: tensor<4x64xi64>) -> tensor<f32> {
      ...
      %loss = ptrain.cross_entropy %logits, %labels : tensor<4x63x256xf32>, tensor<4x63xi64>
      ...
      %p1, %m1, %v1 = ptrain.adamw %p, %g, %m, %v, %t {...} : tensor<256x128xf32>
      ptrain.state_write %p1 to @wte.weight : tensor<256x128xf32>
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::ptrain::PTrainDialect"];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"", "The forward function.">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"", "adamw, sgd or none.">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "Micro-batches per step (pipeline mode): the loss gradient is seeded with 1 / micro-batches.">,
    Option<"lr", "lr", "double", /*default=*/"3e-4", "Peak learning rate.">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"100", "Linear warm-up steps.">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"2000", "Steps of the cosine schedule.">,
    Option<"minLrRatio", "min-lr-ratio", "double", /*default=*/"0.1", "Final learning rate / peak.">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1.">,
    Option<"beta2", "beta2", "double", /*default=*/"0.95", "AdamW beta2.">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1e-8", "AdamW epsilon.">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.1", "AdamW decoupled weight decay.">,
    Option<"dp", "dp", "int64_t", /*default=*/"1",
           "Data-parallel replicas (pipeline mode): gradients are averaged over the grid axis dp.">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "Largest data-parallel all-reduce bucket in bytes (default 25 MiB, PyTorch DDP's bucket_cap_mb = 25); "
           "0 reduces every gradient on its own.">,
    Option<"deterministicDp", "deterministic-dp", "bool", /*default=*/"false",
           "Sum the step's gradients and losses in an order that does not depend on dp (pipeline mode; dp and "
           "micro-batches powers of two): dp x micro-batches = G gives the same bits at every dp.">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 (default) all-reduces the dp gradient buckets and keeps the whole optimizer state on "
           "every replica; 1 (optimizer=adamw, dp > 1) reduce-scatters them, updates this rank's 1 / dp shard "
           "of every bucket with shard-sized AdamW moments, and all-gathers the parameters (Megatron-LM's "
           "distributed optimizer; ZeRO P_os, Rajbhandari et al. SC'20 sec. 5.1).">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD heavy-ball momentum in [0, 1) (optimizer=sgd; 0: no momentum buffer).">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Global-norm gradient clipping: scale every gradient by min(1, C / (norm + 1e-6)); 0 (default) is off.">,
    Option<"ignoreIndex", "ignore-index", "std::string", /*default=*/"\"\"",
           "The label the loss does not count (PyTorch's ignore_index: -100 for padded labels, or a pad token id "
           "of the shifted tokens); empty (default): every position counts.">,
    ListOption<"classWeights", "class-weights", "double",
               "Class weights of the loss, one per vocabulary entry: the mean is sum(w[y] nll) / sum(w[y]) over the "
               "counted positions (torch.nn.functional.cross_entropy's weight).">,
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "fp32 (default), bf16 or fp16: every GEMM of the built step (forward and backward) reads 16-bit "
           "operands (bf16, or IEEE binary16 for fp16; ptrain.cast, one per value) and accumulates in fp32 "
           "(ptrain.matmul {accumulate = f32}); the outputs of the layer norms, softmaxes, GELUs (and the bias "
           "add a GELU reads) and residual adds are rounded to the 16-bit type once and read back widened "
           "(op16(x) = round(op32(widen(x))): statistics in fp32); parameters, moments, checkpoint, the "
           "loss, gradients, their sums and the dp reduction stay fp32, and pipeline messages are sent in the "
           "16-bit type (docs/MixedPrecision.md). fp16 (with an optimizer) adds Megatron-LM's dynamic loss scaler: a "
           "tensor<3xf32> state `loss_scaler`, the loss gradient seeded times the scale, every gradient unscaled "
           "and checked after the dp reduction (zero=1: each rank's reduce-scattered shards), a step with an "
           "inf/NaN on any rank skipped (the optimizer reads the optimizer-only counter `optimizer_step`, which a "
           "skipped step holds back); each `@stage<s>_optimizer_step` then returns the skip flag, tensor<f32> 1 "
           "or 0.">,
    Option<"halfActivations", "half-activations", "bool", /*default=*/"true",
           "precision=bf16 or fp16: store the activations between the non-GEMM ops in the 16-bit type (the "
           "outputs of the layer norms, softmaxes, GELUs and residual adds; docs/MixedPrecision.md, \"16-bit "
           "activations\", slice 2). false keeps them fp32 (only the GEMM operands are rounded: the step before "
           "slice 2, for comparison); an error with precision=fp32.">,
    Option<"initialLossScale", "initial-loss-scale", "double", /*default=*/"4294967296.0",
           "fp16's dynamic loss scaler: the first loss scale (Megatron-LM's --initial-loss-scale, default 2^32); "
           "finite, > 0, >= min-loss-scale and an fp32 value.">,
    Option<"minLossScale", "min-loss-scale", "double", /*default=*/"1.0",
           "fp16's dynamic loss scaler: the scale never backs off below it (Megatron-LM's --min-loss-scale, "
           "default 1); finite and > 0.">,
    Option<"lossScaleWindow", "loss-scale-window", "int64_t", /*default=*/"1000",
           "fp16's dynamic loss scaler: clean steps before the scale doubles (Megatron-LM's --loss-scale-window, "
           "DynamicGradScaler's growth_interval, default 1000); >= 1.">,
    Option<"hysteresis", "hysteresis", "int64_t", /*default=*/"2",
           "fp16's dynamic loss scaler: overflowing steps before the scale halves (Megatron-LM's --hysteresis, "
           "default 2); >= 1.">,
  ];
  let statistics = [
    Statistic<"numHalfGemms", "half-gemms", "GEMMs given 16-bit operands (precision=bf16 or fp16)">,
    Statistic<"numHalfActivations", "half-activations",
              "Activations stored in 16 bits (precision=bf16 or fp16: layer norm, softmax, GELU and its bias add, residual adds)">,
    Statistic<"numBuckets", "dp-buckets", "Data-parallel gradient all-reduce buckets">,
    Statistic<"numParameters", "parameters", "Parameters differentiated">,
    Statistic<"numBackwardOps", "backward-ops", "Ops built by gradient rules">,
  ];
}

def RaisePass : Pass<"ptrain-raise", "::mlir::ModuleOp"> {
  let summary = "Recognises linear, attention and transformer-layer structure in the imported forward graph.";
  let description = [{
    Marks the structure of the L0 forward (`@forward`) that `--ptrain-shard-tp` consumes, as discardable
    attributes on the imported ops (each keeps its ONNX node name as location):

    First it folds the unfused forms of exporters below opset 23 into model ops: w * (x * rsqrt(mean(x^2) +
    eps)) into `ptrain.rms_norm`, and the rotate-half form x * cat(c, c) + rotate_half(x) * cat(s, s) into
    `ptrain.rotary_embedding` (lib/Transforms/RaiseTransformerOps.cpp; a rotate-half form whose tables are not
    cat(c, c) is an error). Then:

    * `ptrain.attention = {layer, heads, kv_heads, head_dim}` on each attention's `ptrain.softmax`: the scores
      are a `ptrain.matmul` of Q [..., heads, S, head_dim] and K^T, optionally scaled and masked (binary ops,
      `ptrain.select`), and the softmax feeds the context matmul with V; `kv_heads` < `heads` under
      grouped-query attention (K and V repeated by `ptrain.broadcast_to`);
    * `ptrain.linear = {layer, role}` on the matmuls with a parameter weight (a `ptrain.state_read`,
      possibly through `ptrain.transpose`): `role = "qkv"` for the fused Q|K|V projection that Q, K and V
      are split from (`ptrain.split` or `ptrain.slice` of its last dimension), `"q"`, `"k"`, `"v"` for
      separate projections of one input (BERT, LLaMA; Q and K possibly through `ptrain.rotary_embedding`),
      `"attn_out"` for the projection of the attention's context (after the heads are merged back),
      `"mlp_up"` and `"mlp_down"` for the two linears around the MLP's `ptrain.gelu`, `"mlp_gate"`,
      `"mlp_up"` and `"mlp_down"` for SwiGLU's silu(x W_gate) * (x W_up) W_down, `"lm_head"` for the linear
      that produces the function's first result (the logits);
    * `ptrain.layers = N` on the function: the number of transformer layers (attentions).

    Layer i is the i-th attention in program order; its MLP is the first GELU or SwiGLU after it (after the
    last layer's MLP, a GELU that feeds no linear is the output head's transform, BERT's, and is left alone).
    Recognised: the bundled GPT (models/gpt, fused `qkv` Linear), the Megatron/Hugging Face GPT-2 export
    (onnxruntime's gpt2_megatron.onnx, MatMul + Split into Q/K/V), onnxruntime's bert_toy_optimized.onnx
    (separate Q, K, V), torch exports of Hugging Face GPT-2 (Gemm) and BERT, and the LLaMA-style model fused
    (opset 23) and unfused (opset 17).

    Fails with an error at the ONNX node (its name is the op's location) when a softmax's scores are not
    a matmul, when Q, K and V come neither from one fused projection nor from three projections with
    parameter weights, when separate Q, K, V read different inputs (cross attention) or K and V differ in
    width, when the context does not reach a linear with a parameter weight through reshapes and
    transposes, when an MLP's GELU is not between two such linears or a SwiGLU's gate, up and down are not
    linears of one input, when a layer has a second MLP, or when the forward has no attention at all.

    ```mlir
    // ptrain-opt gpt.mlir --ptrain-raise
    %qkv = ptrain.matmul %x, %w {ptrain.linear = {layer = 0 : i64, role = "qkv"}}
        : tensor<4x64x128xf32>, tensor<128x384xf32>
    %p = ptrain.softmax %s {axis = -1 : i64, ptrain.attention = {head_dim = 32 : i64, heads = 4 : i64,
        layer = 0 : i64}} : tensor<4x4x64x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::ptrain::PTrainDialect"];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"", "The forward function.">,
  ];
  let statistics = [
    Statistic<"numLayers", "layers", "Transformer layers recognised">,
    Statistic<"numLinears", "linears", "Linears given a role">,
    Statistic<"numRmsNorms", "rms-norms", "Decomposed RMSNorms folded into ptrain.rms_norm">,
    Statistic<"numRotaries", "rotary-embeddings", "Rotate-half forms folded into ptrain.rotary_embedding">,
  ];
}

def ShardTPPass : Pass<"ptrain-shard-tp", "::mlir::ModuleOp"> {
  let summary = "Megatron tensor parallelism on the forward graph: column- and row-parallel linears with f/g.";
  let description = [{
    After `--ptrain-raise`, shards every transformer layer of `@forward` over `tp` ranks as in Megatron-LM
    (Shoeybi et al. 2019, section 3): SPMD, every rank runs the same forward on its slice of the weights.

    * Attention: the fused Q|K|V projection becomes column-parallel per head: rank r holds the columns of
      heads [r H/tp, (r + 1) H/tp) of Q, of K and of V (the weight's output dimension viewed as
      3 x tp x (H/tp) head_dim); the split, the per-head reshapes, scores, mask, softmax and context then run
      on H/tp heads; the output projection is row-parallel (the rows of the rank's heads).
    * Separate Q, K and V projections are each column-parallel by heads behind one f (grouped-query
      attention: rank r keeps key/value heads [r KV/tp, (r + 1) KV/tp), the ones its query heads read).
    * MLP: the up-projection is column-parallel (its bias sliced alike), the down-projection row-parallel;
      SwiGLU's gate and up are both column-parallel. With `replicate-indivisible-mlp`, an MLP whose width tp
      does not divide stays replicated (a remark names the layer) instead of failing.
    * Before each column-parallel linear, `ptrain.tp_copy` (f); after each row-parallel one, before its
      bias, `ptrain.tp_all_reduce` (g). Their gradient rules make autodiff emit the backward all-reduces.
    * Each sliced parameter's `ptrain.state` gets its local type and `ptrain.tp_slice =
      #ptrain.tp_slice<axis = "tp", dim = d, groups = k, shape = [...]>`: the initial value has the global `shape`; dimension d is
      viewed as k x tp x chunk and rank r (its coordinate on `tp`) loads [:, r, :] (k = 3 for the fused
      Q|K|V weight and bias, 1 otherwise). Gradients, moments and accumulators are made with the local type.
    * Everything else (embeddings, layer norms, the LM head, the biases after a row-parallel linear) stays
      replicated: every rank holds the whole parameter and, because f all-reduces the activation gradients,
      computes the same whole gradient, so each is counted once.
    * A parameter read in several places (a tied weight, or equal values that the exporter merged into one
      initializer, e.g. every zero bias of a freshly initialized model) is sliced where all its readers
      slice it alike (the same dimension and groups); otherwise it stays whole and replicated, a remark says
      so, and each reader inside a tensor-parallel region takes the rank's part with `ptrain.tp_split`
      (viewed as k x size/k for k groups), whose gradient rule all-gathers the parts: the whole gradient,
      the same on every rank.
    * The module gets `ptrain.grid @grid(tp = N)`; `--ptrain-build-training-step` extends it to
      (dp, pp, tp), tp varying fastest.

    `tp = 1` changes nothing. Fails, naming the ONNX node, when the module was not raised, when the heads,
    the key/value heads or the MLP width are not divisible by tp, when a layer's projections are not all
    marked, when an
    op between the two linears cannot be sharded (e.g. Q, K and V taken apart by `ptrain.slice` instead of
    `ptrain.split`, a reduction, a softmax over the heads), or when a sharded value leaves the layer by
    another way than its row-parallel linear.

    With `vocab-parallel=true` (Megatron's VocabParallelEmbedding and parallel cross-entropy; off by
    default, so that `ptrain-compile --tp`, whose C++ has no kernels for it yet, keeps working), the token
    embedding and the LM head (tied or not) are split over the vocabulary V, padded with zero rows to Vp, a
    multiple of tp x `vocab-multiple`: rank r keeps rows [r Vp/tp, (r + 1) Vp/tp) of the table and of the
    head's weight (`#ptrain.tp_slice<..., padded = Vp>` when padded; a tied weight stays one sharded
    symbol). The embedding becomes `ptrain.vocab_parallel_embedding` (the rank's rows, 0 elsewhere) and a
    `ptrain.tp_all_reduce`; the head gets f before it and makes the rank's Vp/tp logits, which the forward
    returns through `ptrain.tp_all_gather` (cut back to V). `--ptrain-build-training-step` then computes the
    loss from the local logits with the parallel cross-entropy (max over tp, exp-sums and target logits
    summed over tp, padded logits masked out): the step never gathers the logits. Fails, naming the op,
    when there is no LM head or token embedding, when the head's weight or the table is not a parameter,
    when the logits have another use than the forward's result, or when the weight is read elsewhere too.

    ```mlir
    // ptrain-opt gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=2"
    ptrain.grid @grid(tp = 2)
    ptrain.state @w key "h.0.attn.qkv.weight" kind parameter
        {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 3, shape = [384, 128]>} : tensor<192x128xf32>
    %x = ptrain.tp_copy %ln on @grid axis tp : tensor<4x64x128xf32>
    %qkv = ptrain.matmul %x, %wt : tensor<4x64x128xf32>, tensor<128x192xf32>
    ...
    %part = ptrain.matmul %ctx, %wo : tensor<4x64x64xf32>, tensor<64x128xf32>
    %out = ptrain.tp_all_reduce %part on @grid axis tp : tensor<4x64x128xf32>
    ```
  }];
  let dependentDialects = ["::mlir::ptrain::PTrainDialect"];
  let options = [
    Option<"tp", "tp", "int64_t", /*default=*/"2", "Tensor-parallel ranks.">,
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"", "The forward function.">,
    Option<"vocabParallel", "vocab-parallel", "bool", /*default=*/"false",
           "Split the token embedding, the LM head and the loss over the vocabulary (Megatron).">,
    Option<"vocabMultiple", "vocab-multiple", "int64_t", /*default=*/"1",
           "With vocab-parallel: pad the vocabulary to a multiple of tp x this.">,

    Option<"replicateIndivisibleMlp", "replicate-indivisible-mlp", "bool", /*default=*/"false",
           "Keep an MLP whose width tp does not divide replicated (a remark) instead of failing.">,
  ];
  let statistics = [
    Statistic<"numSliced", "sliced-parameters", "Parameters sliced over tp">,
    Statistic<"numCollectives", "tp-collectives", "f and g ops inserted">,
    Statistic<"numSplits", "tp-splits", "Sliced reads of replicated parameters (ptrain.tp_split)">,
  ];
}

def SplitStagesPass : Pass<"ptrain-split-stages", "::mlir::ModuleOp"> {
  let summary = "Cuts the forward into pipeline stages where only the residual stream crosses.";
  let description = [{
    Splits `@forward` (L0) into `pp` stage functions `@forward_stage<i>` such that exactly one tensor (the
    residual stream, e.g. micro-batch x sequence x hidden) flows from stage i to stage i + 1 and the stages
    are balanced by FLOPs from the cost interface (`CostOpInterface`: 2 n k m per matmul; ops without it
    count one FLOP per result element). Values that need no input (parameter
    reads, constants, and ops on them only, such as a transposed weight) are not sent but recomputed in every
    stage that uses them: the tied embedding is read by the first stage (token embedding) and the last (LM
    head), each from the same `ptrain.state` symbol. Cuts are at layer boundaries: a cut must start a
    segment that holds an attention (a softmax) before the next single-tensor cut, and have a layer before
    it, so each stage holds whole layers and each layer is placed exactly once (until `--ptrain-raise` names
    layers, a layer is recognized by its attention). `@forward` is kept as the reference; the module gets
    `ptrain.pipeline = #ptrain.pipeline<pp = P, stages = [...]>`.

    With `virtual-stages` = v > 1 (the interleaved schedule, Narayanan et al., "Efficient Large-Scale Language
    Model Training on GPU Clusters Using Megatron-LM", SC'21, sec. 2.2.2), the forward is cut into P v
    virtual stages `@forward_stage<c>`, c in [0, P v); virtual stage c runs on rank (pipeline stage) c mod P,
    so rank r holds the v model chunks r, r + P, ..., each with `ptrain.stage = #ptrain.stage<c mod P>` and
    `ptrain.virtual_stage = c`; the pipeline attribute gets `virtual_stages = v`.

    User cuts: `cuts=name1,name2,...` (exactly P v - 1 names) places the stage boundaries instead of the
    balance. Each name is an ONNX node name in the ops' locations (the importer's NameLoc, e.g.
    `/blocks.2/attn/qkv/MatMul`) or a scope of such names (`/blocks.2` names every node under `/blocks.2/`,
    not `/blocks.20/`); the stage boundary goes before the layer (the segment between two layer boundaries)
    that holds the first op it names, so each layer is still placed exactly once. Errors, each naming the
    cut: (C1) the number of names is not P v - 1; (C2) a name names no op of the forward; (C3) it names
    only recomputed ops (parameter reads, constants and ops on them); (C4) its op is in the first layer;
    (C5) two names start the same layer.

    Fails when `pp` is below 1, `virtual-stages` below 1 or above 1 with pp < 2, or when the forward has
    fewer than `pp v - 1` layer boundaries (more stages than layers), naming how many there are.

    ```mlir
    // ptrain-opt gpt.mlir --ptrain-split-stages="pp=2"
    func.func @forward_stage0(%tokens: tensor<4x64xi64>) -> tensor<4x64x128xf32> attributes {ptrain.stage = #ptrain.stage<0>}
    func.func @forward_stage1(%h: tensor<4x64x128xf32>) -> tensor<4x64x256xf32> attributes {ptrain.stage = #ptrain.stage<1>}
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::ptrain::PTrainDialect"];
  let options = [
    Option<"pp", "pp", "int64_t", /*default=*/"2", "Number of pipeline stages.">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Model chunks per pipeline stage (interleaved 1F1B): pp * virtual-stages virtual stages.">,
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"", "The forward function.">,
    ListOption<"userCuts", "cuts", "std::string",
               "ONNX node names (or scopes, e.g. /blocks.2) whose layers start stages 1, 2, ...; default: "
               "balanced by cost.">,
  ];
  let statistics = [
    Statistic<"numCutPoints", "cut-points", "Layer boundaries where a single tensor crosses">,
  ];
}

def InsertLinearAEPass : Pass<"ptrain-insert-linear-ae", "::mlir::ModuleOp"> {
  let summary = "Inserts MCBench's trainable linear autoencoder on the pipeline stage boundaries.";
  let description = [{
    Bian et al., "Does compressing activations help model parallel training?", MLSys 2024 (the learned
    compressor): on every boundary c -> c + 1 from `skip-stages` on, the sending stage function
    `@forward_stage<c>` ends with code = x W_e and the receiving `@forward_stage<c+1>` starts with
    x' = code W_d, where W_e (H x `dim`) and W_d (`dim` x H) are new `ptrain.state` parameters with keys
    "ae/<c>-><c+1>/encoder" and "ae/<c>-><c+1>/decoder" (no bias). The pipeline then sends the code
    (B x S x `dim` instead of B x S x H) forward and, as a side effect, its gradient backward. Runs between
    `--ptrain-split-stages` and `--ptrain-build-training-step`, because the weights are trained jointly with
    the model: autodiff differentiates them, the optimizer updates them (with moments, gradient
    accumulation and the dp all-reduce like any parameter). A model file does not hold them, so both
    carry a default, `ptrain.init = {kind = "orthogonal", seed = c}` on the encoder and `{kind =
    "orthogonal_transposed", seed = c}` on the decoder (`ptrain.state`): one seed per boundary, hence W_e
    with orthonormal columns and W_d = W_e^T exactly, on every rank and replica, and
    decode(encode(x)) starts as an orthogonal projection (the identity when `dim` = H); a state source that
    holds the key (a checkpoint, a map of values) still wins.

    Constraints, each an error: (C1) the module has `ptrain.pipeline` stages (run `--ptrain-split-stages`);
    (C2) the training step is not built yet; (C3) `dim` >= 1 and at most the hidden size H of each
    boundary; (C4) `skip-stages` in [0, number of stages - 1); (C5) each boundary tensor is a static float
    tensor of rank >= 2 that the next stage takes; (C6) the module has no autoencoder yet (no `ae/` state).

    ```mlir
    // ptrain-opt gpt.mlir --ptrain-split-stages="pp=2" --ptrain-insert-linear-ae="dim=64"
    ptrain.state @ae_encoder_0 key "ae/0->1/encoder" kind parameter
        {ptrain.init = {kind = "orthogonal", seed = 0 : i64}} : tensor<128x64xf32>
    ptrain.state @ae_decoder_0 key "ae/0->1/decoder" kind parameter
        {ptrain.init = {kind = "orthogonal_transposed", seed = 0 : i64}} : tensor<64x128xf32>
    func.func @forward_stage0(%tokens: tensor<4x64xi64>) -> tensor<4x64x64xf32> {
      ...
      %we = ptrain.state_read @ae_encoder_0 : tensor<128x64xf32>
      %code = ptrain.matmul %h, %we : tensor<4x64x128xf32>, tensor<128x64xf32>
      return %code : tensor<4x64x64xf32>
    }
    func.func @forward_stage1(%code: tensor<4x64x64xf32>) -> tensor<4x64x256xf32> {
      %wd = ptrain.state_read @ae_decoder_0 : tensor<64x128xf32>
      %h = ptrain.matmul %code, %wd : tensor<4x64x64xf32>, tensor<64x128xf32>
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::ptrain::PTrainDialect"];
  let options = [
    Option<"dim", "dim", "int64_t", /*default=*/"0", "Code size per position (the paper uses 50 or 100).">,
    Option<"skipStages", "skip-stages", "int64_t", /*default=*/"0",
           "Leave the boundaries after the first L stages without an autoencoder.">,
  ];
  let statistics = [
    Statistic<"numAutoencoders", "autoencoders", "Stage boundaries given a linear autoencoder">,
  ];
}

def SchedulePass : Pass<"ptrain-schedule", "::mlir::ModuleOp"> {
  let summary = "Writes the per-stage pipeline schedule table (GPipe, 1F1B or interleaved 1F1B).";
  let description = [{
    For a module built by `--ptrain-build-training-step` after `--ptrain-split-stages`, writes the module
    attribute `ptrain.schedule = #ptrain.schedule<kind, micro_batches, table>`: per stage s of P, the ordered steps
    `"F<i>"` (forward of micro-batch i; stage s > 0 receives its input from s - 1, stage s < P - 1 sends its
    output to s + 1), `"B<i>"` (backward of micro-batch i, receiving the gradient from s + 1 and sending the
    input gradient to s - 1), `"FB<i>"` (the last stage's fused forward, loss and backward) and `"O"` (the
    optimizer step, last).

    * `gpipe`: all forwards, then all backwards (Huang et al., "GPipe", NeurIPS 2019).
    * `1f1b`: stage s runs min(P - s - 1, M) warm-up forwards, then alternates one forward and one backward,
      then the cool-down backwards (Narayanan et al., "PipeDream-Flush", ICML 2021; Megatron-LM); its bubble
      is (P - 1) / M of the ideal time. Fewer micro-batches than stages (M < P - 1) is the degenerate case:
      every stage runs all its forwards, then all its backwards, which is correct and deadlock-free.
    * `interleaved` (after `--ptrain-split-stages="pp=P virtual-stages=V"`): Megatron-LM's interleaved 1F1B
      (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
      SC'21, sec. 2.2.2): each stage holds V model chunks (virtual stages k P + s); of its M V
      chunk-micro-batches, (P - s - 1) 2 + (V - 1) P are warm-up forwards (all when M = P), then one forward
      and one backward alternate; forwards go through the chunks in groups of P micro-batches, backwards
      through the chunks in reverse. Steps name the chunk after a dot: `"F<i>.<k>"`, `"B<i>.<k>"`,
      `"FB<i>.<k>"` (chunk 0 without the suffix, so GPipe and 1F1B tables read as before). The last virtual
      stage runs FB at its forward's slot. Needs P >= 2, V >= 2 and M a multiple of P (else an error saying
      so); the bubble is (P - 1) / (V M). The attribute gets `virtual_stages = V`.

    The table is checked by executing all stages with rendezvous semantics (a forward on s > 0 waits for the
    same micro-batch's forward on s - 1, a backward on s < P - 1 for its backward on s + 1): a table that
    would deadlock is an error naming the stuck steps. A module without the training step, or one that
    `--ptrain-critical-path`, `--ptrain-compress` or `--ptrain-lower-to-runtime` already planned on its
    schedule, is an error (a new table would disagree with their records).

    ```mlir
    // ptrain-opt step.mlir --ptrain-schedule="schedule=1f1b"   (pp = 2, 4 micro-batches)
    module attributes {ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 4,
        table = [["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3", "O"], ["FB0", "FB1", "FB2", "FB3", "O"]]>}
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"", "gpipe, 1f1b or interleaved.">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"0",
           "Micro-batches per step; 0 takes ptrain.pipeline's micro_batches.">,
  ];
}

def PrintSchedulePass : Pass<"ptrain-print-schedule", "::mlir::ModuleOp"> {
  let summary = "Prints the schedule table per rank with its unit-cost timing and bubble.";
  let description = [{
    Prints `ptrain.schedule` (after `--ptrain-schedule`) to standard output: one line per pipeline stage
    (rank) with its steps in order (`F<i>`, `B<i>`, `FB<i>`, `O`; `.<k>` names model chunk k > 0 of the
    interleaved schedule), then the table executed with unit costs (a chunk's forward 1, backward 2, the fused
    FB 3; communication and optimizer free; the timing model's plan and simulation, PipelinePlan.h and
    docs/TimingModel.md): the makespan and, per stage, its busy
    and idle time before the makespan and the bubble idle / busy. For 1F1B with equal stages the bubble is
    (P - 1) / M (Narayanan et al., SC'21, sec. 2.2.1); interleaved with v chunks, (P - 1) / (v M) (sec. 2.2.2).
    The module is unchanged. Fails when there is no schedule or a step is malformed.

    ```
    // ptrain-opt step.mlir --ptrain-schedule="schedule=1f1b" --ptrain-print-schedule -o /dev/null
    schedule 1f1b: pp = 2, virtual stages = 1, micro-batches = 4
    stage 0: F0 F1 B0 F2 B1 F3 B2 B3 O
    stage 1: FB0 FB1 FB2 FB3 O
    unit costs (forward 1, backward 2 per model chunk, free communication): makespan 15
    stage 0: busy 12, idle 3, bubble (idle / busy) 0.2500
    stage 1: busy 12, idle 3, bubble (idle / busy) 0.2500
    ```
  }];
}

def VerifyPlanPass : Pass<"ptrain-verify-plan", "::mlir::ModuleOp"> {
  let summary = "Executes every rank of the plan abstractly and rejects deadlocks and mismatched communication.";
  let description = [{
    Runs the lowered steps (`ptrain.entry = "train"` and `"eval"`, one per pipeline stage, after
    `--ptrain-lower-to-runtime`) of every rank of the module's `ptrain.grid` at once in the multi-rank
    executor's abstract mode (include/ptrain/Interpreter/MultiRankExecutor.h): types instead of values, calls
    followed, communication matched with rendezvous semantics (a transfer's wait completes once both sides
    have posted; a collective's once every member of its communicator has). It is DESIGN.md's timing simulator
    at zero cost. The module is rejected, with the conflicting operations named (rank, op, location,
    function and op index), when
    * the ranks deadlock (no rank can progress): every blocked rank's wait and the transfer or collective it
      waits for, e.g. a receive whose send is never posted (a dropped send), or two ranks that both wait for
      a receive before they send;
    * a send and its receive (matched by grid axis, source, destination and `ptrain.tag`) disagree on the
      tensor type (shape or element type);
    * the k-th collectives of the members of one communicator differ (op, types, reduction, dimension or
      root), i.e. the ranks issue collectives in different orders;
    * a rank returns with a transfer or collective it started and never waited on (a send without its
      receive);
    * a peer is outside the grid.
    Two collectives of the same kind and type issued in swapped order on two ranks cannot be told apart by
    types and are accepted (their values would be swapped, not hung). Cost: one walk of every rank's steps,
    O(ranks x ops), no arithmetic.

    Symmetry: an axis other than `pp` (dp, tp) on which every rank runs the same entry function as its
    coordinate-0 replica and that no `ptrain.send_start` / `recv_start` uses is symmetric: without values
    the replicas post the same operations in the same order, so the pass runs one representative rank per
    coordinate of the other axes (coordinate 0 on the symmetric ones), and each collective over a symmetric
    axis among the representatives (MultiRankExecutor::setSymmetricAxes). The dp 8 x tp 8 x pp 16 plan runs
    16 of its 1,024 ranks. An error then says which axes were treated as symmetric; `all-ranks=true` runs
    every rank (the same verdict, slower). Statistics: `ranks` executed, `symmetric-ranks` covered by
    symmetry without running.

    ```mlir
    // ptrain-opt plan.mlir --ptrain-verify-plan
    error: --ptrain-verify-plan: train step: deadlock: no rank can progress
      rank 0 (pp=0) waits at 'ptrain.wait' at plan.mlir:16:10 in @stage0_train_step (op 2) for
        'ptrain.recv_start' (tag 1) at plan.mlir:15:10 in @stage0_train_step (op 1), a receive from rank 1
        (pp=1) that has not posted the matching send
      rank 1 (pp=1) waits at ...
    ```
  }];
  let options = [
    Option<"allRanks", "all-ranks", "bool", /*default=*/"false",
           "Run every rank, also the replicas over symmetric axes (dp, tp).">,
  ];
  let statistics = [
    Statistic<"numRanks", "ranks", "Ranks executed">,
    Statistic<"numSymmetricRanks", "symmetric-ranks", "Ranks covered by symmetry (replicas of an executed rank)">,
  ];
}

def LowerToRuntimePass : Pass<"ptrain-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lowers the pipeline schedule table into per-stage step functions with explicit communication.";
  let description = [{
    For a module with `ptrain.pipeline` and `ptrain.schedule` (after `--ptrain-schedule`), builds per stage s
    of P the function `@stage<s>_train_step(%tokens: tensor<(M*B) x S x i64>) -> tensor<f32>` (attributes
    `ptrain.stage = #ptrain.stage<s>`, `ptrain.entry = "train"`): the stage's table row unrolled, step by step:

    * `F<i>`: `ptrain.slice` of micro-batch i's tokens (rows [i*B, (i+1)*B)) on stage 0, or a
      `ptrain.recv_start` from `@grid axis pp offset -1` and its `ptrain.wait` on s > 0; `func.call
      @forward_stage<s>`; `ptrain.send_start` of the output to offset +1, waited at `B<i>` (the buffer is
      then free) or before the optimizer step;
    * `B<i>`: receive the output gradient from offset +1 and wait; wait on the `F<i>` send; `func.call
      @stage<s>_backward`; send the input gradient to offset -1 (s > 0);
    * `FB<i>` (last stage): receive the input (s > 0); `func.call @stage<s>_forward_backward`; add the loss;
      send the input gradient to offset -1 (s > 0);
    * `O`: wait on every outstanding send, then `func.call @stage<s>_optimizer_step`.
    When the module has the state `@micro_batch_row` (dropout keyed by the batch row,
    --ptrain-build-training-step), each stage call for micro-batch i (F, B, FB, and the eval step's forwards)
    is preceded by a `ptrain.state_write` of 2^32 i B to it, and `O` (and the end of the eval step) by one of 0.

    The loss is the sum over the micro-batches divided by M (times D with a data-parallel axis `dp` of size
    D) on the last stage and 0 elsewhere, all-reduced (sum) over `pp` (over `[dp, pp]` with `dp`) so that every
    rank returns the mean loss of the global batch. With `dp`, every replica runs the same step on its own
    rows of the global batch, passed by the driver. Transfers carry the tag `ptrain.tag` (2i for
    activations, 2i + 1 for gradients of micro-batch i). With `eval` (default), also builds
    `@stage<s>_eval_step` (`ptrain.entry = "eval"`): the forward of every micro-batch in order, the
    next-token loss on the last stage (as the training step), no backward, no state change.

    Explicit labels (`labels = true` in `ptrain.pipeline`) make the steps `(%tokens, %labels)` of one type on
    every rank; the last stage passes micro-batch i's labels to its forward-backward. The weighted loss
    (a `@stage<P-1>_loss_weight` function, ignore-index / class-weights of --ptrain-build-training-step)
    makes the last stage first sum that function over its micro-batches, all-reduce the sum over `dp`, and
    pass it to every forward-backward as the normalizer; the loss is then the sum of the parts (already the
    global weighted mean), and the eval step divides the summed cross-entropy by the same normalizer.

    With `deterministic_dp = true` in `ptrain.pipeline` (--ptrain-build-training-step deterministic-dp), after
    each backward call of micro-batch i the step reads every gradient state the callee wrote (that micro-batch's
    gradient) and adds the micro-batches pairwise as their indices allow ((g0 + g1) + (g2 + g3), whatever the
    schedule's order), writing the sum back after the last; the losses and the normalizer are pairwise trees
    over i too, and the replicas' sums are all-gathered over `dp` and added pairwise before the pp sum
    (include/ptrain/Transforms/DeterministicSum.h).

    With virtual stages (`virtual_stages` = V in `ptrain.pipeline`, steps `F<i>.<k>` of model chunk k), a
    step of chunk k on stage s runs virtual stage c = k P + s; the input of c comes from the rank of c - 1
    (offset -1, or P - 1 from stage 0, wrapping around) and the output goes to the rank of c + 1 (offset +1, or
    -(P - 1) from the last stage); the transfer between c and c + 1 of micro-batch i has tag 2 (i V + c / P)
    (+1 for the gradient), unique per source and destination. The eval step runs micro-batch by micro-batch
    through the stage's chunks.

    With `ptrain.compression` (written by `--ptrain-compress`, docs/Compression.md), a compressed send
    (backward gradient or, in training steps, forward activation) becomes `ptrain.state_read`s of the link's
    keyed states (residual with error feedback, the codec's own state: PowerSGD's warm-start Q, rand-k's
    counter), a `ptrain.compress`, their `ptrain.state_write`s and one send per code (tag t, then t + 2 M,
    ...); the receiver receives the codes and `ptrain.decompress`es them (with its side's codec state). With
    virtual stages each send takes the codec of its virtual stage's entry and the states of its chunk
    boundary ("pp<s>-><t>/c<k>-><k'>/..."). In each optimizer step, `fused_embedding` fuses the tied sync into one all-reduce over [dp, pp], and the
    dp all-reduce buckets whose gradients have a codec (a stage in `dp_all_reduce`, or `dp_codecs`) become
    per-parameter `ptrain.compressed_all_reduce_start`s.

    With fp16's loss scaler (the state `@loss_scaler`; --ptrain-build-training-step precision=fp16) every
    `@stage<s>_optimizer_step` returns the skip flag (tensor<f32>, 1 on a skipped step), and each training step
    reads every codec residual and warm-start Q that it or a function it calls writes at its start, and after the
    optimizer step writes it back as `ptrain.select` of the flag > 0 between the value at the start and the
    step's: a skipped step leaves error feedback's states bit-unchanged (docs/MixedPrecision.md, "Error feedback
    under fp16").

    With `ptrain.precision = #ptrain.precision<bf16>` (or `fp16`; --ptrain-build-training-step precision=bf16 or
    fp16) the uncompressed pipeline messages travel in 16 bits (a `ptrain.cast` before the send, a 16-bit receive
    and a cast back), and so does every uncompressed fp32 `ptrain.tp_all_reduce` of the module but the
    vocabulary-parallel loss statistics: `ptrain.cast` to 16 bits, `ptrain.tp_all_reduce {accumulate = f32}` (the
    16-bit values summed in fp32 in group-rank order, rounded once) and a cast back (docs/MixedPrecision.md,
    "16-bit TP collectives"): half the bytes of each. Each 16-bit copy of a parameter (the casts
    `--ptrain-build-training-step` put in the stage functions, after any transposes of the weight) is then cast
    once per step: the casts move out of the stage functions, which take the copies as trailing arguments, into
    the start of every training and eval step, one per distinct value (hoistParameterCasts,
    include/ptrain/Plan/ParameterCasts.h; docs/MixedPrecision.md, "The once-per-step parameter cast"). The
    losses are bit-equal to casting per call. A received 16-bit activation read by several calls (F<i>'s
    input, stashed until B<i>) stays 16-bit between them and is cast back right before each call
    (docs/MixedPrecision.md, "Slice 1: the pipeline stash in 16 bits").

    Fails when the module has no `ptrain.pipeline` or no `ptrain.schedule` (run `--ptrain-schedule`), no
    `ptrain.grid` with an axis `pp`, a stage function is missing, a table step is malformed, or
    `ptrain.compression` is malformed or used with virtual stages.

    ```mlir
    // ptrain-opt step.mlir --ptrain-lower-to-runtime   (pp = 2, 1F1B; stage 1, micro-batch 0)
    func.func @stage1_train_step(%tokens: tensor<8x64xi64>) -> tensor<f32>
        attributes {ptrain.entry = "train", ptrain.stage = #ptrain.stage<1>} {
      %r = ptrain.recv_start from @grid axis pp offset -1 {ptrain.tag = 0 : i64} : !ptrain.request<tensor<2x64x128xf32>>
      %h = ptrain.wait %r : !ptrain.request<tensor<2x64x128xf32>>
      %t = ptrain.slice %tokens {offsets = array<i64: 0, 0>, sizes = array<i64: 2, 64>} : tensor<8x64xi64> -> tensor<2x64xi64>
      %loss, %dh = func.call @stage1_forward_backward(%h, %t) : (...) -> (tensor<f32>, tensor<2x64x128xf32>)
      %s = ptrain.send_start %dh to @grid axis pp offset -1 {ptrain.tag = 1 : i64} : tensor<2x64x128xf32>
      ...
      ptrain.wait %s : !ptrain.request
      func.call @stage1_optimizer_step() : () -> ()
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::ptrain::PTrainDialect"];
  let options = [
    Option<"eval", "eval", "bool", /*default=*/"true", "Also build @stage<s>_eval_step (forward and loss).">,
    Option<"parameterCasts", "parameter-casts", "std::string", /*default=*/"\"once\"",
           "once: under precision=bf16 or fp16 cast each parameter to 16 bits once per step, at the start of "
           "the training and eval steps (Megatron-LM's 16-bit model copy); per-call: in every stage call, no "
           "copy held across the step. The losses are the same bit for bit.">,
  ];
  let statistics = [
    Statistic<"numTransfers", "transfers", "Point-to-point transfers started">,
    Statistic<"numHalfTensorParallelSums", "half-tp-all-reduces",
              "Tensor-parallel all-reduces moved to 16-bit values with an fp32 sum">,
    Statistic<"numHalfStashes", "half-stashes",
              "Received 16-bit activations kept in 16 bits until their last reader (cast back per call)">,
    Statistic<"numParameterCasts", "parameter-casts",
              "16-bit parameter copies cast once per training or eval step (one per value and step function)">,
  ];
}

def MemoryPlanPass : Pass<"ptrain-memory-plan", "::mlir::ModuleOp"> {
  let summary = "Plans each pipeline rank's memory over its lowered schedule and attaches the plan.";
  let description = [{
    For a module after `--ptrain-lower-to-runtime`, plans the memory of every rank (one per
    `@stage<s>_train_step`, whose op order is the stage's row of the schedule table; lib/Analysis/MemoryPlan.h):

    * states: every `ptrain.state` the step, its eval step and the functions they call read or write, by kind
      (parameters, gradients, optimizer moments, codec residuals / warm starts / seeds, others);
    * the stash: the arena of the train step itself. A value is live from its defining op to its last use
      (extended over reshapes and waits, which alias their root; a send holds its input until its wait, a
      collective its input until its wait). A micro-batch's stage input and its forward output (whose send
      is waited at `B<i>`) thus live from `F<i>` to `B<i>`; `max_stashed` counts the micro-batches live at
      once (1F1B: at most P - s on stage s; GPipe: M);
    * temporaries: the largest arena of a function the step calls (its name in `temporaries_function`);
    * allocated: everything the generated CPU step allocates on the rank at init (states, the arenas of its
      stage's functions, constants read from the constant file), which the runtime's allocation counter
      reports (`ptrain_allocated_bytes`).

    Every function's buffers come from the storage analysis of the code generators
    (`include/ptrain/Analysis/BufferLiveness.h`, the CPU target's rules, kernel scratch included), so the
    planned arenas are the emitted ones.

    Offsets come from greedy by size (Pisarchyk and Lee 2020, arXiv:2001.03288, as in TensorFlow Lite): the
    buffers by decreasing size, each in the smallest fitting gap among the placed buffers live at the same
    time, 64-byte aligned. The peak is states + stash + temporaries. Writes `ptrain.memory_plan` (all i64
    bytes) on every train step and a remark per rank; with `annotate`, `ptrain.arena_offsets` (one entry per
    result, -1 for a value without an arena buffer) on the step's ops; with `json=FILE`, the plan as JSON
    (`ranks`: one object per stage with the same fields). Fails when the module has no lowered train step.

    ```mlir
    // ptrain-opt step.mlir --ptrain-lower-to-runtime --ptrain-memory-plan
    // remark: memory plan of stage 0: peak 7.87 MiB = states 2.10 MiB + stash 256.50 KiB (2 micro-batches
    //         at once) + temporaries 5.51 MiB (@stage0_backward)
    func.func @stage0_train_step(%tokens: tensor<16x64xi64>) -> tensor<f32> attributes {
        ptrain.entry = "train", ptrain.stage = #ptrain.stage<0>,
        ptrain.memory_plan = {codec_bytes = 0 : i64, eval_bytes = 1024 : i64, max_stashed = 2 : i64,
                              peak_bytes = 8252928 : i64, stash_bytes = 262656 : i64, ...}} {
    ```
  }];
  let options = [
    Option<"annotate", "annotate", "bool", /*default=*/"false",
           "Write ptrain.arena_offsets on the train steps' ops.">,
    Option<"json", "json", "std::string", /*default=*/"\"\"", "Write the plan as JSON to this file.">,
  ];
}

def CriticalPathPass : Pass<"ptrain-critical-path", "::mlir::ModuleOp"> {
  let summary = "Times the pipeline schedule on a cluster and writes each step's slack and critical flag.";
  let description = [{
    Runs the timing analysis (docs/TimingModel.md) on a module after `--ptrain-schedule`: builds the timed
    plan of one iteration from the schedule table, the stage functions' costs (CostOpInterface) and the
    cluster description, simulates it (per rank a compute and a communication stream; transfers start when
    both sides posted and the link direction, or the NIC of a node several stages share, is free;
    collectives when all members posted; interleaved 1F1B with its virtual stages) and computes every
    step's slack (seconds its duration can grow before the iteration time grows) and the critical path.

    Writes, next to `table` in `ptrain.schedule`, arrays of the table's shape: `slack` (f64 seconds) and
    `critical` (bool) of each step; `send_slack` and `send_critical` of the transfer the step sends (the
    activation of `F<i>`, the gradient of `B<i>`/`FB<i>`; -1.0 and false when it sends none); and per stage
    `dp_all_reduce_slack` / `dp_all_reduce_critical` (when dp > 1), plus `iteration_time` (f64 seconds) and
    `bubble` ((pipeline time - ideal time) / ideal time). The cluster is read from `cluster=FILE` and
    attached to the module as `ptrain.cluster` (the file's JSON as a dictionary), or taken from that
    attribute when no file is given, so a module carries its machine. Warns when a stage's modelled peak
    memory exceeds the device capacity.

    Fails, naming the field, on a bad cluster file (missing field, negative bandwidth, fewer GPUs than the
    grid needs), and on a module without `ptrain.pipeline`, `ptrain.schedule` or a grid with axis `pp`.

    ```mlir
    // ptrain-opt step.mlir --ptrain-critical-path="cluster=clusters/h200-node.json"   (pp = 2, 2 micro-batches)
    // (the bundled GPT; slack in seconds)
    module attributes {ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2,
        table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]],
        slack = [[0.0, 3.80E-5, 2.74E-6, 0.0, 0.0], [0.0, 0.0, 9.26E-8]],
        critical = [[true, false, false, true, true], [true, true, false]],
        send_slack = [[0.0, 0.0, -1.0, -1.0, -1.0], [2.74E-6, 0.0, -1.0]],
        send_critical = [[true, true, false, false, false], [false, true, false]],
        iteration_time = 1.8379E-4 : f64, bubble = 0.3789 : f64>}
    ```
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "Cluster description (JSON, docs/TimingModel.md); empty: the module's ptrain.cluster.">,
    Option<"parameterCasts", "parameter-casts", "std::string", /*default=*/"\"once\"",
           "The placement of a bf16 or fp16 pipeline's parameter casts that --ptrain-lower-to-runtime will be "
           "given (its option of the same name), which the timing model prices: once (each distinct 16-bit copy "
           "once per step, with O) or per-call (in every F/B call). --ptrain-pipeline passes its own.">,
  ];
}

def CompressPass : Pass<"ptrain-compress", "::mlir::ModuleOp"> {
  let summary = "Decides which pipeline and data-parallel transfers to compress, with which codec, and records it.";
  let description = [{
    Runs after `--ptrain-critical-path` and before `--ptrain-lower-to-runtime` on a pipeline module (1F1B,
    GPipe or interleaved 1F1B with virtual stages: docs/Compression.md, "Interleaved schedules"), and writes its decisions as the module attribute `ptrain.compression` (docs/Compression.md). The
    policies:

    * `optimus-cc` (Song et al., "Optimus-CC", ASPLOS 2023), each technique switchable:
      * CB (section 4.1, `cb`): the backward sends to compress with PowerSGD (`cb-rank`, default 16,
        warm-started Q; matrix view of the activation gradient B x S x H: rows = B S, cols = H).
        `cb-sends=cooldown` (default) picks the 1F1B cool-down of the receiver: on the link s -> s-1 the last
        min(P - s, M) micro-batches (interleaved: the backward steps of each rank's row from its last forward
        on, each on its chunk's boundary); `cb-sends=critical` the sends `--ptrain-critical-path` marks critical
        (`send_critical`); `cb-sends=all` every backward send.
      * LEP (section 4.2, `lep`, default on): one error-feedback residual per link s -> s-1, carried across
        micro-batches and iterations; `lep=false` is the ablation.
      * FE (section 4.3, `fe`, default on): with dp > 1, the tied-embedding gradient leaves the dp
        all-reduce and is reduced once over dp x pp (divided by dp) instead of dp and then pp.
      * SC (section 4.4, `sc`, default on): the dp gradient all-reduce of the stages whose all-reduce
        `--ptrain-critical-path` marks critical (`dp_all_reduce_critical`; `sc-all`: every stage) is
        compressed per parameter with PowerSGD of rank `sc-rank` (128) clamped to min(n, m), with
        per-parameter error feedback (`sc-error-feedback`); (n + m) r >= n m takes the exact path.
    * `mcbench` (Bian et al., "Does compressing activations help model parallel training?", MLSys 2024):
      every forward send (activation) with `fwd-codec` and every backward send (activation gradient) with
      `bwd-codec`, chosen separately, except on the boundaries of the first `skip-stages` stages (the paper
      leaves the early layers uncompressed); `error-feedback` adds one residual per link and direction.
      With tensor parallelism (its TP site), `tp-fwd-codec` compresses the forward all-reduce after each
      row-parallel linear (attention output and MLP down projection, g) and `tp-bwd-codec` the backward
      all-reduce of f's gradient (before Q|K|V and the MLP's up projection), except in the first
      `tp-skip-layers` layers; summable codes (rand-k with its shared seed, fp16/bf16 summed in fp32,
      PowerSGD's factors) are reduced in compressed form, the others (top-k, quantization) all-gathered,
      decoded and summed. Forward TP codecs must be stateless (the backward recomputes the forward).
      Backward TP sites carry error feedback (`tp-error-feedback`, default on): one residual per site and
      rank ("tp/layer<l>/<role>/residual"), carried across micro-batches and iterations.
    * `none`: nothing compressed (the record says so; with `overrides` a fully manual plan).
    * `auto`: a greedy search by re-simulation on the module's `ptrain.cluster`. Candidates are the edges
      the timing model prices: every backward send (stage, micro-batch) and every stage's dp gradient
      all-reduce, each with PowerSGD at the ranks `auto-ranks` (default 4, 8, 16, 32, 64, 128, clamped to
      min(n, m)); the backward sends also with each codec of `auto-backward-codecs`, with and without error
      feedback; every forward send with each codec of `auto-forward-codecs` (without error feedback); every
      stage's dp all-reduce also with each codec of `auto-dp-codecs` on each of its gradients (the record's
      `dp_codecs`, with the dp error feedback `sc-error-feedback`); the
      defaults of the four codec options are the candidate table of AutoCandidates.cpp (docs/Compression.md,
      "Candidates, seeds and the quality model"); and fused embedding sync (FE) where
      dp > 1 and a tied parameter is synced; with tensor parallelism, every TP site (the forward all-reduce
      after a row-parallel linear and the backward all-reduce of f's gradient, per layer) with each codec of
      `auto-tp-codecs` (default: the table; forward sites take the stateless ones only; backward sites with error
      feedback unless `tp-error-feedback=false`). It starts from the fastest of its seeds: the uncompressed plan
      the Optimus-CC rule with CB on the cool-down, the critical and every backward send (SC on the
      critical stages, FE where it applies), and mcbench (8-bit forward, top-k 10% backward); seeds and moves
      whose predicted quality cost (QualityModel.h) exceeds `auto-quality-budget` (default 0.02) are not taken. Then it
      repeatedly applies the move that lowers the modelled iteration time most (re-simulating the whole
      plan per move): one edge, or a group (every send of a link, of a micro-batch, of the pipeline; every
      stage's dp all-reduce; a TP site, a role's sites of every layer, every forward or backward TP site,
      every TP site), set to a rank or codec or back to uncompressed, or FE on or off; the compressed
      sends of a link share one rank or codec (the codec state is keyed by the link) and the dp all-reduces
      compressed with PowerSGD one `sc_rank` (the other dp codecs are per gradient: each stage its own).
      Ties go to the dp all-reduces, then single sends, then groups, the larger rank first. It stops when
      no move saves more than `auto-min-gain` (a fraction of the uncompressed iteration, default 0.001) or
      after `auto-max-picks` moves, so it is never modelled slower than its best seed. A codec whose error
      proxy exceeds `auto-error-budget` (default 1: no limit) is never a candidate: sqrt(1 - r / min(n, m))
      for PowerSGD rank r on the n x m view (worst case of a flat spectrum), 1 / (2^b - 1) for b-bit
      quantization (uniform data), 2^-11 / 2^-8 for fp16 / bf16, sqrt(1 - k / n) for top-k / rand-k. Remarks list the seeds' times,
      each move (edges, codec, saving, iteration time after it) and compare auto with optimus-cc.

    A codec spec (`fwd-codec`, `bwd-codec`, and the override file) is `none`, `fp16`, `bf16`,
    `powersgd:rank=R[,warm-start=false]`, `topk:k=K` or `topk:ratio=X`, `randk:k=K|ratio=X[,seed=S]`,
    `quant:bits=B[,granularity=tensor|channel|block][,block-size=N][,symmetric=false]`, or a codec attribute.
    `overrides=FILE` (JSON, after the policy, any policy) sets the codec of edges named by stage and
    direction, link ("1->0"), schedule step (stage 1, "FB3") or parameter (its dp all-reduce).

    Under fp16's loss scaler (`ptrain.precision` fp16) the gradients are inf/NaN on an overflowing step, which
    the scaler skips: a codec whose encoder refuses a non-finite element (`quant`, `tahquant`) on a
    gradient-carrying site (a backward send, a dp codec or ZeRO-1 bucket, a backward TP site), from any policy
    or override, is an error naming the site and the codec, and auto does not try it there; forward sites are
    unaffected (docs/MixedPrecision.md, "Codecs on loss-scaled gradients").

    The record: `policy`; `backward_sends` and `forward_sends` (per stage s, per micro-batch i, with V
    virtual stages per model chunk k and micro-batch i at k M + i: `false`, `true` for the direction's codec `backward_codec` / `forward_codec`, or a codec attribute of an override);
    `backward_error_feedback`, `forward_error_feedback`; `dp_all_reduce` (per stage), `sc_rank`,
    `sc_error_feedback`, `dp_codecs` (gradient key -> codec or false, from overrides); `fused_embedding`;
    `skip_stages` (mcbench); `tp_all_reduces` (mcbench's and auto's TP sites: one `#ptrain.tp_site<layer, role,
    direction, codec[, error_feedback]>` per compressed site, rewritten into `ptrain.compressed_all_reduce_start` over [tp] with states
    "tp/layer<l>/<role>/..."). `--ptrain-lower-to-runtime` materializes it: `ptrain.compress` before the send
    (codes with tags t, t + 2 M, ...), `ptrain.decompress` after the receive, keyed states per link
    ("pp<s>-><t>/residual", "pp<s>-><t>/warm_start_q", "pp<s>-><t>/counter"; with virtual stages per chunk
    boundary, "pp<s>-><t>/c<k>-><k'>/residual", ...), per-parameter
    `ptrain.compressed_all_reduce_start`s with states "sc/<gradient key>/...", and the fused sync.

    Fails on: an unknown policy, no `ptrain.pipeline`/`ptrain.schedule` (run `--ptrain-schedule`), a
    schedule without critical-path information (run `--ptrain-critical-path`), a module compressed twice, options of another policy (e.g. `fwd-codec` with `policy=optimus-cc`), `cb-rank` or
    `sc-rank` below 1, an unknown `cb-sends`, a malformed codec spec or an
    invalid codec (rank <= 0, bits not in {2, 4, 8}), a codec that cannot serve its edge (PowerSGD rank above
    min(n, m), k above the element count, the linear autoencoder), a negative `skip-stages` or one that skips every pipeline boundary, and a bad
    override file (naming an edge, step or parameter that does not exist).

    ```mlir
    // ptrain-opt step.mlir --ptrain-critical-path="cluster=clusters/h200-node.json" --ptrain-compress="policy=optimus-cc"
    // (pp = 2, 4 micro-batches, dp = 1)
    module attributes {ptrain.compression = {backward_codec = #ptrain.powersgd<rank = 16>,
        backward_error_feedback = true, backward_sends = [[false, false, false, false], [false, false, false, true]],
        dp_all_reduce = [false, false], forward_error_feedback = false,
        forward_sends = [[false, false, false, false], [false, false, false, false]], fused_embedding = false,
        policy = "optimus-cc", sc_error_feedback = true, sc_rank = 128 : i64}, ...}
    // --ptrain-compress="policy=mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1"
    module attributes {ptrain.compression = {backward_codec = #ptrain.topk<ratio = 1.000000e-01>, ...,
        forward_codec = #ptrain.quant<bits = 8>, forward_sends = [[true, true, true, true], [false, ...]], ...}}
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"optimus-cc\"",
           "Compression policy: optimus-cc, mcbench, none or auto.">,
    Option<"cb", "cb", "bool", /*default=*/"true", "optimus-cc: compress backward sends (CB).">,
    Option<"cbSends", "cb-sends", "std::string", /*default=*/"\"cooldown\"",
           "optimus-cc: which backward sends CB compresses: cooldown, critical or all.">,
    Option<"cbRank", "cb-rank", "int64_t", /*default=*/"16", "optimus-cc: PowerSGD rank of CB.">,
    Option<"lep", "lep", "bool", /*default=*/"true",
           "optimus-cc: lazy error propagation, a residual per link (LEP).">,
    Option<"fe", "fe", "bool", /*default=*/"true",
           "optimus-cc: fused embedding synchronization (FE; with dp > 1 and a tied parameter).">,
    Option<"sc", "sc", "bool", /*default=*/"true", "optimus-cc: compress the critical dp gradient all-reduces (SC).">,
    Option<"scAll", "sc-all", "bool", /*default=*/"false", "optimus-cc: SC on every stage, critical or not.">,
    Option<"scRank", "sc-rank", "int64_t", /*default=*/"128",
           "optimus-cc: PowerSGD rank of SC (clamped per parameter).">,
    Option<"scErrorFeedback", "sc-error-feedback", "bool", /*default=*/"true",
           "Per-parameter error feedback of the dp compression (SC and parameter overrides).">,
    Option<"fwdCodec", "fwd-codec", "std::string", /*default=*/"\"none\"",
           "mcbench: the codec spec of forward sends (activations).">,
    Option<"bwdCodec", "bwd-codec", "std::string", /*default=*/"\"none\"",
           "mcbench: the codec spec of backward sends (activation gradients).">,
    Option<"dpCodec", "dp-codec", "std::string", /*default=*/"\"none\"",
           "mcbench: the codec spec of every data-parallel gradient reduction (dp > 1): each gradient's "
           "all-reduce, or under ZeRO-1 its bucket's compressed reduce-scatter (quantization) or its own compressed "
           "all-reduce (PowerSGD), with the dp error feedback "
           "`sc-error-feedback` (the record's `dp_codecs`).">,
    Option<"skipStages", "skip-stages", "int64_t", /*default=*/"0",
           "mcbench: leave the edges of the first L stages' outputs uncompressed.">,
    Option<"errorFeedback", "error-feedback", "bool", /*default=*/"false",
           "mcbench: error feedback with one residual per link and direction.">,
    Option<"tpFwdCodec", "tp-fwd-codec", "std::string", /*default=*/"\"none\"",
           "mcbench: the codec spec of the forward tp all-reduces (after row-parallel linears).">,
    Option<"tpBwdCodec", "tp-bwd-codec", "std::string", /*default=*/"\"none\"",
           "mcbench: the codec spec of the backward tp all-reduces (f's gradient).">,
    Option<"tpSkipLayers", "tp-skip-layers", "int64_t", /*default=*/"0",
           "mcbench: leave the tp all-reduces of the first L layers uncompressed.">,
    Option<"tpErrorFeedback", "tp-error-feedback", "bool", /*default=*/"true",
           "mcbench, auto: error feedback on the backward tp all-reduces (a residual per site and rank).">,
    Option<"overrides", "overrides", "std::string", /*default=*/"\"\"",
           "JSON file of per-edge codec overrides (stage, link, step or parameter).">,
    ListOption<"autoRanks", "auto-ranks", "int64_t",
               "auto: PowerSGD ranks to try (default 4,8,16,32,64,128; clamped to min(n, m)).">,
    Option<"autoMinGain", "auto-min-gain", "double", /*default=*/"0.001",
           "auto: stop when no change saves more than this fraction of the uncompressed iteration time.">,
    Option<"autoErrorBudget", "auto-error-budget", "double", /*default=*/"1.0",
           "auto: the largest error proxy sqrt(1 - r / min(n, m)) a codec may have, in (0, 1].">,
    Option<"autoMaxPicks", "auto-max-picks", "int64_t", /*default=*/"256", "auto: at most this many moves.">,
    Option<"autoBackwardCodecs", "auto-backward-codecs", "std::string", /*default=*/"\"default\"",
           "auto: codecs besides PowerSGD to try on the backward sends, ';'-separated specs (e.g. "
           "'topk:ratio=0.1;quant:bits=8'); 'default': the candidate table (AutoCandidates.cpp); 'none': "
           "PowerSGD only.">,
    Option<"autoForwardCodecs", "auto-forward-codecs", "std::string", /*default=*/"\"default\"",
           "auto: codecs to try on the forward sends, ';'-separated specs (e.g. 'fp16;quant:bits=8'); "
           "'default': the candidate table; 'none': forward sends are not candidates.">,
    Option<"autoTpCodecs", "auto-tp-codecs", "std::string", /*default=*/"\"default\"",
           "auto: codecs to try on the tp all-reduce sites, ';'-separated specs (e.g. 'bf16;quant:bits=8'); "
           "forward sites take the stateless ones; 'default': the candidate table where the module has tp "
           "sites; 'none': tp sites are not candidates.">,
    Option<"autoDpCodecs", "auto-dp-codecs", "std::string", /*default=*/"\"default\"",
           "auto: codecs besides PowerSGD to try on the dp gradient all-reduces (every gradient of a stage), "
           "';'-separated specs (e.g. 'bf16;topk:ratio=0.1'); 'default': the candidate table where dp > 1 "
           "(PowerSGD only under ZeRO-1, where other specs are an error); 'none': PowerSGD only.">,
    Option<"autoQualityBudget", "auto-quality-budget", "double", /*default=*/"0.02",
           "auto: the largest predicted quality cost of the plan (QualityModel.h), a fraction of the "
           "uncompressed validation loss (default 0.02 = 2%); 'inf' for no limit.">,
    Option<"autoCodecErrors", "auto-codec-errors", "std::string", /*default=*/"\"\"",
           "auto: measured relative errors of the send codecs (the file of ptrain-interpret --multi-rank "
           "--codec-errors on this model's uncompressed plan, docs/Compression.md 'Measured codec errors'); "
           "where it has a figure for a boundary, codec and error-feedback mode, the quality model takes it "
           "instead of the codec's error proxy, and the report says which source each figure came from.">,
    Option<"autoReport", "auto-report", "std::string", /*default=*/"\"\"",
           "auto: write the search's explanation as JSON to this file: each seed's modelled iteration seconds "
           "and predicted quality cost, each move's edge, codec, modelled saving (seconds) and quality cost, the "
           "TP sites' reasons, the final plan's time and quality cost against the budget (docs/Compression.md "
           "'auto-report').">,
  ];
  let statistics = [
    Statistic<"numCompressedSends", "compressed-sends", "Pipeline sends marked for compression">,
    Statistic<"numCompressedStages", "compressed-dp-stages", "Stages whose dp all-reduce is compressed">,
    Statistic<"numOverridden", "overridden-edges", "Edges set by the override file">,
    Statistic<"numAutoPicks", "auto-picks", "Changes the auto search applied">,
    Statistic<"numCompressedTPSites", "compressed-tp-sites", "Tensor-parallel all-reduce sites (layer, role) compressed">,
  ];
}

def ExpandCodecsPass : Pass<"ptrain-expand-codecs", "::mlir::ModuleOp"> {
  let summary = "Expands PowerSGD, top-k and quantization all-reduces into their phases and plain collectives.";
  let description = [{
    Runs after `--ptrain-lower-to-runtime` (or on any module with codec collectives). Each
    `ptrain.compressed_all_reduce_start` with `#ptrain.powersgd` and its one `ptrain.wait` become
    data-parallel PowerSGD as two communication rounds (Vogels et al., "PowerSGD", NeurIPS 2019,
    Algorithm 1 with Algorithm 2's error feedback; Optimus-CC section 4.4):

    1. at the start: `ptrain.powersgd_phase_p` (M = g + e, P = M Q0) and an all-reduce (sum) of P;
    2. at the wait: wait for P, `ptrain.powersgd_phase_q` (P^ = orthogonalize(sum P), Q = M^T P^), an
       all-reduce (sum) of Q, wait, and `ptrain.powersgd_finish`: the result alpha P^ Q^T (alpha = 1 for a
       sum, 1 / N for an average over the N members), the residual M - P^ Q^T / N (against the averaged
       approximation) and the warm-start Q = Q / N.

    On the exact path ((n + m) r >= n m: 1-D tensors, small matrices) there is no power step: both codes of
    phase P (which carry M) are all-reduced and finished, the residual becomes zero and the warm start is
    kept. The codec state the start returned (residual, warm-start Q) is produced by the finish instead; the
    `ptrain.state_write`s of it move after the finish.

    The gathered codecs (top-k, quantization: their codes do not add up) become what the runtime runs: at the
    start `ptrain.compress` (each member's own error feedback; the new residual is known there) and one
    `ptrain.all_gather_start` per code along its first dimension; at the wait, for each member i in group
    order, `ptrain.slice`s of its codes, `ptrain.decompress`, and a `ptrain.binary add` onto the sum (an
    average is then multiplied by 1 / N). Rand-k and casts (reduced in compressed form by one collective) and
    the pipeline's `ptrain.compress` / `ptrain.decompress` (already one phase each) are left as they are.

    The phases run the runtime's own kernels (ptrain_powersgd_phase_p/q/finish_f32, the codecs' encode and
    decode), so the expanded plan computes what the unexpanded one does: bit for bit on the in-process
    executor at dp = 2 (its plain all-reduce sums in double and rounds once, which for two members is the
    fp32 sum the compressed all-reduce uses; the gathered sums are fp32 adds in member order either way);
    with more members the PowerSGD sums can differ in the last bit.

    Errors: a start whose request is not used by exactly one `ptrain.wait` in its block, a use of its new
    (PowerSGD) state before that wait other than a `ptrain.state_write`, a read or write of such a state
    between the start and the wait (the gathered codecs' new residual is known at the start).

    ```mlir
    // before
    %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q0) on @grid axes [dp] reduction = avg
        {codec = #ptrain.powersgd<rank = 1>, error_feedback}
        : tensor<4x4xf32> state(tensor<4x4xf32>, tensor<4x1xf32>) -> state(tensor<4x4xf32>, tensor<4x1xf32>)
    %out = ptrain.wait %r : !ptrain.request<tensor<4x4xf32>>
    // after
    %m, %p, %q = ptrain.powersgd_phase_p %g residual(%e) warm_start_q(%q0) {codec = #ptrain.powersgd<rank = 1>}
        : tensor<4x4xf32> residual(tensor<4x4xf32>) warm_start_q(tensor<4x1xf32>)
        -> tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>
    %rp = ptrain.all_reduce_start %p on @grid axes [dp] reduction = sum : tensor<4x1xf32>
    %ps = ptrain.wait %rp : !ptrain.request<tensor<4x1xf32>>
    %ph, %qi = ptrain.powersgd_phase_q %m, %ps {codec = #ptrain.powersgd<rank = 1>}
        : tensor<4x4xf32>, tensor<4x1xf32> -> tensor<4x1xf32>, tensor<4x1xf32>
    %rq = ptrain.all_reduce_start %qi on @grid axes [dp] reduction = sum : tensor<4x1xf32>
    %qs = ptrain.wait %rq : !ptrain.request<tensor<4x1xf32>>
    %out, %e1, %q1 = ptrain.powersgd_finish %ph, %qs, %m {alpha = 5.000000e-01 : f32, beta = 5.000000e-01 : f32,
        codec = #ptrain.powersgd<rank = 1>}
        : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x1xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::ptrain::PTrainDialect"];
  let statistics = [
    Statistic<"numExpanded", "expanded", "PowerSGD all-reduces expanded into phases">,
    Statistic<"numExact", "exact-path", "Of those, on the exact path (codes carry M)">,
    Statistic<"numGathered", "gathered", "Top-k and quantization all-reduces expanded into all-gathers">,
    Statistic<"numKept", "kept", "Compressed all-reduces of rand-k and casts, left as they are">,
  ];
}

def ReportPass : Pass<"ptrain-report", "::mlir::ModuleOp"> {
  let summary = "Prints the plan report and writes it as JSON and as a Perfetto (Chrome trace) timeline.";
  let description = [{
    Runs the timing analysis of `--ptrain-critical-path` (docs/TimingModel.md) and prints, on stderr, a
    readable report: the configuration, the modelled iteration time and bubble, per stage the time split
    into compute, exposed communication and bubble (idle), the bytes one GPU of each stage sends per
    iteration on intra- and inter-node links, the critical path, the critical backward sends and dp
    all-reduces, and memory per device against the capacity. On a module with `ptrain.compression` (after
    `--ptrain-compress`) the plan is timed with its codecs (codec kernels on the compute streams, the codes
    on the links) and without them, and the report adds a compression section: both iteration times and
    the modelled speedup, the bytes before and after compression per link, the codec kernel time per stage
    and every compressed edge (codec, bytes, communication time before and after, encode and decode time,
    slack). With `json=FILE` writes the report as JSON (the section as `compression`);
    with `trace=FILE` a Chrome trace event file (open it in ui.perfetto.dev): one process per stage rank,
    threads for its compute stream, communication stream and sends, each event with its slack. The IR is not
    changed (besides `ptrain.cluster` when `cluster=` is given).

    ```
    // ptrain-opt step.mlir --ptrain-compress --ptrain-report="cluster=clusters/optimus-cc-a100.json json=r.json"
    === ptrain plan report ===
    grid dp=4 tp=8 pp=4, schedule 1f1b, 16 micro-batches
    iteration time ... ms, bubble ...
    ...
    compression (policy optimus-cc): iteration time 4437.701 ms uncompressed, 4270.408 ms compressed, modelled speedup 1.0392x
    ...
      send B15 1->0: #ptrain.powersgd<rank = 16>, 60.00 MiB -> 632.00 KiB, comm 20.143 -> 0.227 ms, encode 0.570 ms, ...
    ```
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "Cluster description (JSON); empty: the module's ptrain.cluster.">,
    Option<"json", "json", "std::string", /*default=*/"\"\"", "Write the report as JSON to this file.">,
    Option<"trace", "trace", "std::string", /*default=*/"\"\"", "Write the Chrome trace (Perfetto) to this file.">,
    Option<"parameterCasts", "parameter-casts", "std::string", /*default=*/"\"once\"",
           "The placement of a bf16 or fp16 pipeline's parameter casts that --ptrain-lower-to-runtime will be "
           "given (its option of the same name), which the timing model prices: once (each distinct 16-bit copy "
           "once per step, with O) or per-call (in every F/B call). --ptrain-pipeline passes its own.">,
  ];
}

def OutlineElementwisePass : Pass<"ptrain-outline-elementwise", "::mlir::ModuleOp"> {
  let summary = "Outlines the elementwise chains of a lowered step into kernels written in linalg.";
  let description = [{
    Issue 26 ("Kernels generated by the compiler"), the first slice: finds the chains of elementwise ops
    in every function of a lowered step (after `--ptrain-lower-to-runtime`) and outlines each distinct chain
    into one kernel function of upstream MLIR, a `linalg.generic` on memrefs with an `arith` body, in the
    nested module `@ptrain_kernels`. The CPU code generator (`ptrain-translate --emit-cpp
    --emit-cpp-kernels=FILE`) lowers that module through upstream MLIR and LLVM to an object file linked
    into libstep.so and calls the kernel once per chain instead of the runtime's `ptrain_binary_f32` once
    per op (docs/GeneratedKernels.md).

    A chain (include/ptrain/Analysis/ElementwiseChains.h) is a run of consecutive f32 elementwise ops
    (`ptrain.binary` of kind add, sub, mul or div; the exact, erf-form `ptrain.gelu` and `ptrain.gelu_grad`,
    whose kernel body is the runtime's fp64 definition op for op, include/ptrain/Transforms/GeluArith.h)
    with one result shape, each after the first reading a result of an earlier one: the producer-consumer grouping of MLIR's linalg elementwise fusion
    (`mlir/Dialect/Linalg/Transforms/ElementwiseOpFusion.cpp`, `linalg-fuse-elementwise-ops`), done on the
    ptrain ops so that the memory plan and every analysis of the step keep their meaning. A bias add the
    GEMM already adds (GemmFusion.h) breaks a chain; an op nothing reads (DeadOps.h: nothing is emitted
    for it) is passed over, neither in a chain nor breaking it. The kernel's
    parameters are the chain's inputs (values from outside it, broadcast numpy-style through the indexing
    maps), then its outputs (results read outside the chain, the last op's always); chains with the same
    computation share one kernel. A chain may end in an f32 `ptrain.softmax` over the last axis (the
    attention scores' scale, mask and softmax): its kernel is then a loop over the rows, each row the
    runtime's softmax step by step (max, fp64 exp, fp64 sum in column order, the fp32 reciprocal;
    include/ptrain/Transforms/SoftmaxArith.h) with the prologue computed in its first pass, as `scf`
    loops of `memref` loads and stores: the same bits as the unfused calls. Likewise a chain may start with
    an f32 `ptrain.softmax_grad` over the last axis (the scores' softmax gradient and the scale's gradient):
    per row the runtime's fp64 dot of dy and y, then dx and the chain's other ops per element. The ops stay in the step, each marked with `ptrain.kernel` (the kernel)
    and `ptrain.kernel_op` (its position in the chain): the runtime's per-op kernels remain the reference
    and the fallback, and a code generator that ignores the marks computes the same bits.

    ```mlir
    // ptrain-opt --ptrain-outline-elementwise: the attention scores' scale and mask
    %s = ptrain.binary mul %qk, %scale {ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 0 : i64}
        : tensor<4x4x64x64xf32>, tensor<f32>
    %m = ptrain.binary add %s, %mask {ptrain.kernel = @ptrain_kernels::@ptrain_kernel_0, ptrain.kernel_op = 1 : i64}
        : tensor<4x4x64x64xf32>, tensor<64x64xf32>
    module @ptrain_kernels {
      func.func @ptrain_kernel_0(%in0: memref<4x4x64x64xf32>, %in1: memref<f32>, %in2: memref<64x64xf32>,
                          %out0: memref<4x4x64x64xf32>) {
        linalg.generic {indexing_maps = [#id, affine_map<(d0, d1, d2, d3) -> ()>,
                                         affine_map<(d0, d1, d2, d3) -> (d2, d3)>, #id], ...}
            ins(%in0, %in1, %in2 : ...) outs(%out0 : ...) {
        ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
          %0 = arith.mulf %a, %b : f32
          %1 = arith.addf %0, %c : f32
          linalg.yield %1 : f32
        }
        return
      }
    }
    ```
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "A remark at each chain's first op: its function, kernel, ops, and the bytes the kernel moves "
           "(inputs read and outputs written once) against the ops' one runtime call each (every operand "
           "read, every result written); bench/generated_kernels/bytes_per_step.py sums them per step">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
  let statistics = [
    Statistic<"numChains", "chains", "Elementwise chains outlined">,
    Statistic<"numKernels", "kernels", "Distinct kernels generated">,
    Statistic<"numOps", "ops", "Elementwise ops inside chains">,
  ];
}

def WidenHalfCodecsPass : Pass<"ptrain-widen-half-codecs", "::mlir::ModuleOp"> {
  let summary = "Rewrites codec ops on bf16 / f16 tensors into the f32 codec behind an exact widen.";
  let description = [{
    Issue 24 item 2 (docs/Compression.md, "Codecs on 16-bit traffic"). In a 16-bit plan
    `--ptrain-lower-to-runtime` codes the 16-bit message: `ptrain.compress` on a bf16 or f16 tensor with an f32
    residual, `ptrain.decompress` back to the 16-bit type, `ptrain.compressed_all_reduce_start` on a 16-bit TP
    site. The runtime's codec kernels (CPU and CUDA) and the interpreter's take f32 tensors; this pass, run
    right after the lowering by `--ptrain-pipeline` (so `ptrain-compile`'s step.mlir, the executor, the CPU
    and the CUDA emitters all see it), rewrites each such op into the f32 op on the exactly widened tensor:
    the codes are those of the f32 kernel on the widened input (quantization, TAH-Quant, PowerSGD); the codes
    the codec keeps 16-bit (top-k's and rand-k's values) are rounded to nearest even after the f32 encode,
    and with error feedback the residual gets what that rounding lost, `decode(v - widen(round(v)))`, so that
    e' = g + e - decode(the codes sent) still holds; a decode is rounded once to the 16-bit type; a compressed
    all-reduce is run in f32 and its wait rounded, and a top-k or rand-k one gets `value_type` (the 16-bit
    type: its values are sent rounded to 16 bits by the runtimes and the executor, which keep the rounding in
    the residual; `ptrain.compressed_all_reduce_start` C8) (include/ptrain/Transforms/WidenHalfCodecs.h). Every codec a
    16-bit tensor may carry has an f32 kernel: the verifier refuses the other two (`#ptrain.cast` C3,
    `#ptrain.linear_ae` C3).

    ```mlir
    // ptrain-opt --ptrain-widen-half-codecs
    %v, %i, %e1 = ptrain.compress %g state(%e) {codec = #ptrain.topk<k = 64>, error_feedback}
        : tensor<8x128xbf16> state(tensor<8x128xf32>) -> (tensor<64xbf16>, tensor<64xi32>) state(tensor<8x128xf32>)
    // becomes
    %x = ptrain.cast %g : tensor<8x128xbf16> -> tensor<8x128xf32>
    %v32, %i, %e0 = ptrain.compress %x state(%e) {codec = #ptrain.topk<k = 64>, error_feedback} : ...
    %v = ptrain.cast %v32 : tensor<64xf32> -> tensor<64xbf16>
    %w = ptrain.cast %v : tensor<64xbf16> -> tensor<64xf32>
    %d = ptrain.binary sub %v32, %w : tensor<64xf32>, tensor<64xf32>
    %s = ptrain.decompress %d, %i {codec = #ptrain.topk<k = 64>} : (tensor<64xf32>, tensor<64xi32>) -> tensor<8x128xf32>
    %e1 = ptrain.binary add %e0, %s : tensor<8x128xf32>, tensor<8x128xf32>
    ```
  }];
  let dependentDialects = ["::mlir::ptrain::PTrainDialect"];
  let statistics = [
    Statistic<"numCompresses", "half-compresses", "ptrain.compress ops on bf16 / f16 inputs widened">,
    Statistic<"numDecompresses", "half-decompresses", "ptrain.decompress ops with bf16 / f16 results widened">,
    Statistic<"numAllReduces", "half-compressed-all-reduces",
              "ptrain.compressed_all_reduce_start ops on bf16 / f16 inputs widened">,
  ];
}

def OutlineCodecsPass : Pass<"ptrain-outline-codecs", "::mlir::ModuleOp"> {
  let summary = "Generates the encoder + error-feedback kernel of each quantization site, specialized to its "
                "sizes, bits, block and error feedback.";
  let description = [{
    Issue 26 ("Kernels generated by the compiler"), codec encode + error feedback per site: for every
    `ptrain.compress` of an f32 tensor of static shape with `#ptrain.quant` at block granularity (or per
    tensor: one block of every element), a block size that is a multiple of 16 and a size that is a multiple
    of the block, writes one kernel per distinct (size, block, bits, symmetry, error feedback) into the nested
    module `@ptrain_kernels` (created if `--ptrain-outline-elementwise` made none) and marks the op with
    `ptrain.codec_kernel`. The kernel (include/ptrain/Transforms/QuantArith.h) is the runtime's
    `ptrain_quant_encode_f32` (lib/Runtime/cpu/codecs/Quant.h, the block encoder) op for op in `scf`,
    `vector` and `arith` with every size a constant: per block x = e + g, the lanes' min and max with the
    runtime's sign-of-zero rule, the non-finite probe, the scale (common/QuantScale.h), the codes, the
    residual and the packing; it returns the first non-finite element, which the step reports as the runtime
    does. `ptrain-translate --emit-cpp --emit-cpp-kernels=FILE` (ptrain-compile `--fuse-elementwise=on`) runs
    it after `--ptrain-outline-elementwise` and lowers both kinds of kernels into one object; other codec
    sites, and every site without the option, keep the runtime's encoder, which stays the reference.

    ```mlir
    // ptrain-opt --ptrain-outline-codecs
    %c:3, %e1 = ptrain.compress %g state(%e)
        {codec = #ptrain.quant<bits = 4, granularity = block, block_size = 64, symmetric = false>, error_feedback,
         ptrain.codec_kernel = @ptrain_kernels::@ptrain_codec_kernel_0}
        : tensor<4x64x128xf32> state(tensor<4x64x128xf32>)
        -> (tensor<16384xi8>, tensor<512xf32>, tensor<512xf32>) state(tensor<4x64x128xf32>)
    module @ptrain_kernels {
      func.func @ptrain_codec_kernel_0(%g: memref<32768xf32>, %e: memref<32768xf32>, %packed: memref<16384xi8>,
                                       %scales: memref<512xf32>, %zeros: memref<512xf32>) -> i64 {
        // scf.for over the 512 blocks: vector<16xf32> loads, selects, reductions, shuffles, stores
      }
    }
    ```
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "A remark at each site: its kernel, elements, bits, block, symmetry and error feedback">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
  let statistics = [
    Statistic<"numSites", "sites", "Codec sites given a generated kernel">,
    Statistic<"numKernels", "kernels", "Distinct codec kernels generated">,
  ];
}

def OutlineAdamWPass : Pass<"ptrain-outline-adamw", "::mlir::ModuleOp"> {
  let summary = "Generates the AdamW update of each parameter or ZeRO-1 bucket as a kernel specialized to its "
                "size, betas and epsilon, with the clipping's scale folded in.";
  let description = [{
    Issue 26 ("Kernels generated by the compiler"), the AdamW update over a bucket: for every `ptrain.adamw` of
    f32 tensors of static shape (a parameter, or a ZeRO-1 bucket's shard), writes one kernel per distinct
    (size, beta1, beta2, epsilon, clip scale) into the nested module `@ptrain_kernels` (created if no earlier
    outlining pass made it) and marks the op with `ptrain.adamw_kernel`. The kernel
    (include/ptrain/Transforms/AdamWArith.h) is the element loop of the runtime's `ptrain_adamw_step_f32`
    (lib/Runtime/cpu/Optimizer.cpp) op for op in `scf`, `vector`, `arith` and `math.sqrt`, in place on p, m
    and v: m = b1 m + (1 - b1) g, v = b2 v + ((1 - b2) g) g, p = p decay - (step_size m) / (sqrt(v)
    inv_sqrt_bc2 + eps), the three coefficients its arguments (the step computes them with the runtime's
    `ptrain_adamw_coefficients_f32`). Where the gradient is the global-norm clipping's `ptrain.binary mul` by
    a rank-0 scale that only this update reads (and no elementwise chain took), the kernel takes the
    unscaled gradient and the scale and multiplies them itself: g = grad * scale, one pass fewer.
    `ptrain-translate --emit-cpp --emit-cpp-kernels=FILE` (ptrain-compile `--fuse-elementwise=on`) runs it
    after the chains' and the codecs' passes; without the option every update keeps the runtime's kernel,
    which stays the reference and the fallback.

    ```mlir
    // ptrain-opt --ptrain-outline-adamw
    %g = ptrain.binary mul %grad, %scale : tensor<384x128xf32>, tensor<f32>
    %p1, %m1, %v1 = ptrain.adamw %p, %g, %m, %v, %t {..., ptrain.adamw_kernel = @ptrain_kernels::@ptrain_adamw_kernel_0}
        : tensor<384x128xf32>, tensor<i64>
    module @ptrain_kernels {
      func.func @ptrain_adamw_kernel_0(%p: memref<49152xf32>, %grad: memref<49152xf32>, %m: memref<49152xf32>,
                                       %v: memref<49152xf32>, %scale: memref<1xf32>, %decay: f32,
                                       %step_size: f32, %inv_sqrt_bc2: f32) {
        // scf.for over vectors of 16 lanes: loads, mulf, addf, math.sqrt, divf, subf, stores
      }
    }
    ```
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "A remark at each update: its kernel, elements and whether the clip scale is folded in">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"];
  let statistics = [
    Statistic<"numUpdates", "updates", "AdamW updates given a generated kernel">,
    Statistic<"numKernels", "kernels", "Distinct AdamW kernels generated">,
  ];
}

def TestTimingAnalysisPass : Pass<"test-ptrain-timing", "::mlir::ModuleOp"> {
  let summary = "Test only: prints every step of the timed plan with start, end and slack.";
  let description = [{
    Exposes the timing analysis (TimingAnalysis::print) to lit: one line per plan step (compute steps,
    transfers, collectives) with its ranks, start, end and slack in microseconds, critical steps marked `*`,
    after a line with the iteration time and bubble. Also writes `ptrain.test.iteration_time` (f64 seconds)
    on the module.
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "Cluster description (JSON); empty: the module's ptrain.cluster.">,
  ];
}

#endif // PTRAIN_TRANSFORMS_PASSES_TD
