//===- LegalizeOpset23.cpp - ONNX RMSNormalization, RotaryEmbedding, Attention -*- C++ -*-===//
//
// The LLaMA-style operators of ONNX opset 23: RMSNormalization into ptrain.rms_norm, RotaryEmbedding into
// ptrain.rotary_embedding (cos/sin gathered by position_ids with ptrain.embedding; 3-D inputs reshaped to
// [batch, heads, seq, head_size] and back), and Attention into scaled dot-product attention built from model
// ops (matmul, softmax, select, binary; grouped-query K/V repeated by broadcast_to), so that every part
// has its gradient rule. Unsupported attribute values or inputs are errors naming them. Semantics from the
// ONNX operator definitions (https://onnx.ai/onnx/operators/) and onnx.reference's implementations.
//
//===----------------------------------------------------------------------===//

#include "LegalizeNewestOpsets.h"

#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

namespace {

/// ONNX TensorProto.FLOAT, the only stash_type / softmax_precision ptrain computes in (it computes f32 in
/// double and rounds once, which is at least as precise).
constexpr int64_t kOnnxFloat = 1;

/// [B, S, N * D] -> [B, N, S, D].
Value splitHeads(OpBuilder &b, Location loc, Value x, int64_t heads) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t batch = type.getDimSize(0), seq = type.getDimSize(1), hidden = type.getDimSize(2);
  Value split = ReshapeOp::create(b, loc, type.clone({batch, seq, heads, hidden / heads}), x);
  return TransposeOp::create(b, loc, split, b.getDenseI64ArrayAttr({0, 2, 1, 3}));
}

/// [B, N, S, D] -> [B, S, N * D].
Value mergeHeads(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  Value t = TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr({0, 2, 1, 3}));
  return ReshapeOp::create(
      b, loc, type.clone({type.getDimSize(0), type.getDimSize(2), type.getDimSize(1) * type.getDimSize(3)}), t);
}

/// RMSNormalization-23: Y = X / sqrt(mean(X^2 over [axis, rank)) + epsilon) * scale; a scale that only
/// broadcasts to X.shape[axis:] is broadcast first.
LogicalResult legalizeRMSNormalization(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 2, 2)))
    return failure();
  if (int64_t stash = intAttr(node, "stash_type", kOnnxFloat); stash != kOnnxFloat)
    return attrError(node, "stash_type") << "is " << stash << "; only 1 (float) is supported";
  Value x = node.getInputs()[0], scale = node.getInputs()[1];
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), axis = intAttr(node, "axis", -1);
  if (axis < -rank || axis >= rank)
    return attrError(node, "axis") << "is " << axis << ", out of range for rank " << rank;
  auto normType =
      RankedTensorType::get(type.getShape().drop_front(axis < 0 ? axis + rank : axis), type.getElementType());
  if (scale.getType() != normType) {
    scale = buildChecked<BroadcastToOp>(node, rewriter, normType, scale);
    if (!scale)
      return failure();
  }
  return replaceWith<RmsNormOp>(node, rewriter, x, scale, rewriter.getI64IntegerAttr(axis),
                                rewriter.getF64FloatAttr(floatAttr(node, "epsilon", 1e-5)));
}

/// RotaryEmbedding-23: X [B, N, S, D] or [B, S, N * D] (num_heads), cos/sin caches [P, R/2] gathered by
/// position_ids [B, S], or [B, S, R/2] without position_ids.
LogicalResult legalizeRotaryEmbedding(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 3, 4)))
    return failure();
  Location loc = node.getLoc();
  Value x = node.getInputs()[0], cos = node.getInputs()[1], sin = node.getInputs()[2];
  auto type = cast<RankedTensorType>(x.getType());
  bool packed = type.getRank() == 3;
  if (!packed && type.getRank() != 4)
    return nodeError(node) << "X must be [batch, heads, seq, head_size] or [batch, seq, hidden], got " << type;
  if (packed) {
    int64_t heads = intAttr(node, "num_heads", 0);
    if (heads <= 0 || type.getDimSize(2) % heads != 0)
      return attrError(node, "num_heads")
             << "is " << heads << "; a 3-D X " << type << " needs num_heads > 0 dividing its hidden size";
    x = splitHeads(rewriter, loc, x, heads);
  } else if (intAttr(node, "num_heads", 0) != 0 &&
             intAttr(node, "num_heads", 0) != cast<RankedTensorType>(x.getType()).getDimSize(1)) {
    return attrError(node, "num_heads") << "is " << intAttr(node, "num_heads", 0) << " but X " << type << " has "
                                        << type.getDimSize(1) << " heads";
  }
  if (node.getInputs().size() > 3) {
    Value ids = node.getInputs()[3];
    cos = buildChecked<EmbeddingOp>(node, rewriter, cos, ids);
    sin = cos ? buildChecked<EmbeddingOp>(node, rewriter, sin, ids) : Value();
    if (!sin)
      return failure();
  }
  Value y = buildChecked<RotaryEmbeddingOp>(node, rewriter, x, cos, sin,
                                            rewriter.getBoolAttr(intAttr(node, "interleaved", 0) != 0),
                                            rewriter.getI64IntegerAttr(intAttr(node, "rotary_embedding_dim", 0)));
  if (!y)
    return failure();
  if (packed)
    y = mergeHeads(rewriter, loc, y);
  return replaceFirstOutput(node, y, rewriter);
}

/// K or V [B, Hkv, S, D] repeated to [B, Hkv * groups, S, D]: query head h reads kv head h / groups
/// (grouped-query attention, Ainslie et al., 2023).
Value repeatKV(OpBuilder &b, Location loc, Value kv, int64_t groups) {
  if (groups == 1)
    return kv;
  auto type = cast<RankedTensorType>(kv.getType());
  int64_t batch = type.getDimSize(0), heads = type.getDimSize(1), seq = type.getDimSize(2), d = type.getDimSize(3);
  Value expanded = ReshapeOp::create(b, loc, type.clone({batch, heads, 1, seq, d}), kv);
  Value repeated = BroadcastToOp::create(b, loc, type.clone({batch, heads, groups, seq, d}), expanded);
  return ReshapeOp::create(b, loc, type.clone({batch, heads * groups, seq, d}), repeated);
}

/// Attention-23 without a KV cache: Y = softmax(scale Q K^T [softcap] + mask) V, with a boolean (select) or
/// additive float attn_mask, is_causal (key j <= query i), grouped-query K/V; 4-D or 3-D (q_num_heads,
/// kv_num_heads) inputs. present_key/present_value, when used, are K and V ([B, Hkv, S, D]).
LogicalResult legalizeAttention(OnnxNodeOp node, IRRewriter &rewriter) {
  if (failed(expectArity(node, 3, 6)))
    return failure();
  for (unsigned i = 4; i < node.getInputs().size(); ++i)
    if (!isa<NoneType>(node.getInputs()[i].getType()))
      return nodeError(node) << (i == 4 ? "past_key" : "past_value") << " (input #" << i
                             << ") is not supported: ptrain imports attention without a KV cache";
  if (node.getNumResults() > 3 && !node.getOutputs()[3].use_empty())
    return nodeError(node) << "qk_matmul_output (output #3) is used; it is not supported";
  if (auto precision = node.getOnnxAttrs().getAs<IntegerAttr>("softmax_precision");
      precision && precision.getInt() != kOnnxFloat)
    return attrError(node, "softmax_precision") << "is " << precision.getInt() << "; only 1 (float) is supported";
  if (intAttr(node, "qk_matmul_output_mode", 0) != 0)
    return attrError(node, "qk_matmul_output_mode")
           << "is " << intAttr(node, "qk_matmul_output_mode", 0) << "; only 0 is supported";
  Location loc = node.getLoc();
  Value q = node.getInputs()[0], k = node.getInputs()[1], v = node.getInputs()[2];
  auto qType = cast<RankedTensorType>(q.getType());
  bool packed = qType.getRank() == 3;
  if (packed) {
    int64_t qHeads = intAttr(node, "q_num_heads", 0), kvHeads = intAttr(node, "kv_num_heads", 0);
    if (qHeads <= 0 || kvHeads <= 0)
      return attrError(node, qHeads <= 0 ? "q_num_heads" : "kv_num_heads") << "must be given (> 0) for 3-D Q, K and V";
    for (auto [value, heads] : {std::pair{q, qHeads}, std::pair{k, kvHeads}, std::pair{v, kvHeads}}) {
      auto t = dyn_cast<RankedTensorType>(value.getType());
      if (!t || t.getRank() != 3 || t.getDimSize(2) % heads != 0)
        return nodeError(node) << "3-D Q, K and V need hidden sizes divisible by their head counts, got "
                               << value.getType() << " with " << heads << " heads";
    }
    q = splitHeads(rewriter, loc, q, qHeads);
    k = splitHeads(rewriter, loc, k, kvHeads);
    v = splitHeads(rewriter, loc, v, kvHeads);
  } else if (qType.getRank() != 4) {
    return nodeError(node) << "Q must be 3-D or 4-D, got " << qType;
  }
  auto q4 = cast<RankedTensorType>(q.getType()), k4 = cast<RankedTensorType>(k.getType()),
       v4 = cast<RankedTensorType>(v.getType());
  if (k4.getRank() != 4 || v4.getRank() != 4 || k4.getDimSize(1) != v4.getDimSize(1) ||
      q4.getDimSize(1) % k4.getDimSize(1) != 0 || k4.getDimSize(2) != v4.getDimSize(2))
    return nodeError(node) << "Q " << q4 << ", K " << k4 << " and V " << v4
                           << " are not [B, Hq, Sq, D], [B, Hkv, Skv, D], [B, Hkv, Skv, Dv] with Hkv dividing Hq";
  Type elt = q4.getElementType();
  int64_t groups = q4.getDimSize(1) / k4.getDimSize(1), sq = q4.getDimSize(2), skv = k4.getDimSize(2);
  double scale = floatAttr(node, "scale", 1.0 / std::sqrt(static_cast<double>(q4.getDimSize(3))));
  Value kT = TransposeOp::create(rewriter, loc, repeatKV(rewriter, loc, k, groups),
                                 rewriter.getDenseI64ArrayAttr({0, 1, 3, 2}));
  Value scores = buildChecked<MatmulOp>(node, rewriter, q, kT);
  if (!scores)
    return failure();
  scores = BinaryOp::create(rewriter, loc, BinaryKind::Mul, scores, scalarConstant(rewriter, loc, elt, scale));
  if (double softcap = floatAttr(node, "softcap", 0.0); softcap != 0.0) {
    // softcap * tanh(scores / softcap).
    Value t = UnaryOp::create(
        rewriter, loc, UnaryKind::Tanh,
        BinaryOp::create(rewriter, loc, BinaryKind::Div, scores, scalarConstant(rewriter, loc, elt, softcap)));
    scores = BinaryOp::create(rewriter, loc, BinaryKind::Mul, t, scalarConstant(rewriter, loc, elt, softcap));
  }
  Value negInf = scalarConstant(rewriter, loc, elt, -std::numeric_limits<double>::infinity());
  if (node.getInputs().size() > 3 && !isa<NoneType>(node.getInputs()[3].getType())) {
    Value mask = node.getInputs()[3];
    auto maskType = cast<RankedTensorType>(mask.getType());
    scores = maskType.getElementType().isInteger(1)
                 ? buildChecked<SelectOp>(node, rewriter, mask, scores, negInf)
                 : buildChecked<BinaryOp>(node, rewriter, BinaryKind::Add, scores, mask);
    if (!scores)
      return failure();
  }
  if (intAttr(node, "is_causal", 0) != 0) {
    SmallVector<bool> causal;
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < skv; ++j)
        causal.push_back(j <= i);
    Value causalMask = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(RankedTensorType::get({sq, skv}, rewriter.getI1Type()), ArrayRef<bool>(causal)));
    scores = SelectOp::create(rewriter, loc, causalMask, scores, negInf);
  }
  Value probs = SoftmaxOp::create(rewriter, loc, scores, rewriter.getI64IntegerAttr(-1));
  Value y = buildChecked<MatmulOp>(node, rewriter, probs, repeatKV(rewriter, loc, v, groups));
  if (!y)
    return failure();
  if (packed)
    y = mergeHeads(rewriter, loc, y);
  Value present[] = {k, v};
  for (unsigned i = 1; i < std::min<unsigned>(node.getNumResults(), 3); ++i) {
    Value output = node.getOutputs()[i];
    if (output.use_empty())
      continue;
    if (!matchesONNXType(present[i - 1].getType(), output.getType()))
      return nodeError(node) << "present " << (i == 1 ? "key" : "value") << " has type " << present[i - 1].getType()
                             << " but ONNX inferred " << output.getType();
    output.replaceAllUsesWith(present[i - 1]);
  }
  return replaceFirstOutput(node, y, rewriter);
}

} // namespace

void onnx_import::populateOpset23Patterns(PatternTable &t) {
  t.onOp("RMSNormalization", 23, legalizeRMSNormalization);
  t.onOp("RotaryEmbedding", 23, legalizeRotaryEmbedding);
  t.onOp("Attention", 23, legalizeAttention);
}
