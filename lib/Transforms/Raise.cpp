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
#include "ptrain/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
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
    if (isa<ReshapeOp, TransposeOp, CastOp>(def) || (throughSplits && isa<SplitOp, SliceOp>(def))) {
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
      if (dependent.size() != 1)
        return nullptr;
      v = dependent.front();
      continue;
    }
    return nullptr;
  }
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
    return fn.emitError("--ptrain-raise: @") << fn.getSymName() << " has no attention (no ptrain.softmax)";

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
    auto context = dyn_cast<MatmulOp>(*softmax.getResult().getUsers().begin());
    if (!context || context.getLhs() != softmax.getResult())
      return emitNodeError(softmax, "--ptrain-raise") << ("the attention's probabilities do not feed a matmul with V");
    MatmulOp projQ = producerMatmul(scores.getLhs(), true), projK = producerMatmul(scores.getRhs(), true),
             projV = producerMatmul(context.getRhs(), true);
    if (!projQ || projQ != projK || projQ != projV || !getParameterRead(projQ.getRhs(), symbols))
      return emitNodeError(scores, "--ptrain-raise")
             << ("Q, K and V of the attention do not come from one fused projection "
                 "with a parameter weight (separate Q/K/V projections are not supported)");
    MatmulOp out = consumerMatmul(context.getResult());
    if (!out || !getParameterRead(out.getRhs(), symbols))
      return emitNodeError(context, "--ptrain-raise")
             << ("the attention's context does not reach an output projection with a "
                 "parameter weight through reshapes and transposes");
    softmax->setAttr(kAttentionAttr,
                     b.getDictionaryAttr({b.getNamedAttr("layer", b.getI64IntegerAttr(l)),
                                          b.getNamedAttr("heads", b.getI64IntegerAttr(q.getShape()[q.getRank() - 3])),
                                          b.getNamedAttr("head_dim", b.getI64IntegerAttr(q.getShape().back()))}));
    mark(projQ, l, "qkv");
    mark(out, l, "attn_out");
    layerOfOp[softmax] = l;
  }

  // Each GELU belongs to the last attention before it; one MLP per layer.
  int64_t layer = -1;
  llvm::DenseSet<int64_t> withMlp;
  for (Operation &op : body) {
    if (layerOfOp.count(&op))
      layer = layerOfOp[&op];
    auto gelu = dyn_cast<GeluOp>(&op);
    if (!gelu)
      continue;
    if (layer < 0)
      return emitNodeError(gelu, "--ptrain-raise")
             << ("a GELU before the first attention is not part of a transformer layer");
    if (!withMlp.insert(layer).second)
      return emitNodeError(gelu, "--ptrain-raise") << ("layer ") << layer << " has a second GELU";
    MatmulOp up = producerMatmul(gelu.getInput(), /*throughSplits=*/false);
    MatmulOp down = consumerMatmul(gelu.getResult());
    if (!up || !getParameterRead(up.getRhs(), symbols) || !down || !getParameterRead(down.getRhs(), symbols))
      return emitNodeError(gelu, "--ptrain-raise")
             << ("the MLP's GELU is not between two linears with parameter weights");
    mark(up, layer, "mlp_up");
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
    int64_t layers = 0, linears = 0;
    if (failed(Raiser(fn, symbols).run(layers, linears)))
      return signalPassFailure();
    numLayers = layers;
    numLinears = linears;
  }
};
} // namespace
