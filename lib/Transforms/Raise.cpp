//===- Raise.cpp - recognise linear, attention and layer structure -------===//
//
// --ptrain-raise: finds each attention by its softmax, walks back from the scores to the fused Q|K|V
// projection and forward from the context to the output projection, pairs each GELU with its up and down
// projections, and records what it found as discardable attributes (`ptrain.attention`, `ptrain.linear`,
// `ptrain.layers`) that --ptrain-shard-tp consumes. Errors are emitted at the op, whose location is the ONNX
// node's name.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/TensorParallel.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"
#include "ptrain/Transforms/Passes.h"
#include "ptrain/Transforms/RaiseTransformerOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::ptrain {
#define GEN_PASS_DEF_RAISEPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

StateReadOp mlir::ptrain::getParameterRead(Value weight, SymbolTable &symbols) {
  if (auto transpose = weight.getDefiningOp<TransposeOp>())
    weight = transpose.getInput();
  auto read = weight.getDefiningOp<StateReadOp>();
  if (!read)
    return nullptr;
  auto state = symbols.lookup<StateOp>(read.getState());
  return state && state.getKind() == StateKind::Parameter ? read : nullptr;
}

/// The ONNX node name in `loc` (a NameLoc, possibly inside a FusedLoc), or "".
static std::string nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location child : fused.getLocations())
      if (std::string name = nodeName(child); !name.empty())
        return name;
  return "";
}

InFlightDiagnostic mlir::ptrain::emitNodeError(Operation *op, StringRef pass) {
  InFlightDiagnostic diag = op->emitError() << pass << ": ";
  std::string name = nodeName(op->getLoc());
  if (!name.empty())
    diag << "ONNX node '" << name << "' ";
  return std::move(diag << "('" << op->getName() << "'): ");
}

/// Whether `v` is computed without the function's arguments (constants, parameters, masks built from them).
static bool isInputFree(Value v, llvm::DenseMap<Value, bool> &memo) {
  if (isa<BlockArgument>(v))
    return false;
  auto it = memo.find(v);
  if (it != memo.end())
    return it->second;
  memo[v] = true;
  Operation *def = v.getDefiningOp();
  bool free = llvm::all_of(def->getOperands(), [&](Value operand) { return isInputFree(operand, memo); });
  memo[v] = free;
  return free;
}

namespace {

class Raiser {
public:
  Raiser(func::FuncOp fn, SymbolTable &symbols) : fn(fn), symbols(symbols), b(fn.getContext()) {}

  LogicalResult run(int64_t &numLayers, int64_t &numLinears);

private:
  /// The matmul that `v` comes from through data movement and elementwise ops with input-free operands (a
  /// scale, a mask, a bias), or null.
  MatmulOp producerMatmul(Value v, bool throughSplits);
  /// Separate Q, K and V projections of one input (BERT, LLaMA): marks them "q", "k", "v" and sets `kvHeads`
  /// (fewer than the query heads under grouped-query attention); an error naming `scores` otherwise.
  LogicalResult raiseSeparateQKV(MatmulOp scores, MatmulOp q, MatmulOp k, MatmulOp v, int64_t layer, int64_t headDim,
                                 int64_t &kvHeads);
  /// `op` if it is SwiGLU's product silu(gate) * up (gate a matmul), else null.
  BinaryOp swigluOf(Operation *op);
  /// The first matmul that uses `v` as its lhs through reshapes and transposes, or null.
  MatmulOp consumerMatmul(Value v);
  void mark(MatmulOp mm, int64_t layer, StringRef role) {
    mm->setAttr(kLinearAttr, b.getDictionaryAttr({b.getNamedAttr("layer", b.getI64IntegerAttr(layer)),
                                                  b.getNamedAttr("role", b.getStringAttr(role))}));
    ++linears;
  }

  func::FuncOp fn;
  SymbolTable &symbols;
  OpBuilder b;
  llvm::DenseMap<Value, bool> inputFree;
  int64_t linears = 0;
};

} // namespace

MatmulOp Raiser::producerMatmul(Value v, bool throughSplits) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto mm = dyn_cast<MatmulOp>(def))
      return mm;
    // Grouped-query attention repeats each K/V head (broadcast_to); rotary embeddings rotate Q and K.
    if (isa<ReshapeOp, TransposeOp, CastOp>(def) ||
        (throughSplits && isa<SplitOp, SliceOp, BroadcastToOp, RotaryEmbeddingOp>(def))) {
      v = def->getOperand(0);
      continue;
    }
    if (isa<BinaryOp, SelectOp, ConcatOp>(def)) {
      // Follow the one operand that depends on the input; the others are scales, masks, biases, an empty
      // past of a key/value cache.
      SmallVector<Value> dependent;
      for (Value operand : def->getOperands())
        if (!isInputFree(operand, inputFree))
          dependent.push_back(operand);
      // A mask computed from an input (BERT's attention_mask) broadcasts; the scores have the result's shape.
      if (dependent.size() > 1)
        llvm::erase_if(dependent, [&](Value operand) { return operand.getType() != def->getResult(0).getType(); });
      if (dependent.size() > 1) {
        // A mask of the scores' whole shape computed from an input (an additive padding mask expanded to all
        // heads): the one operand that comes from a matmul.
        MatmulOp found;
        for (Value operand : dependent)
          if (MatmulOp mm = producerMatmul(operand, throughSplits)) {
            if (found && found != mm)
              return nullptr;
            found = mm;
          }
        return found;
      }
      if (dependent.size() != 1)
        return nullptr;
      v = dependent.front();
      continue;
    }
    return nullptr;
  }
  return nullptr;
}

/// `v` without the reshapes that flatten or restore the batch dimensions around a 2-D linear (HF GPT-2's Gemm).
static Value throughReshapes(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

LogicalResult Raiser::raiseSeparateQKV(MatmulOp scores, MatmulOp q, MatmulOp k, MatmulOp v, int64_t layer,
                                       int64_t headDim, int64_t &kvHeads) {
  auto isProjection = [&](MatmulOp mm) { return mm && getParameterRead(mm.getRhs(), symbols); };
  if (!isProjection(q) || !isProjection(k) || !isProjection(v) || q == k || q == v || k == v)
    return emitNodeError(scores, "--ptrain-raise")
           << ("Q, K and V of the attention come neither from one fused projection nor from three "
               "projections with parameter weights");
  if (throughReshapes(q.getLhs()) != throughReshapes(k.getLhs()) ||
      throughReshapes(q.getLhs()) != throughReshapes(v.getLhs()))
    return emitNodeError(scores, "--ptrain-raise")
           << ("the attention's Q, K and V projections do not read the same input (cross attention is not "
               "supported)");
  auto columns = [](MatmulOp mm) { return cast<RankedTensorType>(mm.getRhs().getType()).getShape().back(); };
  if (columns(k) != columns(v) || columns(k) % headDim != 0)
    return emitNodeError(k, "--ptrain-raise") << "the K and V projections have " << columns(k) << " and " << columns(v)
                                              << " outputs; expected the same multiple of head_dim = " << headDim;
  kvHeads = columns(k) / headDim;
  mark(q, layer, "q");
  mark(k, layer, "k");
  mark(v, layer, "v");
  return success();
}

/// Whether `s` is the logistic sigmoid of `x` as the importer writes ONNX Sigmoid: 1 / (exp(-x) + 1).
static bool isSigmoidOf(Value s, Value x) {
  auto reciprocal = s.getDefiningOp<UnaryOp>();
  if (!reciprocal || reciprocal.getKind() != UnaryKind::Reciprocal)
    return false;
  auto add = reciprocal.getInput().getDefiningOp<BinaryOp>();
  if (!add || add.getKind() != BinaryKind::Add)
    return false;
  for (auto [e, one] : {std::pair{add.getLhs(), add.getRhs()}, std::pair{add.getRhs(), add.getLhs()}}) {
    DenseFPElementsAttr c;
    auto exp = e.getDefiningOp<UnaryOp>();
    auto neg = exp ? exp.getInput().getDefiningOp<UnaryOp>() : UnaryOp();
    if (exp && exp.getKind() == UnaryKind::Exp && neg && neg.getKind() == UnaryKind::Neg && neg.getInput() == x &&
        matchPattern(one, m_Constant(&c)) && c.isSplat() && c.getSplatValue<APFloat>().convertToDouble() == 1.0)
      return true;
  }
  return false;
}

/// x if `mul` is silu(x) = x * sigmoid(x) (either order), else null.
static Value siluInput(BinaryOp mul) {
  if (mul.getKind() != BinaryKind::Mul)
    return nullptr;
  if (isSigmoidOf(mul.getRhs(), mul.getLhs()))
    return mul.getLhs();
  return isSigmoidOf(mul.getLhs(), mul.getRhs()) ? mul.getRhs() : Value();
}

static bool isSilu(BinaryOp mul) { return static_cast<bool>(siluInput(mul)); }

BinaryOp Raiser::swigluOf(Operation *op) {
  auto mul = dyn_cast<BinaryOp>(op);
  if (!mul || mul.getKind() != BinaryKind::Mul || isSilu(mul))
    return nullptr;
  for (Value side : {mul.getLhs(), mul.getRhs()})
    if (auto silu = side.getDefiningOp<BinaryOp>(); silu && isSilu(silu) && producerMatmul(siluInput(silu), false))
      return mul;
  return nullptr;
}

MatmulOp Raiser::consumerMatmul(Value v) {
  while (true) {
    if (!v.hasOneUse())
      return nullptr;
    Operation *user = *v.getUsers().begin();
    if (auto mm = dyn_cast<MatmulOp>(user))
      return mm.getLhs() == v ? mm : nullptr;
    if (!isa<ReshapeOp, TransposeOp, CastOp>(user))
      return nullptr;
    v = user->getResult(0);
  }
}

LogicalResult Raiser::run(int64_t &numLayers, int64_t &numLinears) {
  Block &body = fn.getBody().front();
  SmallVector<SoftmaxOp> softmaxes;
  for (auto softmax : body.getOps<SoftmaxOp>())
    softmaxes.push_back(softmax);
  if (softmaxes.empty())
    return mlir::emitError(fn.getLoc(), "--ptrain-raise: @")
           << fn.getSymName() << " has no attention (no ptrain.softmax)";

  llvm::DenseMap<Operation *, int64_t> layerOfOp;
  for (auto [layer, softmax] : llvm::enumerate(softmaxes)) {
    int64_t l = static_cast<int64_t>(layer);
    MatmulOp scores = producerMatmul(softmax.getInput(), /*throughSplits=*/false);
    if (!scores)
      return emitNodeError(softmax, "--ptrain-raise")
             << ("the attention's scores (the softmax's input) are not a matmul of "
                 "Q and K");
    auto q = cast<RankedTensorType>(scores.getLhs().getType());
    if (q.getRank() < 3)
      return emitNodeError(scores, "--ptrain-raise")
             << ("the attention's Q is ") << q << "; expected [..., heads, sequence, head_dim]";
    if (!softmax.getResult().hasOneUse())
      return emitNodeError(softmax, "--ptrain-raise") << ("the attention's probabilities have more than one use");
    // The probabilities, or their dropout (a training-mode export: Hugging Face's attn_dropout).
    Value probs = softmax.getResult();
    if (auto dropout = dyn_cast<DropoutOp>(*probs.getUsers().begin()); dropout && dropout.getResult().hasOneUse())
      probs = dropout.getResult();
    // Keras' einsum attention reshapes them ([B, H, S, S] to [B, H, S, 1, S] to [B * H, S, S]) first.
    while (probs.hasOneUse() && isa<ReshapeOp>(*probs.getUsers().begin()))
      probs = probs.getUsers().begin()->getResult(0);
    auto context = dyn_cast<MatmulOp>(*probs.getUsers().begin());
    if (!context || context.getLhs() != probs)
      return emitNodeError(softmax, "--ptrain-raise") << ("the attention's probabilities do not feed a matmul with V");
    MatmulOp projQ = producerMatmul(scores.getLhs(), true), projK = producerMatmul(scores.getRhs(), true),
             projV = producerMatmul(context.getRhs(), true);
    const int64_t headDim = q.getShape().back();
    // The heads: Q's dimension -3 ([..., heads, S, head_dim]), unless the batch and the heads are one
    // dimension ([B * heads, S, head_dim]: Keras); then the Q projection's outputs over head_dim.
    int64_t heads = q.getShape()[q.getRank() - 3];
    int64_t kvHeads = heads;
    auto outputs = [](MatmulOp mm) { return cast<RankedTensorType>(mm.getRhs().getType()).getShape().back(); };
    if (projQ && projQ == projK && projQ == projV && getParameterRead(projQ.getRhs(), symbols)) {
      mark(projQ, l, "qkv"); // one fused Q|K|V projection (GPT, Megatron GPT-2)
      if (q.getRank() == 3)
        heads = kvHeads = outputs(projQ) / 3 / headDim;
    } else if (failed(raiseSeparateQKV(scores, projQ, projK, projV, l, headDim, kvHeads))) {
      return failure();
    } else if (q.getRank() == 3) {
      heads = outputs(projQ) / headDim;
    }
    MatmulOp out = consumerMatmul(context.getResult());
    if (!out || !getParameterRead(out.getRhs(), symbols))
      return emitNodeError(context, "--ptrain-raise")
             << ("the attention's context does not reach an output projection with a "
                 "parameter weight through reshapes and transposes");
    softmax->setAttr(kAttentionAttr, b.getDictionaryAttr({b.getNamedAttr("layer", b.getI64IntegerAttr(l)),
                                                          b.getNamedAttr("heads", b.getI64IntegerAttr(heads)),
                                                          b.getNamedAttr("kv_heads", b.getI64IntegerAttr(kvHeads)),
                                                          b.getNamedAttr("head_dim", b.getI64IntegerAttr(headDim))}));
    mark(out, l, "attn_out");
    layerOfOp[softmax] = l;
  }

  // Each MLP activation (a GELU, or SwiGLU's silu(gate) * up) belongs to the last attention before it; one
  // MLP per layer.
  int64_t layer = -1;
  llvm::DenseSet<int64_t> withMlp;
  for (Operation &op : body) {
    if (layerOfOp.count(&op))
      layer = layerOfOp[&op];
    auto gelu = dyn_cast<GeluOp>(&op);
    BinaryOp swiglu = gelu ? BinaryOp() : swigluOf(&op);
    if (!gelu && !swiglu)
      continue;
    StringRef what = gelu ? "GELU" : "SwiGLU";
    if (layer < 0)
      return emitNodeError(&op, "--ptrain-raise")
             << ("a ") << what << " before the first attention is not part of a transformer layer";
    MatmulOp down = consumerMatmul(op.getResult(0));
    // After the last layer's MLP, an activation that feeds no linear directly is the output head's transform
    // (BERT's cls.predictions.transform: dense, GELU, LayerNorm): not a layer's, it stays replicated.
    if (withMlp.count(layer) && !down && layer + 1 == static_cast<int64_t>(softmaxes.size()))
      continue;
    if (!withMlp.insert(layer).second)
      return emitNodeError(&op, "--ptrain-raise") << ("layer ") << layer << " has a second MLP activation";
    auto isLinear = [&](MatmulOp mm) { return mm && getParameterRead(mm.getRhs(), symbols); };
    if (gelu) {
      MatmulOp up = producerMatmul(gelu.getInput(), /*throughSplits=*/false);
      if (!isLinear(up) || !isLinear(down))
        return emitNodeError(gelu, "--ptrain-raise")
               << ("the MLP's GELU is not between two linears with parameter weights");
      mark(up, layer, "mlp_up");
    } else {
      // swiglu = silu(gate) * up, either order; silu(gate) = gate * sigmoid(gate).
      auto silu = swiglu.getLhs().getDefiningOp<BinaryOp>();
      Value upValue = swiglu.getRhs();
      if (!silu || !isSilu(silu)) {
        silu = swiglu.getRhs().getDefiningOp<BinaryOp>();
        upValue = swiglu.getLhs();
      }
      MatmulOp gate = producerMatmul(siluInput(silu), false), up = producerMatmul(upValue, false);
      if (!isLinear(gate) || !isLinear(up) || !isLinear(down) || gate == up ||
          throughReshapes(gate.getLhs()) != throughReshapes(up.getLhs()))
        return emitNodeError(swiglu, "--ptrain-raise")
               << ("the SwiGLU silu(gate) * up is not between a gate and an up linear of one input and a down "
                   "linear, all with parameter weights");
      mark(gate, layer, "mlp_gate");
      mark(up, layer, "mlp_up");
    }
    mark(down, layer, "mlp_down");
  }

  // The LM head: the linear that produces the logits.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() > 0)
    if (auto head = ret.getOperand(0).getDefiningOp<MatmulOp>())
      if (getParameterRead(head.getRhs(), symbols))
        mark(head, static_cast<int64_t>(softmaxes.size()), "lm_head");
  fn->setAttr(kLayersAttr, b.getI64IntegerAttr(static_cast<int64_t>(softmaxes.size())));
  numLayers = static_cast<int64_t>(softmaxes.size());
  numLinears = linears;
  return success();
}

namespace {
struct RaisePass : public ptrain::impl::RaisePassBase<RaisePass> {
  using RaisePassBase::RaisePassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    auto fn = symbols.lookup<func::FuncOp>(entry);
    if (!fn || fn.isExternal() || !fn.getBody().hasOneBlock()) {
      emitError(module.getLoc()) << "--ptrain-raise: no function @" << entry << " with one block";
      return signalPassFailure();
    }
    int64_t layers = 0, linears = 0, rmsNorms = 0, rotaries = 0;
    if (failed(raiseTransformerOps(fn, rmsNorms, rotaries)))
      return signalPassFailure();
    numRmsNorms = rmsNorms;
    numRotaries = rotaries;
    if (failed(Raiser(fn, symbols).run(layers, linears)))
      return signalPassFailure();
    numLayers = layers;
    numLinears = linears;
  }
};
} // namespace
