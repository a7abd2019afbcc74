//===- VocabParallel.cpp - vocabulary-parallel embedding, LM head and loss -===//
//
// --ptrain-shard-tp="vocab-parallel=true": Megatron-LM's vocabulary-parallel token embedding and LM head
// (Shoeybi et al. 2019, section 3; megatron/core/tensor_parallel/layers.py VocabParallelEmbedding,
// ColumnParallelLinear with gather_output=False) and the parallel cross-entropy of the training step's loss
// (megatron/core/tensor_parallel/cross_entropy.py), on the forward graph that --ptrain-raise marked.
//
// The vocabulary V is padded to Vp, a multiple of tp x vocab-multiple; rank r holds rows [r Vl, (r + 1) Vl)
// (Vl = Vp / tp) of the embedding table and of the head's weight (one sharded symbol when they are tied).
// The forward still returns the whole logits (a ptrain.tp_all_gather, cut back to V), so it keeps its
// meaning for evaluation; createCrossEntropy makes the training step's loss read the local logits instead,
// and the gather is then dead and removed: the logits are never gathered in the step.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Transforms/TensorParallel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

static constexpr llvm::StringLiteral kPass = "--ptrain-shard-tp";

namespace {
/// A use of the vocabulary-parallel parameter: the op that reads it and the parameter's vocabulary dimension.
struct VocabUse {
  Operation *user;
  StateReadOp read;
  int64_t dim;
};
} // namespace

/// Slices `state` along `dim` (the vocabulary, padded to `padded`) over tp and gives every read (and the
/// transposes reading them) the local type.
static void sliceVocabState(StateOp state, int64_t dim, int64_t padded, int64_t tp, ModuleOp module) {
  OpBuilder b(state.getContext());
  RankedTensorType type = state.getTensorType();
  setTPSlice(state, TPSliceAttr::get(b.getContext(), "tp", dim, /*groups=*/1, type.getShape(),
                                     /*padded=*/padded != type.getDimSize(dim) ? padded : 0));
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = padded / tp;
  auto local = RankedTensorType::get(shape, type.getElementType());
  state.setTypeAttr(TypeAttr::get(local));
  module.walk([&](StateReadOp read) {
    if (read.getState() != state.getSymName())
      return;
    read.getResult().setType(local);
    for (Operation *user : read->getUsers())
      if (auto transpose = dyn_cast<TransposeOp>(user)) {
        SmallVector<int64_t> permuted;
        for (int64_t p : transpose.getPerm())
          permuted.push_back(shape[p]);
        transpose.getResult().setType(RankedTensorType::get(permuted, local.getElementType()));
      }
  });
}

/// Checks that every read of the parameter behind `uses` feeds one of `uses` (directly or through a
/// transpose used once) and that all agree on the vocabulary dimension; the symbol's state.
static FailureOr<StateOp> checkVocabUses(ArrayRef<VocabUse> uses, SymbolTable &symbols, ModuleOp module) {
  StateReadOp first = uses.front().read;
  StringRef symbol = first.getState();
  auto state = symbols.lookup<StateOp>(symbol);
  for (const VocabUse &use : uses)
    if (use.dim != uses.front().dim)
      return emitNodeError(use.user, kPass) << "the tied vocabulary-parallel parameter '" << state.getKey()
                                            << "' has its vocabulary in another dimension here than at its other use";
  WalkResult walk = module.walk([&](StateReadOp read) {
    if (read.getState() != symbol)
      return WalkResult::advance();
    for (Operation *user : read->getUsers()) {
      Operation *reader = user;
      if (isa<TransposeOp>(user) && user->hasOneUse())
        reader = *user->getUsers().begin();
      if (llvm::none_of(uses, [&](const VocabUse &u) { return u.user == reader; })) {
        emitNodeError(user, kPass) << "reads the vocabulary-parallel parameter '" << state.getKey()
                                   << "' besides the token embedding and the LM head; it cannot be sliced over tp";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return state;
}

LogicalResult mlir::ptrain::shardVocabParallel(ModuleOp module, func::FuncOp fn, int64_t tp, int64_t multiple) {
  if (multiple < 1)
    return emitError(fn.getLoc()) << kPass << ": vocab-multiple must be >= 1, got " << multiple;
  SymbolTable symbols(module);
  Block &body = fn.getBody().front();
  MatmulOp head;
  EmbeddingOp embedding;
  for (Operation &op : body) {
    if (auto attr = op.getAttrOfType<DictionaryAttr>(kLinearAttr))
      if (cast<StringAttr>(attr.get("role")).getValue() == "lm_head")
        head = cast<MatmulOp>(op);
    if (auto e = dyn_cast<EmbeddingOp>(op); e && fn.getNumArguments() > 0 && e.getIds() == fn.getArgument(0)) {
      if (embedding)
        return emitNodeError(e, kPass) << "a second embedding of the tokens; vocab-parallel=true needs one";
      embedding = e;
    }
  }
  if (!head)
    return mlir::emitError(fn.getLoc())
           << kPass
           << ": vocab-parallel=true needs the LM head (the linear that --ptrain-raise marks "
              "role = \"lm_head\"); @"
           << fn.getSymName() << " has none";
  if (!embedding)
    return mlir::emitError(fn.getLoc()) << kPass
                                        << ": vocab-parallel=true needs the token embedding (a ptrain.embedding of @"
                                        << fn.getSymName() << "'s first argument); there is none";
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (!head.getResult().hasOneUse() || ret.getNumOperands() == 0 || ret.getOperand(0) != head.getResult())
    return emitNodeError(head, kPass) << "the LM head's logits must be the forward's first result and have no other "
                                         "use, so that the loss can read them sharded";
  auto weight = cast<RankedTensorType>(head.getRhs().getType());
  auto logits = cast<RankedTensorType>(head.getType());
  StateReadOp headRead = getParameterRead(head.getRhs(), symbols);
  if (!headRead || weight.getRank() != 2)
    return emitNodeError(head, kPass) << "the LM head's weight is not a 2-D parameter (a ptrain.state_read, "
                                         "possibly transposed), so it cannot be split over the vocabulary";
  auto transpose = head.getRhs().getDefiningOp<TransposeOp>();
  const int64_t headDim = transpose ? transpose.getPerm()[1] : 1;
  auto tableRead = embedding.getTable().getDefiningOp<StateReadOp>();
  auto tableState = tableRead ? symbols.lookup<StateOp>(tableRead.getState()) : StateOp();
  if (!tableState || tableState.getKind() != StateKind::Parameter)
    return emitNodeError(embedding, kPass) << "the token embedding's table is not a parameter, so it cannot be "
                                              "split over the vocabulary";
  const int64_t vocab = tableState.getTensorType().getDimSize(0);
  if (logits.getShape().back() != vocab || weight.getDimSize(1) != vocab)
    return emitNodeError(head, kPass) << "the LM head makes " << logits.getShape().back()
                                      << " logits per position, but the token embedding has " << vocab << " rows";
  const int64_t step = tp * multiple, padded = (vocab + step - 1) / step * step;

  SmallVector<VocabUse> tableUses = {{embedding, tableRead, 0}};
  SmallVector<VocabUse> headUses = {{head, headRead, headDim}};
  if (headRead.getState() == tableRead.getState()) {
    tableUses.append(headUses);
    headUses.clear();
  }
  for (ArrayRef<VocabUse> uses : {ArrayRef<VocabUse>(tableUses), ArrayRef<VocabUse>(headUses)}) {
    if (uses.empty())
      continue;
    FailureOr<StateOp> state = checkVocabUses(uses, symbols, module);
    if (failed(state))
      return failure();
    if ((*state)->hasAttr(kTPSliceAttr))
      return emitNodeError(uses.front().user, kPass) << "parameter '" << state->getKey() << "' is already sliced";
    sliceVocabState(*state, uses.front().dim, padded, tp, module);
  }

  // The embedding: each rank looks up its rows (zero elsewhere), g sums the parts.
  OpBuilder b(embedding);
  auto part = VocabParallelEmbeddingOp::create(b, embedding.getLoc(), embedding.getType(), embedding.getTable(),
                                               embedding.getIds(), "grid", "tp");
  auto whole = TPAllReduceOp::create(b, embedding.getLoc(), part.getResult(), "grid", "tp");
  embedding.getResult().replaceAllUsesWith(whole.getResult());
  embedding.erase();

  // The head: f before it (its input's gradient is summed over tp), the rank's Vl logits, gathered for the
  // forward's result and cut back to the real vocabulary.
  b.setInsertionPoint(head);
  auto f = TPCopyOp::create(b, head.getLoc(), head.getLhs(), "grid", "tp");
  head.getLhsMutable().assign(f.getResult());
  SmallVector<int64_t> shape(logits.getShape());
  shape.back() = padded / tp;
  head.getResult().setType(RankedTensorType::get(shape, logits.getElementType()));
  b.setInsertionPointAfter(head);
  shape.back() = padded;
  Value out = TPAllGatherOp::create(b, head.getLoc(), RankedTensorType::get(shape, logits.getElementType()),
                                    head.getResult(), "grid", "tp", logits.getRank() - 1);
  if (padded != vocab)
    out = SliceOp::create(b, head.getLoc(), out, b.getDenseI64ArrayAttr(SmallVector<int64_t>(logits.getRank(), 0)),
                          b.getDenseI64ArrayAttr(logits.getShape()));
  ret.setOperand(0, out);
  return success();
}

/// Megatron's parallel cross-entropy of the rank's logits [..., Vl] (columns [r Vl, (r + 1) Vl) of the padded
/// vocabulary) against `labels`: the global maximum per position (the ranks' maxima gathered, then reduced),
/// the rank's exp-sum and target logit (ptrain.vocab_parallel_cross_entropy_parts), both summed over tp, and
/// the mean of log(sum) - target over the positions, replicated on every rank.
static Value buildVocabParallelLoss(OpBuilder &b, Location loc, Value local, Value labels, int64_t vocab,
                                    StringRef grid, StringRef axis, int64_t tp) {
  auto type = cast<RankedTensorType>(local.getType());
  const int64_t rank = type.getRank();
  Value localMax = ReduceOp::create(b, loc, ReduceKind::Max, local, ArrayRef<int64_t>{rank - 1}, false);
  auto rowType = cast<RankedTensorType>(localMax.getType());
  SmallVector<int64_t> one = {1}, all = {tp};
  llvm::append_range(one, rowType.getShape());
  llvm::append_range(all, rowType.getShape());
  Value stacked = ReshapeOp::create(b, loc, RankedTensorType::get(one, rowType.getElementType()), localMax);
  Value gathered = TPAllGatherOp::create(b, loc, RankedTensorType::get(all, rowType.getElementType()), stacked, grid,
                                         axis, /*dim=*/0);
  Value max = ReduceOp::create(b, loc, ReduceKind::Max, gathered, ArrayRef<int64_t>{0}, false);
  auto parts = VocabParallelCrossEntropyPartsOp::create(b, loc, local, labels, max, grid, axis, vocab);
  Value sum = TPAllReduceOp::create(b, loc, parts.getSumExp(), grid, axis);
  Value target = TPAllReduceOp::create(b, loc, parts.getTarget(), grid, axis);
  Value perPosition = BinaryOp::create(b, loc, BinaryKind::Sub, UnaryOp::create(b, loc, UnaryKind::Log, sum), target);
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < rowType.getRank(); ++d)
    axes.push_back(d);
  return ReduceOp::create(b, loc, ReduceKind::Mean, perPosition, axes, false);
}

Value mlir::ptrain::createCrossEntropy(OpBuilder &b, Location loc, Value logits, Value labels) {
  auto type = cast<RankedTensorType>(logits.getType());
  const int64_t rank = type.getRank();
  // logits = slice*(tp_all_gather(local)) with the slices cutting the positions and the padding only.
  SmallVector<SliceOp> slices;
  Value v = logits;
  while (auto slice = v.getDefiningOp<SliceOp>()) {
    if (slice.getOffsets().back() != 0)
      return CrossEntropyOp::create(b, loc, logits, labels);
    slices.push_back(slice);
    v = slice.getInput();
  }
  auto gather = v.getDefiningOp<TPAllGatherOp>();
  if (!gather || gather.getDimAttr().getInt() != rank - 1)
    return CrossEntropyOp::create(b, loc, logits, labels);
  Value local = gather.getInput();
  auto localType = cast<RankedTensorType>(local.getType());
  SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape());
  for (SliceOp slice : slices)
    for (int64_t d = 0; d + 1 < rank; ++d)
      offsets[d] += slice.getOffsets()[d];
  sizes.back() = localType.getShape().back();
  if (llvm::any_of(offsets, [](int64_t o) { return o != 0; }) || ArrayRef(sizes) != localType.getShape())
    local = SliceOp::create(b, loc, local, b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(sizes));
  const int64_t tp = cast<RankedTensorType>(gather.getType()).getShape().back() / localType.getShape().back();
  Value loss =
      buildVocabParallelLoss(b, loc, local, labels, type.getShape().back(), gather.getGrid(), gather.getAxis(), tp);
  // The whole logits are no longer needed by the step.
  for (SliceOp slice : slices)
    if (slice->use_empty())
      slice.erase();
  if (gather->use_empty())
    gather.erase();
  return loss;
}
