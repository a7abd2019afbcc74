//===- Kernels.h - reference kernels of the ptrain model and grad ops -*- C++ -*-===//
//
// One function per model op of PTrainModelOps.td and per backward op of PTrainGradientOps.td, on host tensors,
// with exactly the semantics the op's description gives; each backward kernel sits beside its forward kernel.
// Floats are computed in double (sums, dot products and variances accumulate in double) and the result is
// rounded once to its element type. Every kernel checks its operands itself (shapes, ranges of
// ids and labels) and returns an error that says what is wrong, so a kernel called on unverified IR or on bad
// runtime data never crashes; the interpreter prefixes the op and its location.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_KERNELS_H
#define PTRAIN_INTERPRETER_KERNELS_H

#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/Tensor.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include <optional>
#include <vector>

namespace mlir::ptrain::interp {

//===--- Broadcasting (numpy rules) ---------------------------------------===//

/// The numpy broadcast of two shapes (aligned from the last dimension; each pair equal or one of them 1), or
/// an error naming both shapes.
llvm::Expected<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);
/// For each element of `outShape` (row-major), the flat index of the element of `inShape` broadcast to it.
/// Precondition: `inShape` broadcasts to `outShape`.
std::vector<int64_t> broadcastIndexMap(llvm::ArrayRef<int64_t> outShape, llvm::ArrayRef<int64_t> inShape);

//===--- Elementwise (Elementwise.cpp) ------------------------------------===//

/// `ptrain.binary`: lhs <kind> rhs with numpy broadcasting. Integer tensors: add, sub, mul, max, min, div
/// (truncating; division by zero is an error) and pow (exponent >= 0).
llvm::Expected<Tensor> evalBinary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs);
/// `ptrain.unary` on a float tensor (IEEE results: log(-1) is NaN, 1/0 is inf).
llvm::Expected<Tensor> evalUnary(UnaryKind kind, const Tensor &input);
/// `ptrain.gelu`: x/2 (1 + erf(x/sqrt 2)), or 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks &
/// Gimpel, 2016).
llvm::Expected<Tensor> evalGelu(GeluApproximation approximation, const Tensor &input);
/// `ptrain.gelu_grad`: dx = dy * gelu'(x). `none`: gelu'(x) = Phi(x) + x phi(x) (standard normal CDF and
/// density); `tanh`: the exact derivative of the tanh form, 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi)
/// (1 + 3 * 0.044715 x^2) with t = tanh(sqrt(2/pi) (x + 0.044715 x^3)). `grad` and `input` have one float type.
llvm::Expected<Tensor> evalGeluGrad(GeluApproximation approximation, const Tensor &grad, const Tensor &input);
/// `ptrain.sum_to`: sums a float `input` down to `shape`, which must broadcast to the input's shape (numpy
/// rules): every dimension that broadcasting added or stretched from 1 is summed away, in double.
llvm::Expected<Tensor> evalSumTo(const Tensor &input, llvm::ArrayRef<int64_t> shape);

/// Whether `ptrain.dropout` keeps element `index` (row-major) at site `seed` and step `counter`: the
/// counter-based hash of the op's description, u = (mix(key + (index + 1) G) >> 11) 2^-53 >= ratio.
bool dropoutKeeps(int64_t seed, int64_t counter, int64_t index, double ratio);
/// `ptrain.dropout`: x / (1 - ratio) where dropoutKeeps, else 0. `counter` is a rank-0 i64 tensor; its own
/// gradient (the same mask on dy) is this kernel applied to dy.
llvm::Expected<Tensor> evalDropout(const Tensor &input, const Tensor &counter, double ratio, int64_t seed);

//===--- Linear algebra and lookup (LinearAlgebra.cpp) --------------------===//

/// `ptrain.matmul`: [..., n, k] x [..., k, m] -> [broadcast batch..., n, m], dot products in double.
llvm::Expected<Tensor> evalMatmul(const Tensor &lhs, const Tensor &rhs);
/// `ptrain.embedding`: out[i..., :] = table[ids[i...], :]; an id outside [0, V) is an error naming it.
llvm::Expected<Tensor> evalEmbedding(const Tensor &table, const Tensor &ids);
/// `ptrain.embedding_grad`: a zero `vocab` x H table into which row grad[i..., :] is added at row ids[i...]
/// (repeated ids accumulate, in double). `grad` is ids.shape x H; an id outside [0, vocab) is an error naming it.
llvm::Expected<Tensor> evalEmbeddingGrad(const Tensor &grad, const Tensor &ids, int64_t vocab);

//===--- Normalization and loss (Normalization.cpp) -----------------------===//

/// `ptrain.layer_norm`: mean and biased variance over dimensions [axis, rank), in double; `bias` may be null.
llvm::Expected<Tensor> evalLayerNorm(const Tensor &input, const Tensor &scale, const Tensor *bias, int64_t axis,
                                     double epsilon);
/// `ptrain.softmax` along `axis` (negative counts from the end), with max subtraction.
llvm::Expected<Tensor> evalSoftmax(const Tensor &input, int64_t axis);
/// `ptrain.softmax_grad` from the forward output y: dx = y * (dy - sum(dy * y, axis)); `grad` and `output` have
/// one float type.
llvm::Expected<Tensor> evalSoftmaxGrad(const Tensor &grad, const Tensor &output, int64_t axis);
/// The options of `ptrain.cross_entropy` and its gradient (PTrainCrossEntropy.h): class weights [C] (null: all
/// 1), the label that is not counted, and reduction "sum" instead of "mean".
struct CrossEntropyOptions {
  const Tensor *weight = nullptr;
  std::optional<int64_t> ignoreIndex;
  bool sum = false;
};
/// `ptrain.cross_entropy`: per position nll = logsumexp(logits[p, :]) - logits[p, label[p]] in nats, weighted
/// by w = weight[label] (1 without weights, 0 where label == ignoreIndex); the mean sum(w nll) / sum(w) (NaN
/// when nothing is counted) or, with `sum`, sum(w nll); a rank-0 tensor of the logits' element type. A label
/// outside [0, C) that is not ignoreIndex is an error naming it.
llvm::Expected<Tensor> evalCrossEntropy(const Tensor &logits, const Tensor &labels,
                                        const CrossEntropyOptions &options = {});
/// `ptrain.cross_entropy_grad`: dlogits = dloss * w * (softmax(logits) - onehot(labels)) / N, N = sum(w) for
/// the mean (the number of positions without weights and ignoreIndex) and 1 for `sum`; ignored positions get
/// zeros. `grad` (dloss) is a float scalar; the result has the logits' type; a label outside [0, C) that is not
/// ignoreIndex is an error naming it.
llvm::Expected<Tensor> evalCrossEntropyGrad(const Tensor &grad, const Tensor &logits, const Tensor &labels,
                                            const CrossEntropyOptions &options = {});
/// `ptrain.layer_norm_grad`: recomputes mean and rstd = 1/sqrt(var + epsilon) of `input` over [axis, rank) in
/// double and returns {dx, dscale} or, with `withBias`, {dx, dscale, dbias}, where per normalized row
/// xhat = (x - mean) rstd, gy = dy * scale, dx = rstd (gy - mean(gy) - xhat mean(gy xhat)), and
/// dscale = sum(dy xhat), dbias = sum(dy) over the leading dimensions (Ba et al., 2016; PyTorch's
/// layer_norm_backward). `grad` has the input's type, `scale` the shape input.shape[axis:].
llvm::Expected<std::vector<Tensor>> evalLayerNormGrad(const Tensor &grad, const Tensor &input, const Tensor &scale,
                                                      int64_t axis, double epsilon, bool withBias);

//===--- Data movement (DataMovement.cpp) ---------------------------------===//

/// `ptrain.reshape`: the same elements in row-major order under `shape` (same element count).
llvm::Expected<Tensor> evalReshape(const Tensor &input, llvm::ArrayRef<int64_t> shape);
/// `ptrain.transpose`: result dimension i is input dimension perm[i].
llvm::Expected<Tensor> evalTranspose(const Tensor &input, llvm::ArrayRef<int64_t> perm);
/// `ptrain.split`: consecutive pieces of `sizes` along `axis` (negative counts from the end).
llvm::Expected<std::vector<Tensor>> evalSplit(const Tensor &input, int64_t axis, llvm::ArrayRef<int64_t> sizes);
/// `ptrain.slice`: result[i] = input[offsets + i] for i < sizes (static, unit stride); offsets and sizes have
/// one entry per dimension with 0 <= offset and offset + size <= dimension.
llvm::Expected<Tensor> evalSlice(const Tensor &input, llvm::ArrayRef<int64_t> offsets, llvm::ArrayRef<int64_t> sizes);
/// `ptrain.concat`: the inputs (at least one, one rank and element type, equal dimensions but `axis`) joined
/// along `axis` (negative counts from the end).
llvm::Expected<Tensor> evalConcat(llvm::ArrayRef<const Tensor *> inputs, int64_t axis);
/// `ptrain.pad`: `input` surrounded by zeros, low[d] before and high[d] after dimension d (both >= 0, one entry
/// per dimension); the adjoint of `ptrain.slice`. Any element type.
llvm::Expected<Tensor> evalPad(const Tensor &input, llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high);

//===--- Optimizers (Optimizer.cpp) ---------------------------------------===//

/// The attributes of one `ptrain.adamw` op: the learning-rate schedule (#ptrain.lr_schedule) and AdamW's
/// hyperparameters.
struct AdamWHyperparameters {
  double peak;     ///< peak learning rate
  int64_t warmup;  ///< linear warm-up steps
  int64_t total;   ///< steps after which the rate stays at peak * minRatio
  double minRatio; ///< the cosine's floor as a fraction of the peak
  double beta1, beta2, epsilon, weightDecay;
};

/// The learning rate of `ptrain.lr_schedule` at the 1-based step `t`: peak * t / warmup for t <= warmup, then
/// min + (peak - min) * 0.5 * (1 + cos(pi * min(1, (t - warmup) / (total - warmup)))) with min = peak *
/// minRatio (Goyal et al. 2017, sec. 2.2; Loshchilov & Hutter, "SGDR", ICLR 2017, eq. 5), in double.
double learningRate(const AdamWHyperparameters &h, int64_t t);

/// `ptrain.adamw`: {new_param, new_m, new_v} of one AdamW step (Loshchilov & Hutter, ICLR 2019, Algorithm 2,
/// torch.optim.AdamW's parameterization): m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// p = p (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), with lr = learningRate(t).
/// Each element is computed in double from the f32 operands and each result rounded once to f32. `param`,
/// `grad`, `m`, `v` share one f32 type; `step` is a rank-0 integer tensor t >= 1.
llvm::Expected<std::vector<Tensor>> evalAdamW(const Tensor &param, const Tensor &grad, const Tensor &m, const Tensor &v,
                                              const Tensor &step, const AdamWHyperparameters &h);

//===--- Masks, selection, casts (Selection.cpp) ---------------------------===//

/// `ptrain.compare`: an i1 tensor of lhs <kind> rhs with numpy broadcasting; `and`, `or`, `xor` need i1.
llvm::Expected<Tensor> evalCompare(CompareKind kind, const Tensor &lhs, const Tensor &rhs);
/// `ptrain.select`: condition (i1) ? lhs : rhs, the three broadcast against each other.
llvm::Expected<Tensor> evalSelect(const Tensor &condition, const Tensor &lhs, const Tensor &rhs);
/// `ptrain.cast` to `to`: float rounding to nearest even, float to integer truncation toward zero (NaN or out
/// of range is an error), anything to i1 as `!= 0`.
llvm::Expected<Tensor> evalCast(const Tensor &input, DType to);
/// `ptrain.broadcast_to`: `input` broadcast to `shape` (numpy rules).
llvm::Expected<Tensor> evalBroadcastTo(const Tensor &input, llvm::ArrayRef<int64_t> shape);
/// `ptrain.gather`: data[i..., indices[j...], k...] along `axis`; negative indices count from the end; an
/// index out of [-n, n) is an error naming it.
llvm::Expected<Tensor> evalGather(const Tensor &data, const Tensor &indices, int64_t axis);

//===--- Reductions (Reduction.cpp) ----------------------------------------===//

/// `ptrain.reduce`: sum, mean or max over `axes` (negative counts from the end), in double; `keepdims` keeps
/// the reduced dimensions as 1. Integer tensors: sum and max only.
llvm::Expected<Tensor> evalReduce(ReduceKind kind, const Tensor &input, llvm::ArrayRef<int64_t> axes, bool keepdims);
/// `ptrain.log_softmax` along `axis`: x - max - log(sum(exp(x - max))), in double.
llvm::Expected<Tensor> evalLogSoftmax(const Tensor &input, int64_t axis);

//===--- Codecs (lib/Interpreter/Codecs.cpp) ------------------------------===//
/// `ptrain.compress` with any codec the runtime has a kernel for (#ptrain.powersgd, topk, randk, quant,
/// cast): {the codes, new residual (with error_feedback), the codec's new state (PowerSGD's warm-start Q,
/// rand-k's counter)} from the runtime's ptrain_codec_encode on the fp32 input (batch 1; PowerSGD seed 0).
/// The linear autoencoder, non-f32 tensors and matrix views that are not a reshape are errors.
llvm::Expected<std::vector<Tensor>> evalCompress(CompressOp op, llvm::function_ref<const Tensor &(Value)> get);
/// The runtime descriptor (ptrain_codec_t, one batch entry) of `codec` on f32 tensors of `type`, as
/// evalCompress passes it to ptrain_codec_encode; ptrain-calibrate times the kernels through it. Errors: a
/// codec without a runtime kernel (the linear autoencoder), a non-f32 type, a view that is not a reshape.
llvm::Expected<ptrain_codec_t> getCodecDescriptor(CodecAttrInterface codec, RankedTensorType type);
/// `ptrain.decompress`: {the decoded tensor, the codec's new decoder state} (ptrain_codec_decode).
llvm::Expected<std::vector<Tensor>> evalDecompress(DecompressOp op, llvm::function_ref<const Tensor &(Value)> get);
/// `ptrain.compressed_all_reduce_start` over the members' `inputs` and their `states` (residual with
/// error_feedback, then the codec's encoder state): per member {the reduced tensor, the new states}, exactly
/// as lib/Runtime/cpu/CompressedCollectives.cpp runs it. PowerSGD: data-parallel PowerSGD (Vogels et al.,
/// NeurIPS 2019, Algorithm 2; Optimus-CC section 4.4) with the runtime's phase kernels: P = M Q0, sum of P,
/// orthogonalize, Q = M^T P, sum of Q, out = alpha P Q^T (alpha 1 for sum, 1/N for avg), residual =
/// M - P Q^T / N, warm-start Q = Q / N; the exact path sums M itself. Rand-k: the k values summed, scaled
/// by alpha, decoded; cast: the 16-bit codes summed in fp32, scaled; top-k and quantization: every member's
/// code decoded and added, then scaled. Error feedback is local (e = v - decode(own code) for the codes
/// that are not reduced in compressed form). Sums are fp32 in member order.
llvm::Expected<std::vector<std::pair<Tensor, std::vector<Tensor>>>>
evalCompressedAllReduce(CompressedAllReduceStartOp op, llvm::ArrayRef<const Tensor *> inputs,
                        llvm::ArrayRef<std::vector<Tensor>> states);
/// `ptrain.compressed_reduce_scatter_start` (ZeRO-1's quantized bucket reduce-scatter) over the members'
/// flat `inputs` and `states` (the residual with error_feedback): per member j {its chunk, its new residual},
/// as ptrain_compressed_reduce_scatter_start runs it: member i encodes each chunk of its input + residual
/// alone (the codec on the chunk type), member j decodes every member's code of chunk j and adds them in
/// member order (fp32), then scales by 1 / N for avg.
llvm::Expected<std::vector<std::pair<Tensor, std::vector<Tensor>>>>
evalCompressedReduceScatter(CompressedReduceScatterStartOp op, llvm::ArrayRef<const Tensor *> inputs,
                            llvm::ArrayRef<std::vector<Tensor>> states);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_KERNELS_H
