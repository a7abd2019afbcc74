//===- ShardTP.cpp - Megatron tensor parallelism on the forward graph ----===//
//
// --ptrain-shard-tp: for each column-parallel / row-parallel pair that --ptrain-raise marked (the attention's
// fused Q|K|V and output projections, the MLP's up and down projections), inserts f before the column-parallel
// linear, slices both weights (and the column-parallel bias), propagates the local shapes through the ops
// between them (split, per-head reshapes, transposes, scores, mask, softmax, context, GELU), and inserts g
// after the row-parallel linear. Shoeybi et al. 2019, section 3.
//
// Propagation tracks, per value, which dimension is sharded, in how many groups the rank's slices of that
// dimension lie (3 for the output of the fused Q|K|V projection: Q, K and V each hold the rank's heads), and
// what part of the dimension lies outside the heads (a batch x heads dimension: Keras' einsum attention).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Transforms/TensorParallel.h"

#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"
#include "ptrain/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace mlir::ptrain {
#define GEN_PASS_DEF_SHARDTPPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// A sharded value: its sharded dimension, the number of groups the rank's slices of it form, and the size of
/// the dimension's outer part that is not sharded (1, or B where the heads are merged into a [B x heads]
/// batch dimension: Keras' einsum attention): the rank holds, for each outer index, its 1/tp of the rest.
struct Sharding {
  int64_t dim;
  int64_t groups;
  int64_t outer = 1;
};

class Sharder {
public:
  Sharder(ModuleOp module, int64_t tp) : module(module), tp(tp), b(module.getContext()), symbols(module) {}

  /// Shards the region from the column-parallel linears `columns` (in program order; one fused Q|K|V with
  /// `groups` = 3, or separate Q, K, V / SwiGLU's gate and up with `groups` = 1) to the row-parallel `row`.
  LogicalResult shardRegion(ArrayRef<MatmulOp> columns, MatmulOp row, int64_t groups);

  /// Gives each parameter that a region read sliced its local type where all its reads slice it alike; else
  /// (read whole elsewhere too, or sliced in two ways) it stays replicated and each sliced read takes the
  /// rank's part with ptrain.tp_split.
  void finish();

  int64_t numSliced = 0, numCollectives = 0, numSplits = 0;

private:
  /// One read of a parameter that a tensor-parallel region uses sliced along `dim` of the state in `groups`.
  struct SlicedRead {
    StateReadOp read;
    int64_t dim, groups;
  };

  /// Slices the parameter that `weight` reads (directly or through a transpose) along `dim` of `weight` in
  /// `groups` groups for the op `reader` (also the op of messages), and updates the types on the way.
  LogicalResult sliceParameter(Value weight, int64_t dim, int64_t groups, Operation *reader);
  /// The rank's part of the replicated `whole` along `dim` in `groups` groups (dimension `dim` viewed as
  /// groups x size/groups, the rank's part of the second), built before `before`.
  Value rankPart(Value whole, int64_t dim, int64_t groups, Operation *before);
  /// `v`, or where it has other uses than `reader`, a clone of its defining op that only `reader` uses.
  Value exclusiveTo(Value v, Operation *reader);
  /// Gives `op` the result types its (new) operands imply.
  LogicalResult reinfer(Operation *op);
  /// The local shapes of `op`, one of whose operands is sharded; records its sharded results.
  LogicalResult propagate(Operation *op);
  /// Broadcasting elementwise ops (binary, select, compare): slices full-size parameter operands.
  LogicalResult propagateElementwise(Operation *op);

  ModuleOp module;
  int64_t tp;
  OpBuilder b;
  SymbolTable symbols;
  llvm::DenseMap<Value, Sharding> sharded;
  /// Per parameter (in the order first sliced), its reads that a region slices.
  llvm::MapVector<StateOp, SmallVector<SlicedRead>> slicedReads;
};

} // namespace

/// `axis` in [0, rank) (a negative axis counts from the end).
static int64_t normalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

Value Sharder::rankPart(Value whole, int64_t dim, int64_t groups, Operation *before) {
  auto type = cast<RankedTensorType>(whole.getType());
  b.setInsertionPoint(before);
  Location loc = before->getLoc();
  Value part = whole;
  int64_t splitDim = dim;
  SmallVector<int64_t> viewed(type.getShape());
  if (groups > 1) {
    viewed[dim] = type.getShape()[dim] / groups;
    viewed.insert(viewed.begin() + dim, groups);
    part = ReshapeOp::create(b, loc, RankedTensorType::get(viewed, type.getElementType()), part);
    splitDim = dim + 1;
  }
  viewed[splitDim] /= tp;
  part = TPSplitOp::create(b, loc, RankedTensorType::get(viewed, type.getElementType()), part, "grid", "tp", splitDim);
  if (groups > 1) {
    SmallVector<int64_t> local(type.getShape());
    local[dim] /= tp;
    part = ReshapeOp::create(b, loc, RankedTensorType::get(local, type.getElementType()), part);
  }
  ++numSplits;
  return part;
}

Value Sharder::exclusiveTo(Value v, Operation *reader) {
  if (v.hasOneUse())
    return v;
  Operation *def = v.getDefiningOp();
  b.setInsertionPoint(def);
  Value copy = b.clone(*def)->getResult(cast<OpResult>(v).getResultNumber());
  reader->replaceUsesOfWith(v, copy);
  return copy;
}

LogicalResult Sharder::sliceParameter(Value weight, int64_t dim, int64_t groups, Operation *reader) {
  if (auto transpose = weight.getDefiningOp<TransposeOp>()) {
    // A weight read transposed in several places (a tied embedding used as a head): each reader transposes
    // its own read.
    transpose = cast<TransposeOp>(exclusiveTo(weight, reader).getDefiningOp());
    if (failed(sliceParameter(transpose.getInput(), transpose.getPerm()[dim], groups, transpose)))
      return failure();
    return reinfer(transpose);
  }
  auto read = weight.getDefiningOp<StateReadOp>();
  auto state = read ? symbols.lookup<StateOp>(read.getState()) : StateOp();
  if (!state || state.getKind() != StateKind::Parameter)
    return emitNodeError(reader, "--ptrain-shard-tp")
           << ("operand is not a parameter (a ptrain.state_read of a parameter, "
               "possibly transposed), so it cannot be sliced over tp");
  if (state->hasAttr(kTPSliceAttr))
    return emitNodeError(reader, "--ptrain-shard-tp") << ("parameter '") << state.getKey() << "' is already sliced";
  RankedTensorType type = state.getTensorType();
  int64_t size = type.getShape()[dim];
  if (size % (groups * tp) != 0)
    return emitNodeError(reader, "--ptrain-shard-tp")
           << ("dimension ") << dim << " of parameter '" << state.getKey() << "' (" << type << ") has size " << size
           << ", not divisible by " << (groups > 1 ? std::to_string(groups) + " x " : std::string()) << "tp = " << tp;
  // The state keeps its type until finish() knows all its readers; this read (one per reader) is local.
  read = cast<StateReadOp>(exclusiveTo(read.getResult(), reader).getDefiningOp());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= tp;
  read.getResult().setType(RankedTensorType::get(shape, type.getElementType()));
  slicedReads[state].push_back({read, dim, groups});
  return success();
}

void Sharder::finish() {
  llvm::DenseMap<StringAttr, int64_t> readsOf;
  module.walk([&](StateReadOp read) { ++readsOf[read.getStateAttr().getAttr()]; });
  for (auto &[state, reads] : slicedReads) {
    RankedTensorType type = state.getTensorType();
    const SlicedRead &first = reads.front();
    const bool alike =
        llvm::all_of(reads, [&](const SlicedRead &r) { return r.dim == first.dim && r.groups == first.groups; });
    if (alike && readsOf[state.getSymNameAttr()] == static_cast<int64_t>(reads.size())) {
      // Every reader slices it the same way (a parameter read by two layers: the exporter merged equal values).
      SmallVector<int64_t> shape(type.getShape());
      shape[first.dim] /= tp;
      setTPSlice(state, TPSliceAttr::get(b.getContext(), "tp", first.dim, first.groups, type.getShape(), /*padded=*/0));
      state.setTypeAttr(TypeAttr::get(RankedTensorType::get(shape, type.getElementType())));
      ++numSliced;
      continue;
    }
    // Read whole elsewhere too: the state stays whole and replicated; each sliced read takes the rank's part.
    // Dimension d in k groups is viewed as [k, size / k] and the rank's part taken of the second.
    emitRemark(state.getLoc()) << "--ptrain-shard-tp: parameter '" << state.getKey()
                               << "' is read whole elsewhere too (a tied weight, or equal values the exporter "
                                  "merged); it stays replicated and its tensor-parallel readers take the rank's part "
                                  "(ptrain.tp_split)";
    for (SlicedRead &r : reads) {
      Value local = r.read.getResult();
      SmallVector<OpOperand *> uses = llvm::to_vector(llvm::make_pointer_range(local.getUses()));
      local.setType(type);
      Value part = rankPart(local, r.dim, r.groups, r.read->getNextNode());
      for (OpOperand *use : uses)
        use->set(part);
    }
  }
}

LogicalResult Sharder::reinfer(Operation *op) {
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer) {
    // SameOperandsAndResultType ops (unary, softmax, gelu, cast keeps the shape).
    auto in = cast<RankedTensorType>(op->getOperand(0).getType());
    for (Value r : op->getResults())
      r.setType(in.clone(cast<RankedTensorType>(r.getType()).getElementType()));
    return success();
  }
  SmallVector<Type> types;
  if (failed(infer.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(), op->getRawDictionaryAttrs(),
                                    op->getPropertiesStorage(), op->getRegions(), types)))
    return emitNodeError(op, "--ptrain-shard-tp") << ("the op's local shapes do not fit together");
  for (auto [r, t] : llvm::zip(op->getResults(), types))
    r.setType(t);
  return success();
}

LogicalResult Sharder::propagateElementwise(Operation *op) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  const int64_t rank = resultType.getRank();
  std::optional<Sharding> out;
  for (Value operand : op->getOperands()) {
    auto it = sharded.find(operand);
    if (it == sharded.end())
      continue;
    Sharding s = {it->second.dim + rank - cast<RankedTensorType>(operand.getType()).getRank(), it->second.groups,
                  it->second.outer};
    if (out && (out->dim != s.dim || out->groups != s.groups || out->outer != s.outer))
      return emitNodeError(op, "--ptrain-shard-tp") << ("two operands are sharded along different dimensions");
    out = s;
  }
  for (OpOperand &operand : op->getOpOperands()) {
    if (sharded.count(operand.get()))
      continue;
    auto type = cast<RankedTensorType>(operand.get().getType());
    int64_t aligned = out->dim - (rank - type.getRank());
    if (aligned < 0 || type.getShape()[aligned] == 1)
      continue; // broadcast along the sharded dimension: a scale or a mask
    if (out->outer != 1)
      return emitNodeError(op, "--ptrain-shard-tp")
             << "operand " << operand.getOperandNumber()
             << " is not sharded, and the sharded heads are merged into a batch x heads dimension, whose rank's "
                "part is not one slice";
    if (getParameterRead(operand.get(), symbols)) {
      if (failed(sliceParameter(operand.get(), aligned, out->groups, op)))
        return failure();
      continue;
    }
    // Not sharded, so replicated (computed from replicated values only; every rank holds the same): a mask
    // expanded to all heads. The rank takes its part (its global size is the sharded operand's, a multiple of
    // groups x tp).
    operand.set(rankPart(operand.get(), aligned, out->groups, op));
  }
  sharded[op->getResult(0)] = *out;
  return reinfer(op);
}

LogicalResult Sharder::propagate(Operation *op) {
  if (isa<BinaryOp, SelectOp, CompareOp>(op))
    return propagateElementwise(op);
  // Heads merged into a batch x heads dimension pass only through ops that keep each element's place.
  if (!isa<ReshapeOp, TransposeOp, MatmulOp, UnaryOp, GeluOp, CastOp, SoftmaxOp>(op))
    for (Value operand : op->getOperands())
      if (auto it = sharded.find(operand); it != sharded.end() && it->second.outer != 1)
        return emitNodeError(op, "--ptrain-shard-tp")
               << ("cannot shard through this op: its operand's sharded heads are merged into a batch x heads "
                   "dimension");
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    // Appending to an empty key/value cache (the past of an export with one): the empty operand gets the
    // local shape; every other operand must be sharded alike.
    std::optional<Sharding> s;
    RankedTensorType inType;
    for (Value operand : op->getOperands())
      if (auto it = sharded.find(operand); it != sharded.end() && !s) {
        s = it->second;
        inType = cast<RankedTensorType>(operand.getType());
      }
    int64_t axis = normalizeAxis(static_cast<int64_t>(concat.getAxis()), inType.getRank());
    if (axis == s->dim)
      return emitNodeError(op, "--ptrain-shard-tp") << "concatenates along the sharded dimension";
    for (OpOperand &operand : op->getOpOperands()) {
      auto it = sharded.find(operand.get());
      if (it != sharded.end() && it->second.dim == s->dim && it->second.groups == s->groups)
        continue;
      auto type = cast<RankedTensorType>(operand.get().getType());
      if (it != sharded.end() || type.getNumElements() != 0)
        return emitNodeError(op, "--ptrain-shard-tp")
               << "operand " << operand.getOperandNumber() << " is neither sharded like the others nor empty";
      SmallVector<int64_t> shape(type.getShape());
      shape[s->dim] = inType.getShape()[s->dim];
      auto local = RankedTensorType::get(shape, type.getElementType());
      b.setInsertionPoint(op);
      operand.set(arith::ConstantOp::create(b, op->getLoc(), DenseElementsAttr::get(local, ArrayRef<Attribute>{})));
    }
    sharded[concat.getResult()] = *s;
    return reinfer(op);
  }
  Value in = op->getOperand(0);
  auto found = sharded.find(in);
  if (found == sharded.end())
    return emitNodeError(op, "--ptrain-shard-tp") << ("only the first operand of this op may be sharded");
  Sharding s = found->second;
  auto inType = cast<RankedTensorType>(in.getType());
  if (isa<UnaryOp, GeluOp, CastOp>(op)) {
    sharded[op->getResult(0)] = s;
    return reinfer(op);
  }
  if (auto dropout = dyn_cast<DropoutOp>(op)) {
    // Megatron-LM's model-parallel RNG (megatron/core/tensor_parallel/random.py) draws a sharded
    // activation's mask from a per-rank stream; here it is keyed by the global index (the rank's part of
    // the sharded dimension), so tp = N draws tp = 1's mask on every global element (PTrainModelOps.td).
    if (s.groups != 1 || s.dim < 1)
      return emitNodeError(op, "--ptrain-shard-tp")
             << "dropout on a value sharded along dimension " << s.dim << " in " << s.groups
             << " groups (a mask keyed by the global index needs one contiguous part of a dimension >= 1)";
    DropoutLayoutAttr layout = getDropoutLayout(dropout);
    setDropoutLayout(dropout, DropoutLayoutAttr::get(op->getContext(), layout ? layout.getBatchRows() : std::nullopt,
                                                     layout ? layout.getReplicaAxis() : "",
                                                     layout ? layout.getReplicaRows() : std::nullopt, "tp", s.dim));
    sharded[op->getResult(0)] = s;
    return reinfer(op);
  }
  if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
    int64_t axis = normalizeAxis(static_cast<int64_t>(softmax.getAxis()), inType.getRank());
    if (axis == s.dim)
      return emitNodeError(op, "--ptrain-shard-tp") << ("the softmax normalizes along the sharded dimension");
    sharded[op->getResult(0)] = s;
    return reinfer(op);
  }
  if (auto rotary = dyn_cast<RotaryEmbeddingOp>(op)) {
    // Q or K [B, heads, S, head_dim] sharded over the heads; cos and sin are per position.
    if (s.dim >= inType.getRank() - 2 || s.groups != 1)
      return emitNodeError(op, "--ptrain-shard-tp") << ("the rotary embedding's input is not sharded over its heads");
    sharded[op->getResult(0)] = s;
    return reinfer(op);
  }
  if (auto broadcast = dyn_cast<BroadcastToOp>(op)) {
    // Grouped-query attention repeats each of the rank's K/V heads for its query heads: the sharded
    // dimension keeps its local size (it cannot be a broadcast one: its global size is a multiple of tp).
    SmallVector<int64_t> shape(cast<RankedTensorType>(broadcast.getType()).getShape());
    int64_t dim = s.dim + static_cast<int64_t>(shape.size()) - inType.getRank();
    shape[dim] = inType.getShape()[s.dim];
    broadcast.getResult().setType(RankedTensorType::get(shape, inType.getElementType()));
    sharded[broadcast.getResult()] = {dim, s.groups};
    return success();
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = transpose.getPerm();
    sharded[op->getResult(0)] = {static_cast<int64_t>(llvm::find(perm, s.dim) - perm.begin()), s.groups, s.outer};
    return reinfer(op);
  }
  if (auto split = dyn_cast<SplitOp>(op)) {
    int64_t axis = normalizeAxis(static_cast<int64_t>(split.getAxis()), inType.getRank());
    if (axis != s.dim) {
      for (Value r : split.getResults())
        sharded[r] = s;
      return reinfer(op);
    }
    // Splitting the groups apart (Q, K and V of a fused projection): each part holds one group.
    ArrayRef<int64_t> sizes = split.getSizes();
    if (static_cast<int64_t>(sizes.size()) != s.groups || !llvm::all_equal(sizes))
      return emitNodeError(op, "--ptrain-shard-tp") << ("splits the sharded dimension into ") << sizes.size()
                                                    << " parts, but it holds " << s.groups << " equal groups (Q, K, V)";
    SmallVector<int64_t> local(sizes.size(), sizes.front() / tp);
    split.setSizes(local);
    for (Value r : split.getResults())
      sharded[r] = {s.dim, 1};
    return reinfer(op);
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    // The rank's heads start at a linear offset: the global dimensions before the sharded one times its outer
    // part. The result dimension j that holds that offset (after outer' = offset / the result dimensions before
    // j) holds the heads as the outer part of what follows outer': the rank's slice is the same 1/tp of it
    // (heads are the outer part of the hidden dimension; Keras merges the batch and the heads).
    SmallVector<int64_t> outShape(cast<RankedTensorType>(reshape.getType()).getShape());
    SmallVector<int64_t> globalIn(inType.getShape());
    globalIn[s.dim] *= tp;
    int64_t prefix = s.outer;
    for (int64_t d = 0; d < s.dim; ++d)
      prefix *= globalIn[d];
    const int64_t n = static_cast<int64_t>(outShape.size());
    int64_t outPrefix = 1, j = 0;
    while (j < n && outPrefix * outShape[j] <= prefix)
      outPrefix *= outShape[j++];
    const int64_t outer = prefix / outPrefix;
    if (j >= n || prefix % outPrefix != 0 || outShape[j] % (outer * tp) != 0)
      return emitNodeError(op, "--ptrain-shard-tp")
             << ("the reshape to ") << reshape.getType() << " does not keep the sharded dimension " << s.dim << " of "
             << inType << " (global) as the outer part of one result dimension divisible by tp = " << tp;
    // A dimension that holds groups (a fused Q|K|V) may only pass through whole (HF GPT-2 restores the batch
    // dimensions around its 2-D Gemm).
    if (s.groups != 1 && (outer != 1 || outShape[j] != globalIn[s.dim]))
      return emitNodeError(op, "--ptrain-shard-tp")
             << ("reshapes a dimension that holds ") << s.groups << " groups (split Q, K and V first)";
    outShape[j] /= tp;
    reshape.getResult().setType(RankedTensorType::get(outShape, inType.getElementType()));
    sharded[reshape.getResult()] = {j, s.groups, outer};
    return success();
  }
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    // A batched matmul over the heads (scores, context): both sides sharded along the same batch dimension.
    auto lhs = sharded.find(mm.getLhs()), rhs = sharded.find(mm.getRhs());
    auto resultType = cast<RankedTensorType>(mm.getType());
    auto batchDim = [&](Value v, Sharding sv) -> std::optional<int64_t> {
      int64_t r = cast<RankedTensorType>(v.getType()).getRank();
      if (sv.dim >= r - 2 || sv.groups != 1)
        return std::nullopt;
      return sv.dim + resultType.getRank() - r;
    };
    std::optional<int64_t> dl, dr;
    if (lhs != sharded.end() && rhs != sharded.end()) {
      dl = batchDim(mm.getLhs(), lhs->second);
      dr = batchDim(mm.getRhs(), rhs->second);
    }
    if (!dl || !dr || *dl != *dr || lhs->second.outer != rhs->second.outer)
      return emitNodeError(op, "--ptrain-shard-tp")
             << ("a matmul inside the tensor-parallel region must be batched over "
                 "the sharded heads on both sides");
    sharded[mm.getResult()] = {*dl, 1, lhs->second.outer};
    return reinfer(op);
  }
  return emitNodeError(op, "--ptrain-shard-tp") << ("cannot shard through this op");
}

LogicalResult Sharder::shardRegion(ArrayRef<MatmulOp> columns, MatmulOp row, int64_t groups) {
  sharded.clear();
  MatmulOp column = columns.front();
  // f: the replicated input enters the column-parallel linears, one f per distinct input.
  llvm::DenseMap<Value, Value> copies;
  for (MatmulOp mm : columns) {
    auto weight = cast<RankedTensorType>(mm.getRhs().getType());
    if (weight.getRank() != 2)
      return emitNodeError(mm, "--ptrain-shard-tp") << ("a column-parallel linear needs a 2-D weight, got ") << weight;
    Value &copy = copies[mm.getLhs()];
    if (!copy) {
      b.setInsertionPoint(mm);
      copy = TPCopyOp::create(b, mm.getLoc(), mm.getLhs(), "grid", "tp").getResult();
      ++numCollectives;
    }
    mm.getLhsMutable().assign(copy);
    if (failed(sliceParameter(mm.getRhs(), 1, groups, mm)) || failed(reinfer(mm)))
      return failure();
    auto out = cast<RankedTensorType>(mm.getType());
    sharded[mm.getResult()] = {out.getRank() - 1, groups};
  }

  for (Operation *op = column->getNextNode(); op; op = op->getNextNode()) {
    if (!llvm::any_of(op->getOperands(), [&](Value v) { return sharded.count(v); }))
      continue;
    if (op == row.getOperation()) {
      auto lhs = sharded.find(row.getLhs());
      auto lhsType = cast<RankedTensorType>(row.getLhs().getType());
      if (lhs == sharded.end() || lhs->second.dim != lhsType.getRank() - 1 || lhs->second.groups != 1 ||
          lhs->second.outer != 1 || sharded.count(row.getRhs()))
        return emitNodeError(row, "--ptrain-shard-tp")
               << ("the row-parallel linear's input is not sharded along its last "
                   "(contracted) dimension");
      Type before = row.getType();
      if (failed(sliceParameter(row.getRhs(), 0, 1, row)) || failed(reinfer(row)))
        return failure();
      if (row.getType() != before)
        return emitNodeError(row, "--ptrain-shard-tp") << ("the row-parallel linear's result changed type");
      // g: the partial sums of the ranks are added before the (replicated) bias.
      b.setInsertionPointAfter(row);
      auto g = TPAllReduceOp::create(b, row.getLoc(), row.getResult(), "grid", "tp");
      row.getResult().replaceAllUsesExcept(g.getResult(), g);
      ++numCollectives;
      // Nothing sharded may leave the region by another way.
      for (auto &[value, s] : sharded)
        for (Operation *user : value.getUsers())
          if (user->isBeforeInBlock(column) || (user != row.getOperation() && row->isBeforeInBlock(user)))
            return emitNodeError(user, "--ptrain-shard-tp")
                   << ("uses a tensor-parallel value of layer region ") << column->getLoc() << " outside that region";
      return success();
    }
    if (isa<func::ReturnOp>(op))
      break;
    if (failed(propagate(op)))
      return failure();
  }
  return emitNodeError(row, "--ptrain-shard-tp")
         << ("the row-parallel linear is not reached from its column-parallel one");
}

namespace {
struct ShardTPPass : public ptrain::impl::ShardTPPassBase<ShardTPPass> {
  using ShardTPPassBase::ShardTPPassBase;

  /// Layer `index`'s attention: the heads (and the K/V heads of grouped-query attention) over tp, then the
  /// region from its Q|K|V projection(s) (`fused`: one, else Q, K and V) to its output projection.
  LogicalResult shardAttention(Sharder &sharder, int64_t index, SoftmaxOp attention, ArrayRef<MatmulOp> columns,
                               MatmulOp out, bool fused) {
    auto attr = attention->getAttrOfType<DictionaryAttr>(kAttentionAttr);
    int64_t heads = cast<IntegerAttr>(attr.get("heads")).getInt();
    auto kvAttr = attr.getAs<IntegerAttr>("kv_heads");
    int64_t kvHeads = kvAttr ? kvAttr.getInt() : heads;
    if (heads % tp != 0)
      return emitNodeError(attention, "--ptrain-shard-tp")
             << ("layer ") << index << " has " << heads << " attention heads, not divisible by tp = " << tp.getValue();
    if (kvHeads % tp != 0)
      return emitNodeError(attention, "--ptrain-shard-tp")
             << ("layer ") << index << " has " << kvHeads
             << " key/value heads (grouped-query attention), not divisible by tp = " << tp.getValue();
    if (columns.size() != (fused ? 1u : 3u) || !out)
      return emitNodeError(attention, "--ptrain-shard-tp")
             << ("layer ") << index << " has no " << (fused ? "fused Q|K|V" : "Q, K and V")
             << " projection or no output projection marked by --ptrain-raise";
    return sharder.shardRegion(columns, out, fused ? 3 : 1);
  }

  /// Layer `index`'s MLP (up, or SwiGLU's gate and up, to down); with replicate-indivisible-mlp, an MLP whose
  /// width tp does not divide stays replicated (a remark says so).
  LogicalResult shardMlp(Sharder &sharder, int64_t index, ArrayRef<MatmulOp> columns, MatmulOp down) {
    if (columns.empty() && !down)
      return success();
    MatmulOp first = columns.empty() ? down : columns.front();
    if (columns.empty() || !down)
      return emitNodeError(first, "--ptrain-shard-tp")
             << ("layer ") << index << "'s MLP has no " << (columns.empty() ? "up" : "down") << " projection";
    int64_t width = cast<RankedTensorType>(first.getRhs().getType()).getShape().back();
    if (replicateIndivisibleMlp && width % tp != 0) {
      emitRemark(down.getLoc()) << "--ptrain-shard-tp: layer " << index << "'s MLP (width " << width
                                << ") is not divisible by tp = " << tp.getValue() << "; it stays replicated";
      return success();
    }
    return sharder.shardRegion(columns, down, 1);
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (tp < 1) {
      emitError(module.getLoc()) << "--ptrain-shard-tp: tp must be >= 1, got " << tp.getValue();
      return signalPassFailure();
    }
    auto fn = SymbolTable(module).lookup<func::FuncOp>(entry);
    if (!fn || fn.isExternal() || !fn.getBody().hasOneBlock()) {
      emitError(module.getLoc()) << "--ptrain-shard-tp: no function @" << entry << " with one block";
      return signalPassFailure();
    }
    // The stages and the step read the same parameters as @forward: after them every parameter looked like a
    // tied weight ("read elsewhere too"), or the pp grid had no tp axis.
    if (getPipeline(module) || module.lookupSymbol("train_step")) {
      emitError(module.getLoc()) << "--ptrain-shard-tp: the module is already "
                                 << (getPipeline(module) ? "split into pipeline stages"
                                                         : "a training step (@train_step)")
                                 << "; shard the forward first: --ptrain-raise --ptrain-shard-tp, then "
                                    "--ptrain-split-stages and --ptrain-build-training-step";
      return signalPassFailure();
    }
    if (!fn->hasAttr(kLayersAttr)) {
      mlir::emitError(fn.getLoc(), "--ptrain-shard-tp: @")
          << entry << " has no ptrain.layers: run --ptrain-raise first";
      return signalPassFailure();
    }
    if (tp == 1)
      return;
    // Per layer: the column- and row-parallel linears by role, and the attention's head count.
    struct Layer {
      SmallVector<MatmulOp, 3> attnColumns, mlpColumns; // program order
      MatmulOp attnOut, mlpDown;
      bool fusedQKV = false;
      SoftmaxOp attention;
    };
    std::map<int64_t, Layer> layers;
    for (Operation &op : fn.getBody().front()) {
      if (auto attr = op.getAttrOfType<DictionaryAttr>(kAttentionAttr))
        layers[cast<IntegerAttr>(attr.get("layer")).getInt()].attention = cast<SoftmaxOp>(op);
      auto attr = op.getAttrOfType<DictionaryAttr>(kLinearAttr);
      if (!attr)
        continue;
      Layer &layer = layers[cast<IntegerAttr>(attr.get("layer")).getInt()];
      StringRef role = cast<StringAttr>(attr.get("role")).getValue();
      auto mm = cast<MatmulOp>(op);
      if (role == "qkv" || role == "q" || role == "k" || role == "v")
        layer.attnColumns.push_back(mm);
      layer.fusedQKV |= role == "qkv";
      if (role == "attn_out")
        layer.attnOut = mm;
      else if (role == "mlp_up" || role == "mlp_gate")
        layer.mlpColumns.push_back(mm);
      else if (role == "mlp_down")
        layer.mlpDown = mm;
    }
    GridOp grid;
    for (GridOp g : module.getOps<GridOp>())
      grid = g;
    if (grid && (grid.getSymName() != "grid" || !grid.getAxisIndex("tp") || grid.getAxisSize("tp") != tp)) {
      grid.emitError("--ptrain-shard-tp: the module already has a grid without axis tp = ") << tp.getValue();
      return signalPassFailure();
    }
    if (!grid) {
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      GridOp::create(b, module.getLoc(), "grid", b.getStrArrayAttr({"tp"}), b.getDenseI64ArrayAttr({tp}));
    }
    // Dead ops (a dropped output's computation, e.g. the present key/value cache) would otherwise count as
    // tensor-parallel values leaving their layer.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(fn.getBody().front())))
      if (isOpTriviallyDead(&op))
        op.erase();
    Sharder sharder(module, tp);
    for (auto &[index, layer] : layers)
      if ((layer.attention &&
           failed(shardAttention(sharder, index, layer.attention, layer.attnColumns, layer.attnOut, layer.fusedQKV))) ||
          failed(shardMlp(sharder, index, layer.mlpColumns, layer.mlpDown)))
        return signalPassFailure();
    sharder.finish();
    numSliced = sharder.numSliced;
    numCollectives = sharder.numCollectives;
    numSplits = sharder.numSplits;
    // The vocabulary-parallel embedding, LM head and loss (lib/Transforms/VocabParallel.cpp).
    if (vocabParallel && failed(shardVocabParallel(module, fn, tp, vocabMultiple)))
      return signalPassFailure();
  }
};
} // namespace
