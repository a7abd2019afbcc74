//===- MultiRankExecutor.cpp - every rank of a plan in one process ------===//
//
// One RankProcess per grid rank: a stack of frames (function, next op, SSA values, requests) that the
// round-robin driver advances until the rank blocks on a wait or returns. Communication posts go into
// in-memory channels (point-to-point) and communicators (collectives), which complete requests when both
// sides, or every member, have posted. See MultiRankExecutor.h for the semantics.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Interpreter/MultiRankExecutor.h"

#include "AbstractSteps.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"
#include "ptrain/Interpreter/DropoutLayout.h"
#include "ptrain/Interpreter/Kernels.h"
#include "ptrain/Interpreter/StateDefaults.h"
#include "ptrain/Interpreter/VocabParallelKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <array>
#include <deque>
#include <map>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {

/// One posted communication operation on one rank.
struct Request {
  Operation *op = nullptr; ///< the *_start op
  int64_t rank = -1;       ///< the posting rank
  int64_t peer = -1;       ///< point-to-point: the other side
  bool complete = false;
  bool hasInput = false; ///< concrete mode: `input` holds the sent or contributed tensor
  Tensor input;
  bool hasResult = false; ///< concrete mode: `result` holds the received or reduced tensor
  Tensor result;
  Request *matched = nullptr;    ///< point-to-point: the other side's request once matched
  std::vector<Tensor> states;    ///< compressed all-reduce, concrete mode: the codec state operands
  std::vector<Tensor> newStates; ///< compressed all-reduce, concrete mode: the codec's new state
};

/// A function activation on one rank.
struct Frame {
  func::FuncOp fn;
  Block::iterator it;
  llvm::DenseMap<Value, Tensor> values;
  llvm::DenseMap<Value, Request *> requests;
  Operation *caller = nullptr; ///< the func.call whose results this frame's return binds
};

struct RankProcess {
  std::vector<Frame> stack;
  bool done = true;
  std::vector<Tensor> results;
  llvm::StringMap<Tensor> states;
  Operation *blockedAt = nullptr; ///< the wait this rank is blocked on
  Request *blockedOn = nullptr;
};

/// The members of one collective group and what each has posted, in order.
struct Communicator {
  std::string name;                          ///< `[pp] of ranks {0, 1}`
  std::vector<int64_t> members;              ///< ranks, in group-rank order
  std::vector<std::deque<Request *>> posted; ///< per member index
  int64_t waiting = 0;                       ///< members whose `posted` queue is empty
  int64_t completed = 0;                     ///< collectives completed so far
};

/// A communicator as one rank sees it: the group and the rank's index in it.
struct Membership {
  Communicator *comm = nullptr;
  int64_t index = -1;
};

/// A point-to-point channel: (axis index, source rank, destination rank, tag). Integers, not strings: the
/// 96-layer plan posts millions of transfers (bench/README.md, "plan").
using Channel = std::array<int64_t, 4>;

} // namespace

class mlir::ptrain::interp::MultiRankExecutor::Impl {
public:
  Impl(ModuleOp module, StateProvider initial, ExecutionMode mode)
      : module(module), symbols(module), initial(std::move(initial)), mode(mode), abstractSteps(symbols) {}

  llvm::Error init();
  int64_t numRanks() const { return static_cast<int64_t>(ranks.size()); }
  int64_t coordinate(int64_t rank, size_t axis) const {
    int64_t stride = 1;
    for (size_t d = sizes.size(); d-- > axis + 1;)
      stride *= sizes[d];
    return (rank / stride) % sizes[axis];
  }
  std::optional<size_t> axisIndex(StringRef name) const {
    for (auto [i, n] : llvm::enumerate(axisNames))
      if (n == name)
        return i;
    return std::nullopt;
  }
  std::string describeRank(int64_t rank) const {
    std::string text = "rank " + std::to_string(rank);
    if (axisNames.empty())
      return text;
    text += " (";
    for (auto [d, name] : llvm::enumerate(axisNames))
      text += (d ? ", " : "") + name + "=" + std::to_string(coordinate(rank, d));
    return text + ")";
  }

  llvm::Expected<std::vector<std::vector<Tensor>>> run(std::function<std::string(int64_t)> entryOf,
                                                       std::function<std::vector<Tensor>(int64_t)> argumentsOf);
  llvm::Error setSymmetricAxes(llvm::ArrayRef<std::string> axes);
  /// The size of axis `d` as the run sees it: 1 for an axis collapsed by setSymmetricAxes.
  int64_t runSize(size_t d) const { return collapsed[d] ? 1 : sizes[d]; }
  llvm::Expected<Tensor> loadState(int64_t rank, StateOp state);
  /// The rank's slice of a parameter that --ptrain-shard-tp sliced (`ptrain.tp_slice = #ptrain.tp_slice<axis,
  /// dim, groups, shape>`): dimension `dim` of the global value viewed as groups x axis-size x chunk, entry [:, c, :] for the
  /// rank's coordinate c on `axis`.
  llvm::Expected<Tensor> loadTensorParallelSlice(int64_t rank, StateOp state, TPSliceAttr slice);

  ModuleOp module;
  SymbolTable symbols;
  StateProvider initial;
  ExecutionMode mode;
  std::string gridName;
  std::vector<std::string> axisNames;
  std::vector<int64_t> sizes;
  std::vector<RankProcess> ranks;
  /// Per axis: collapsed by setSymmetricAxes (only coordinate 0 runs).
  std::vector<bool> collapsed;
  /// The ranks that run, in rank order (all of them unless axes are collapsed).
  std::vector<int64_t> active;
  /// setSendObserver's callback (may be null).
  MultiRankExecutor::SendObserver sendObserver;

private:
  /// Advances `rank` until it blocks or returns; returns whether it executed at least one op.
  llvm::Expected<bool> advance(int64_t rank);
  llvm::Error step(int64_t rank, Operation *op, bool &blocked);
  llvm::Error pointToPoint(int64_t rank, Operation *op, Request *request, StringRef grid, StringRef axis,
                           int64_t offset, bool isSend);
  /// Posts `request` on the communicator of `rank` over `axes` (restricted to `group`'s members when given).
  llvm::Error collective(int64_t rank, Operation *op, Request *request, StringRef grid, ArrayAttr axes,
                         std::optional<Subgroup> group = std::nullopt);
  llvm::Error complete(Communicator &comm);
  std::string describeOp(Operation *op) const;
  std::string describeRequest(const Request &request) const;
  llvm::Error rankError(int64_t rank, const llvm::Twine &message) const {
    return makeError(describeRank(rank) + ": " + message);
  }

  bool concrete() const { return mode == ExecutionMode::Concrete; }

  /// Abstract mode jumps over the ops that do nothing there (AbstractSteps.h).
  AbstractSteps abstractSteps;
  std::deque<std::unique_ptr<Request>> requests;
  /// Point-to-point posts not yet matched, by channel (of the module's one grid); an emptied channel is erased.
  std::map<Channel, std::deque<Request *>> unmatchedSends, unmatchedRecvs;
  std::map<std::string, Communicator> communicators;
  llvm::DenseMap<std::tuple<Attribute, Attribute, int64_t>, Membership> communicatorOf;
};

MultiRankExecutor::MultiRankExecutor(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
MultiRankExecutor::~MultiRankExecutor() = default;

llvm::Error MultiRankExecutor::Impl::init() {
  GridOp grid;
  for (GridOp g : module.getOps<GridOp>()) {
    if (grid)
      return makeError("the module has more than one ptrain.grid (@" + grid.getSymName() + ", @" + g.getSymName() +
                       "); the executor runs one grid");
    grid = g;
  }
  if (grid) {
    gridName = grid.getSymName().str();
    for (Attribute name : grid.getAxisNames())
      axisNames.push_back(cast<StringAttr>(name).getValue().str());
    sizes.assign(grid.getShape().begin(), grid.getShape().end());
  }
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  ranks.resize(n);
  collapsed.assign(sizes.size(), false);
  for (int64_t r = 0; r < n; ++r)
    active.push_back(r);
  return llvm::Error::success();
}

llvm::Error MultiRankExecutor::Impl::setSymmetricAxes(llvm::ArrayRef<std::string> axes) {
  if (concrete() && !axes.empty())
    return makeError("symmetric axes need the abstract mode (concrete ranks hold different values)");
  collapsed.assign(sizes.size(), false);
  for (const std::string &axis : axes) {
    std::optional<size_t> d = axisIndex(axis);
    if (!d)
      return makeError("the grid has no axis " + axis + " to treat as symmetric");
    collapsed[*d] = true;
  }
  active.clear();
  for (int64_t r = 0; r < numRanks(); ++r)
    if (llvm::all_of(llvm::seq<size_t>(0, sizes.size()), [&](size_t d) { return !collapsed[d] || !coordinate(r, d); }))
      active.push_back(r);
  return llvm::Error::success();
}

std::string MultiRankExecutor::Impl::describeOp(Operation *op) const {
  auto fn = op->getParentOfType<func::FuncOp>();
  int64_t index = 0;
  for (Operation &other : op->getBlock()->getOperations()) {
    if (&other == op)
      break;
    ++index;
  }
  std::string text = "'" + op->getName().getStringRef().str() + "'";
  if (auto tag = op->getAttrOfType<IntegerAttr>("ptrain.tag"))
    text += " (tag " + std::to_string(tag.getInt()) + ")";
  text += " at " + formatLocation(op->getLoc());
  if (fn)
    text += " in @" + fn.getSymName().str() + " (op " + std::to_string(index) + ")";
  return text;
}

std::string MultiRankExecutor::Impl::describeRequest(const Request &request) const {
  std::string text = describeOp(request.op);
  if (isa<SendStartOp>(request.op))
    text += ", a send to " + describeRank(request.peer) + " that has not posted the matching receive";
  else if (isa<RecvStartOp>(request.op))
    text += ", a receive from " + describeRank(request.peer) + " that has not posted the matching send";
  else
    text += ", a collective that not every member of its group has posted";
  return text;
}

llvm::Expected<Tensor> MultiRankExecutor::Impl::loadState(int64_t rank, StateOp state) {
  llvm::StringMap<Tensor> &stored = ranks[rank].states;
  StringRef key = state.getKey();
  auto it = stored.find(key);
  if (it != stored.end())
    return it->second;
  RankedTensorType type = state.getTensorType();
  Tensor value;
  if (state.getKind() == StateKind::Parameter) {
    TPSliceAttr slice = getTPSlice(state);
    llvm::Expected<Tensor> loaded =
        slice ? loadTensorParallelSlice(rank, state, slice) : loadParameter(initial, state, type);
    if (!loaded)
      return makeError("state @" + state.getSymName() + " (key '" + key + "'): " + toString(loaded.takeError()));
    value = std::move(*loaded);
  } else {
    llvm::Expected<DType> dtype = dtypeFromMLIR(type.getElementType());
    if (!dtype)
      return dtype.takeError();
    value = Tensor(*dtype, type.getShape());
  }
  if (!value.hasType(type))
    return makeError("state @" + state.getSymName() + " (key '" + key + "') is declared " + typeString(type) +
                     " but its value is " + value.getTypeString());
  stored[key] = value;
  return value;
}

static std::string attributeString(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << attr;
  return text;
}

llvm::Expected<Tensor> MultiRankExecutor::Impl::loadTensorParallelSlice(int64_t rank, StateOp state,
                                                                        TPSliceAttr slice) {
  // The slice's fit to the state's type is verified (PTrainAttrs.td, C1-C9); the grid's part is checked here.
  std::optional<size_t> found = axisIndex(slice.getAxis());
  if (!found)
    return makeError("ptrain.tp_slice " + attributeString(slice) + " needs axis (an axis of the grid)");
  const size_t d = *found;
  const int64_t dim = slice.getDim(), groups = slice.getGroups(), parts = sizes[d];
  ArrayRef<int64_t> shape = slice.getShape();
  RankedTensorType local = state.getTensorType();
  // A vocabulary padded to a multiple of tp: the initial value has `shape`, the ranks split `padded` entries.
  const bool padded = slice.getPadded() != 0;
  const int64_t split = slice.getPaddedSize();
  if (split != local.getShape()[dim] * parts)
    return makeError("ptrain.tp_slice " + attributeString(slice) + " does not fit the local type " + typeString(local) +
                     " on " + std::to_string(parts) + " ranks");
  llvm::Expected<Tensor> global = loadParameter(initial, state, RankedTensorType::get(shape, local.getElementType()));
  if (!global)
    return global.takeError();
  if (padded) {
    global = padTensorParallel(*global, dim, split);
    if (!global)
      return global.takeError();
  }
  return tensorParallelSlice(*global, dim, groups, parts, coordinate(rank, d));
}

llvm::Expected<Tensor> mlir::ptrain::interp::padTensorParallel(const Tensor &global, int64_t dim, int64_t padded) {
  ArrayRef<int64_t> shape = global.getShape();
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()) || padded < shape[dim])
    return makeError("cannot pad dimension " + std::to_string(dim) + " of " + global.getTypeString() + " to " +
                     std::to_string(padded));
  if (padded == shape[dim])
    return global;
  SmallVector<int64_t> zerosShape(shape);
  zerosShape[dim] = padded - shape[dim];
  Tensor zeros(global.getDType(), zerosShape);
  std::vector<const Tensor *> inputs = {&global, &zeros};
  return evalConcat(inputs, dim);
}

llvm::Expected<Tensor> mlir::ptrain::interp::tensorParallelSlice(const Tensor &global, int64_t dim, int64_t groups,
                                                                 int64_t parts, int64_t index) {
  ArrayRef<int64_t> shape = global.getShape();
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()) || groups < 1 || parts < 1 || index < 0 || index >= parts ||
      shape[dim] % (groups * parts) != 0)
    return makeError("cannot take part " + std::to_string(index) + " of " + std::to_string(parts) + " in " +
                     std::to_string(groups) + " group(s) along dimension " + std::to_string(dim) + " of " +
                     global.getTypeString());
  const int64_t chunk = shape[dim] / (groups * parts);
  std::vector<Tensor> pieces;
  for (int64_t g = 0; g < groups; ++g) {
    SmallVector<int64_t> offsets(shape.size(), 0), extent(shape);
    offsets[dim] = (g * parts + index) * chunk;
    extent[dim] = chunk;
    llvm::Expected<Tensor> piece = evalSlice(global, offsets, extent);
    if (!piece)
      return piece.takeError();
    pieces.push_back(std::move(*piece));
  }
  std::vector<const Tensor *> inputs;
  for (const Tensor &piece : pieces)
    inputs.push_back(&piece);
  return evalConcat(inputs, dim);
}

/// `[dp, pp]` for messages.
static std::string axesText(ArrayAttr axes) {
  std::string text = "[";
  for (auto [i, a] : llvm::enumerate(axes))
    text += (i ? ", " : "") + cast<StringAttr>(a).getValue().str();
  return text + "]";
}

llvm::Error MultiRankExecutor::Impl::pointToPoint(int64_t rank, Operation *op, Request *request, StringRef grid,
                                                  StringRef axis, int64_t offset, bool isSend) {
  if (grid != gridName)
    return makeError(describeOp(op) + ": grid @" + grid + " is not the module's grid");
  std::optional<size_t> d = axisIndex(axis);
  if (!d)
    return makeError(describeOp(op) + ": the grid has no axis " + axis);
  int64_t c = coordinate(rank, *d);
  if (c + offset < 0 || c + offset >= sizes[*d])
    return makeError(describeOp(op) + ": the peer at " + axis + " offset " + std::to_string(offset) +
                     " is outside the grid (" + axis + " = " + std::to_string(c) + " of " + std::to_string(sizes[*d]) +
                     ")");
  int64_t stride = 1;
  for (size_t e = sizes.size(); e-- > *d + 1;)
    stride *= sizes[e];
  request->peer = rank + offset * stride;
  int64_t tag = 0;
  if (auto attr = op->getAttrOfType<IntegerAttr>("ptrain.tag"))
    tag = attr.getInt();
  if (collapsed[*d])
    return makeError(describeOp(op) + ": a transfer on axis " + axis +
                     ", which the run treats as symmetric (verify every rank instead)");
  int64_t source = isSend ? rank : request->peer, destination = isSend ? request->peer : rank;
  Channel channel = {static_cast<int64_t>(*d), source, destination, tag};
  auto &otherSide = isSend ? unmatchedRecvs : unmatchedSends;
  auto others = otherSide.find(channel);
  if (others == otherSide.end()) {
    (isSend ? unmatchedSends : unmatchedRecvs)[channel].push_back(request);
    return llvm::Error::success();
  }
  Request *other = others->second.front();
  others->second.pop_front();
  if (others->second.empty())
    otherSide.erase(others);
  Request *send = isSend ? request : other, *recv = isSend ? other : request;
  // The sent tensor's type must be the one the receive expects.
  Type sent = cast<SendStartOp>(send->op).getInput().getType();
  Type expected = cast<RequestType>(cast<RecvStartOp>(recv->op).getRequest().getType()).getValueType();
  if (sent != expected)
    return makeError("mismatched transfer: " + describeRank(send->rank) + " sends " + typeString(sent) + " with " +
                     describeOp(send->op) + " but " + describeRank(recv->rank) + " receives " + typeString(expected) +
                     " with " + describeOp(recv->op));
  if (concrete()) {
    recv->result = send->input;
    recv->hasResult = true;
  }
  send->matched = recv;
  recv->matched = send;
  send->complete = recv->complete = true;
  return llvm::Error::success();
}

llvm::Error MultiRankExecutor::Impl::collective(int64_t rank, Operation *op, Request *request, StringRef grid,
                                                ArrayAttr axes, std::optional<Subgroup> group) {
  if (grid != gridName)
    return makeError(describeOp(op) + ": grid @" + grid + " is not the module's grid");
  std::vector<size_t> dims;
  for (Attribute a : axes) {
    std::optional<size_t> d = axisIndex(cast<StringAttr>(a).getValue());
    if (!d)
      return makeError(describeOp(op) + ": the grid has no axis " + cast<StringAttr>(a).getValue());
    dims.push_back(*d);
  }
  // A sub-group: only the ranks whose coordinate on `groupAxis` is a member (verified: the axis is one of the
  // op's axes and this rank is a member).
  std::optional<size_t> groupAxis;
  if (group) {
    groupAxis = axisIndex(group->axis);
    if (!groupAxis || !llvm::is_contained(dims, *groupAxis))
      return makeError(describeOp(op) + ": the subgroup's axis " + group->axis.str() +
                       " is not one of the collective's axes");
    if (collapsed[*groupAxis])
      return makeError(describeOp(op) + ": the subgroup's axis " + group->axis.str() +
                       " is collapsed as symmetric; run all ranks of it");
    if (!group->contains(coordinate(rank, *groupAxis)))
      return makeError(describeOp(op) + ": " + describeRank(rank) + " is not a member of the subgroup it posts on");
  }
  // The communicator: the axes (as a set) and this rank's coordinates on the other axes (cached per axes
  // attribute and rank: the key is built once).
  Membership &cached = communicatorOf[{axes, op->getAttr(kSubgroupAttr), rank}];
  if (!cached.comm) {
    std::vector<bool> inGroup(sizes.size(), false);
    for (size_t d : dims)
      inGroup[d] = true;
    std::string key = grid.str() + "/";
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (!inGroup[d]) {
        key += std::to_string(coordinate(rank, d)) + ",";
        continue;
      }
      key += "*";
      if (groupAxis && d == *groupAxis)
        for (int64_t c : group->members)
          key += ":" + std::to_string(c);
      key += ",";
    }
    cached.comm = &communicators[key];
    // The rank's group rank: row-major over the op's axes in the order listed (collapsed axes have size 1), the
    // subgroup axis counting its members only.
    cached.index = 0;
    for (size_t d : dims) {
      if (groupAxis && d == *groupAxis) {
        cached.index = cached.index * static_cast<int64_t>(group->members.size()) + group->indexOf(coordinate(rank, d));
        continue;
      }
      cached.index = cached.index * runSize(d) + (collapsed[d] ? 0 : coordinate(rank, d));
    }
  }
  Communicator &comm = *cached.comm;
  if (comm.members.empty()) {
    // Members in group-rank order: row-major over the op's axes in the order listed; of a collapsed axis only
    // coordinate 0 runs (its other coordinates are replicas, setSymmetricAxes).
    // Of the subgroup axis only its members, in increasing order.
    auto extent = [&](size_t d) {
      return groupAxis && d == *groupAxis ? static_cast<int64_t>(group->members.size()) : runSize(d);
    };
    int64_t groupSize = 1;
    bool representatives = false;
    for (size_t d : dims) {
      groupSize *= extent(d);
      representatives |= collapsed[d] && sizes[d] > 1;
    }
    for (int64_t g = 0; g < groupSize; ++g) {
      int64_t rest = g, member = 0, stride = 1;
      std::vector<int64_t> coords(sizes.size());
      for (size_t d = 0; d < sizes.size(); ++d)
        coords[d] = coordinate(rank, d);
      for (size_t i = dims.size(); i-- > 0;) {
        int64_t c = rest % extent(dims[i]);
        coords[dims[i]] = groupAxis && dims[i] == *groupAxis ? group->members[c] : c;
        rest /= extent(dims[i]);
      }
      for (size_t d = sizes.size(); d-- > 0;) {
        member += coords[d] * stride;
        stride *= sizes[d];
      }
      comm.members.push_back(member);
    }
    comm.posted.resize(groupSize);
    comm.waiting = groupSize;
    comm.name = axesText(axes);
    if (group) {
      comm.name += " (" + group->axis.str() + " members";
      for (int64_t c : group->members)
        comm.name += " " + std::to_string(c);
      comm.name += ")";
    }
    comm.name += " of ranks {";
    for (auto [i, m] : llvm::enumerate(comm.members))
      comm.name += (i ? ", " : "") + std::to_string(m);
    comm.name += representatives ? "} (the representatives of its symmetric replicas)" : "}";
  }
  std::deque<Request *> &mine = comm.posted[cached.index];
  if (mine.empty())
    --comm.waiting;
  mine.push_back(request);
  while (comm.waiting == 0)
    if (llvm::Error error = complete(comm))
      return error;
  return llvm::Error::success();
}

/// What two members' collectives must agree on: op name, input and result types, reduction, dims, root.
static std::string collectiveSignature(Operation *op) {
  std::string text = op->getName().getStringRef().str();
  Type result = op->getResult(0).getType();
  if (auto request = dyn_cast<RequestType>(result))
    result = request.getValueType();
  text += " of " + typeString(op->getOperand(0).getType()) + " -> " + typeString(result);
  if (auto a = dyn_cast<AllReduceStartOp>(op))
    text += " reduction " + stringifyReductionKind(a.getReduction()).str();
  if (auto r = dyn_cast<ReduceScatterStartOp>(op))
    text += " reduction " + stringifyReductionKind(r.getReduction()).str() + " scatter_dim " +
            std::to_string(r.getScatterDim());
  if (auto g = dyn_cast<AllGatherStartOp>(op))
    text += " gather_dim " + std::to_string(g.getGatherDim());
  if (auto t = dyn_cast<TPAllGatherOp>(op))
    text += " dim " + std::to_string(t.getDimAttr().getInt());
  if (auto b = dyn_cast<BroadcastStartOp>(op))
    text += " root " + std::to_string(b.getRoot());
  return text;
}

/// Whether two members' collectives agree (collectiveSignature): the same op trivially (the replicas of a
/// stage run one function), else compared without printing unless the types match.
static bool sameCollective(Operation *a, Operation *b) {
  if (a == b)
    return true;
  if (a->getName() != b->getName() || a->getOperand(0).getType() != b->getOperand(0).getType() ||
      a->getResult(0).getType() != b->getResult(0).getType())
    return false;
  return collectiveSignature(a) == collectiveSignature(b);
}

/// The sum of 16-bit `inputs` declared `accumulate = f32` (`ptrain.tp_all_reduce` C3): each element's values
/// widened exactly, added in fp32 in group-rank order and rounded once to the inputs' type (nearest even), the
/// runtime's ptrain_all_reduce_half_start bit for bit (docs/MixedPrecision.md, "16-bit TP collectives").
static Tensor reduceHalfInFp32(llvm::ArrayRef<const Tensor *> inputs) {
  Tensor out(inputs[0]->getDType(), inputs[0]->getShape());
  const int64_t n = out.getNumElements();
  for (int64_t i = 0; i < n; ++i) {
    float acc = static_cast<float>(inputs[0]->getAsDouble(i));
    for (const Tensor *t : inputs.drop_front())
      acc += static_cast<float>(t->getAsDouble(i));
    out.floats()[i] = roundToFloatDType(out.getDType(), acc);
  }
  return out;
}

/// The elementwise reduction of `inputs` in order, in double, rounded once.
static Tensor reduce(llvm::ArrayRef<const Tensor *> inputs, ReductionKind kind) {
  Tensor out(inputs[0]->getDType(), inputs[0]->getShape());
  const int64_t n = out.getNumElements();
  for (int64_t i = 0; i < n; ++i) {
    double acc = inputs[0]->getAsDouble(i);
    for (const Tensor *t : inputs.drop_front()) {
      double x = t->getAsDouble(i);
      switch (kind) {
      case ReductionKind::Sum:
      case ReductionKind::Avg:
        acc += x;
        break;
      case ReductionKind::Max:
        acc = std::max(acc, x);
        break;
      case ReductionKind::Min:
        acc = std::min(acc, x);
        break;
      }
    }
    if (kind == ReductionKind::Avg)
      acc /= static_cast<double>(inputs.size());
    if (out.isFloat())
      out.floats()[i] = acc;
    else
      out.ints()[i] = static_cast<int64_t>(acc);
  }
  out.roundToDType();
  return out;
}

llvm::Error MultiRankExecutor::Impl::complete(Communicator &comm) {
  std::vector<Request *> posts;
  for (std::deque<Request *> &q : comm.posted) {
    posts.push_back(q.front());
    q.pop_front();
    if (q.empty())
      ++comm.waiting;
  }
  const int64_t index = comm.completed++;
  for (Request *other : llvm::ArrayRef(posts).drop_front())
    if (!sameCollective(posts[0]->op, other->op))
      return makeError("mismatched collectives: collective #" + std::to_string(index) + " on the communicator " +
                       comm.name + " is " + collectiveSignature(posts[0]->op) + " on " + describeRank(posts[0]->rank) +
                       " (" + describeOp(posts[0]->op) + ") but " + collectiveSignature(other->op) + " on " +
                       describeRank(other->rank) + " (" + describeOp(other->op) + ")");
  if (concrete()) {
    std::vector<const Tensor *> inputs;
    for (Request *r : posts)
      inputs.push_back(&r->input);
    Operation *op = posts[0]->op;
    const size_t n = posts.size();
    std::vector<Tensor> results(n);
    if (auto g = dyn_cast<TPAllReduceOp>(op)) {
      Tensor reduced = g.getAccumulate() ? reduceHalfInFp32(inputs) : reduce(inputs, ReductionKind::Sum);
      for (Tensor &r : results)
        r = reduced;
    } else if (auto t = dyn_cast<TPAllGatherOp>(op)) {
      llvm::Expected<Tensor> gathered = evalConcat(inputs, t.getDimAttr().getInt());
      if (!gathered)
        return opError(op, gathered.takeError());
      for (Tensor &r : results)
        r = *gathered;
    } else if (auto a = dyn_cast<AllReduceStartOp>(op)) {
      Tensor reduced = reduce(inputs, a.getReduction());
      for (Tensor &r : results)
        r = reduced;
    } else if (auto r = dyn_cast<ReduceScatterStartOp>(op)) {
      Tensor reduced = reduce(inputs, r.getReduction());
      int64_t dim = r.getScatterDim();
      std::vector<int64_t> pieces(n, reduced.getShape()[dim] / static_cast<int64_t>(n));
      llvm::Expected<std::vector<Tensor>> split = evalSplit(reduced, dim, pieces);
      if (!split)
        return opError(op, split.takeError());
      results = std::move(*split);
    } else if (auto g = dyn_cast<AllGatherStartOp>(op)) {
      llvm::Expected<Tensor> gathered = evalConcat(inputs, g.getGatherDim());
      if (!gathered)
        return opError(op, gathered.takeError());
      for (Tensor &r : results)
        r = *gathered;
    } else if (auto b = dyn_cast<BroadcastStartOp>(op)) {
      for (Tensor &r : results)
        r = *inputs[b.getRoot()];
    } else if (isa<CompressedAllReduceStartOp, CompressedReduceScatterStartOp>(op)) {
      std::vector<std::vector<Tensor>> states;
      for (Request *post : posts)
        states.push_back(post->states);
      auto reduced = isa<CompressedAllReduceStartOp>(op)
                         ? evalCompressedAllReduce(cast<CompressedAllReduceStartOp>(op), inputs, states)
                         : evalCompressedReduceScatter(cast<CompressedReduceScatterStartOp>(op), inputs, states);
      if (!reduced)
        return opError(op, reduced.takeError());
      for (auto [post, result, member] : llvm::zip(posts, results, *reduced)) {
        result = std::move(member.first);
        post->newStates = std::move(member.second);
      }
    } else {
      return opError(op, makeError("the executor has no rule for this collective"));
    }
    for (auto [post, result] : llvm::zip(posts, results)) {
      post->result = std::move(result);
      post->hasResult = true;
    }
  }
  for (Request *r : posts)
    r->complete = true;
  return llvm::Error::success();
}

llvm::Error MultiRankExecutor::Impl::step(int64_t rank, Operation *op, bool &blocked) {
  RankProcess &process = ranks[rank];
  Frame &frame = process.stack.back();
  auto value = [&](Value v) -> const Tensor & { return frame.values.find(v)->second; };
  auto haveOperands = [&]() -> llvm::Error {
    if (!concrete())
      return llvm::Error::success();
    for (Value operand : op->getOperands())
      if (!isa<RequestType>(operand.getType()) && !frame.values.count(operand))
        return opError(op, makeError("an operand has no value (defined outside the function?)"));
    return llvm::Error::success();
  };
  if (llvm::Error error = haveOperands())
    return error;

  if (auto wait = dyn_cast<WaitOp>(op)) {
    Request *request = frame.requests.lookup(wait.getRequest());
    if (!request)
      return opError(op, makeError("waits on a request that no *_start of this function returned"));
    if (!request->complete) {
      blocked = true;
      process.blockedAt = op;
      process.blockedOn = request;
      return llvm::Error::success();
    }
    if (concrete() && wait.getResult()) {
      if (!request->hasResult || !request->result.hasType(cast<RankedTensorType>(wait.getResult().getType())))
        return opError(op, makeError("the completed communication yields no value of type " +
                                     typeString(wait.getResult().getType())));
      frame.values[wait.getResult()] = request->result;
    }
    frame.requests.erase(wait.getRequest());
    ++frame.it;
    return llvm::Error::success();
  }

  auto post = [&](Value result) {
    requests.push_back(std::make_unique<Request>());
    Request *request = requests.back().get();
    request->op = op;
    request->rank = rank;
    frame.requests[result] = request;
    return request;
  };
  if (auto send = dyn_cast<SendStartOp>(op)) {
    Request *request = post(send.getRequest());
    if (concrete()) {
      request->input = value(send.getInput());
      request->hasInput = true;
      if (sendObserver)
        if (llvm::Error error = sendObserver(rank, send, request->input))
          return opError(op, std::move(error));
    }
    ++frame.it;
    return pointToPoint(rank, op, request, send.getGrid(), send.getAxis(), send.getOffset(), /*isSend=*/true);
  }
  if (auto recv = dyn_cast<RecvStartOp>(op)) {
    Request *request = post(recv.getRequest());
    ++frame.it;
    return pointToPoint(rank, op, request, recv.getGrid(), recv.getAxis(), recv.getOffset(), /*isSend=*/false);
  }
  // A collective that completes in place: posted on the first visit (`contribute` fills in this rank's
  // part), the rank blocks at the op until every member has posted; null while it waits.
  auto inPlace = [&](Value key, StringRef grid, ArrayAttr axes,
                     llvm::function_ref<void(Request &)> contribute) -> llvm::Expected<Request *> {
    Request *request = frame.requests.lookup(key);
    if (!request) {
      request = post(key);
      if (concrete()) {
        contribute(*request);
        request->hasInput = true;
      }
      if (llvm::Error error = collective(rank, op, request, grid, axes))
        return std::move(error);
    }
    if (!request->complete) {
      blocked = true;
      process.blockedAt = op;
      process.blockedOn = request;
      return nullptr;
    }
    return request;
  };
  // A compressed all-reduce returns its new codec state with the request, so the executor completes it at the
  // start: the rank blocks there until every member has posted.
  auto compressedStart = [&](Value key, StringRef grid, ArrayAttr axes, Value input, ValueRange state,
                             ValueRange newState) -> llvm::Error {
    llvm::Expected<Request *> request = inPlace(key, grid, axes, [&](Request &r) {
      r.input = value(input);
      for (Value v : state)
        r.states.push_back(value(v));
    });
    if (!request || !*request)
      return request.takeError();
    if (concrete())
      for (auto [v, tensor] : llvm::zip(newState, (*request)->newStates))
        frame.values[v] = tensor;
    ++frame.it;
    return llvm::Error::success();
  };
  if (auto c = dyn_cast<CompressedAllReduceStartOp>(op))
    return compressedStart(c.getRequest(), c.getGrid(), c.getGridAxes(), c.getInput(), c.getState(),
                           c.getNewState());
  // ZeRO-1's compressed reduce-scatter likewise (its new residual comes with the request).
  if (auto c = dyn_cast<CompressedReduceScatterStartOp>(op))
    return compressedStart(c.getRequest(), c.getGrid(), c.getGridAxes(), c.getInput(), c.getState(),
                           c.getNewState());
  // Megatron's f is the identity forward; its all-reduce is in the backward, as a tp_all_reduce.
  if (auto f = dyn_cast<TPCopyOp>(op)) {
    if (concrete()) {
      // Copied before the insertion: operator[] may grow the map and move the input's entry (C++17 evaluates the
      // right operand of `=` first, so `values[r] = value(in)` would copy from a dangling reference; a bf16 step,
      // whose cast reads f's result, failed on it).
      Tensor input = value(f.getInput());
      frame.values[f.getResult()] = std::move(input);
    }
    ++frame.it;
    return llvm::Error::success();
  }
  // Megatron's g, and the vocabulary-parallel gather (PTrainVocabParallelOps.td), complete in place, like the
  // compressed all-reduce.
  if (isa<TPAllReduceOp, TPAllGatherOp>(op)) {
    auto grid = op->getAttrOfType<FlatSymbolRefAttr>("grid");
    auto axis = op->getAttrOfType<StringAttr>("axis");
    llvm::Expected<Request *> request =
        inPlace(op->getResult(0), grid.getValue(), ArrayAttr::get(op->getContext(), {axis}),
                [&](Request &r) { r.input = value(op->getOperand(0)); });
    if (!request || !*request)
      return request.takeError();
    if (concrete())
      frame.values[op->getResult(0)] = (*request)->result;
    ++frame.it;
    return llvm::Error::success();
  }
  if (isa<AllReduceStartOp, AllGatherStartOp, ReduceScatterStartOp, BroadcastStartOp>(op)) {
    Request *request = post(op->getResult(0));
    if (concrete()) {
      request->input = value(op->getOperand(0));
      request->hasInput = true;
    }
    ++frame.it;
    auto grid = op->getAttrOfType<FlatSymbolRefAttr>("grid");
    auto axes = op->getAttrOfType<ArrayAttr>("grid_axes");
    if (!grid || !axes)
      return opError(op, makeError("a collective needs its grid and grid_axes"));
    return collective(rank, op, request, grid.getValue(), axes, getSubgroup(op));
  }
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock())
      return opError(op, makeError("@" + call.getCallee() + " is not a function with one block"));
    if (process.stack.size() > 64)
      return opError(op, makeError("calls nest more than 64 deep (recursion?)"));
    Frame next;
    next.fn = callee;
    next.it = callee.getBody().front().begin();
    next.caller = op;
    if (concrete())
      for (auto [arg, operand] : llvm::zip(callee.getArguments(), call.getOperands()))
        next.values[arg] = value(operand);
    ++frame.it;
    process.stack.push_back(std::move(next)); // `frame` is invalid from here on.
    return llvm::Error::success();
  }
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    std::vector<Tensor> results;
    if (concrete())
      for (Value v : ret.getOperands())
        results.push_back(value(v));
    Operation *caller = frame.caller;
    process.stack.pop_back(); // `frame` is invalid from here on.
    if (!caller) {
      process.done = true;
      process.results = std::move(results);
      return llvm::Error::success();
    }
    if (concrete())
      for (auto [result, tensor] : llvm::zip(caller->getResults(), results))
        process.stack.back().values[result] = std::move(tensor);
    return llvm::Error::success();
  }
  if (auto read = dyn_cast<StateReadOp>(op)) {
    ++frame.it;
    if (!concrete())
      return llvm::Error::success();
    auto state = symbols.lookup<StateOp>(read.getState());
    if (!state)
      return opError(op, makeError("'" + read.getState() + "' does not name a ptrain.state"));
    llvm::Expected<Tensor> loaded = loadState(rank, state);
    if (!loaded)
      return opError(op, loaded.takeError());
    frame.values[read.getResult()] = std::move(*loaded);
    return llvm::Error::success();
  }
  if (auto write = dyn_cast<StateWriteOp>(op)) {
    ++frame.it;
    if (!concrete())
      return llvm::Error::success();
    auto state = symbols.lookup<StateOp>(write.getState());
    if (!state)
      return opError(op, makeError("'" + write.getState() + "' does not name a ptrain.state"));
    const Tensor &written = value(write.getValue());
    if (!written.hasType(state.getTensorType()))
      return opError(op, makeError("writes " + written.getTypeString() + " to a state of type " +
                                   typeString(state.getTensorType())));
    process.states[state.getKey()] = written;
    return llvm::Error::success();
  }
  ++frame.it;
  if (!concrete())
    return llvm::Error::success();
  // The vocabulary-parallel ops and dropout's layout depend on the rank's coordinate on their axis; everything
  // else is rank-free.
  auto rankCoordinate = [&](StringRef axis) -> std::optional<std::pair<int64_t, int64_t>> {
    std::optional<size_t> d = axisIndex(axis);
    if (!d)
      return std::nullopt;
    return std::make_pair(coordinate(rank, *d), sizes[*d]);
  };
  std::optional<llvm::Expected<std::vector<Tensor>>> evaluated = evaluateVocabParallelOp(op, value, rankCoordinate);
  // A rank's block of a replicated tensor (a tied parameter read inside a tensor-parallel region).
  if (auto slice = dyn_cast<TPSplitOp>(op)) {
    std::optional<std::pair<int64_t, int64_t>> at = rankCoordinate(slice.getAxis());
    if (!at)
      return opError(op, makeError("the grid has no axis '" + slice.getAxis() + "'"));
    llvm::Expected<Tensor> part =
        tensorParallelSlice(value(slice.getInput()), slice.getDimAttr().getInt(), 1, at->second, at->first);
    if (!part)
      return opError(op, part.takeError());
    std::vector<Tensor> results;
    results.push_back(std::move(*part));
    evaluated = std::move(results);
  }
  if (auto dropout = dyn_cast<DropoutOp>(op))
    evaluated = evaluateDropout(dropout, value, rankCoordinate);
  if (!evaluated)
    evaluated = evaluateOp(op, value);
  if (!evaluated)
    return opError(op, makeError("the reference interpreter has no rule for this op"));
  if (!*evaluated)
    return opError(op, evaluated->takeError());
  std::vector<Tensor> &results = **evaluated;
  if (results.size() != op->getNumResults())
    return opError(op, makeError("produced " + llvm::Twine(results.size()) + " values for " +
                                 llvm::Twine(op->getNumResults()) + " results"));
  for (auto [v, tensor] : llvm::zip(op->getResults(), results)) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !tensor.hasType(type))
      return opError(
          op, makeError("computed " + tensor.getTypeString() + " but the result type is " + typeString(v.getType())));
    frame.values[v] = std::move(tensor);
  }
  return llvm::Error::success();
}

llvm::Expected<bool> MultiRankExecutor::Impl::advance(int64_t rank) {
  RankProcess &process = ranks[rank];
  bool progress = false;
  while (!process.done) {
    Frame &frame = process.stack.back();
    Operation *op = &*frame.it;
    if (!concrete())
      if (Operation *next = abstractSteps.nextToStep(op); next != op)
        frame.it = Block::iterator(op = next);
    bool blocked = false;
    if (llvm::Error error = step(rank, op, blocked))
      return rankError(rank, toString(std::move(error)));
    if (blocked)
      return progress;
    process.blockedAt = nullptr;
    process.blockedOn = nullptr;
    progress = true;
  }
  return progress;
}

llvm::Expected<std::vector<std::vector<Tensor>>>
MultiRankExecutor::Impl::run(std::function<std::string(int64_t)> entryOf,
                             std::function<std::vector<Tensor>(int64_t)> argumentsOf) {
  requests.clear();
  unmatchedSends.clear();
  unmatchedRecvs.clear();
  communicators.clear();
  communicatorOf.clear();
  for (RankProcess &process : ranks) {
    process.stack.clear();
    process.done = true;
    process.results.clear();
  }
  for (int64_t r : active) {
    RankProcess &process = ranks[r];
    std::string entry = entryOf(r);
    auto fn = symbols.lookup<func::FuncOp>(entry);
    if (!fn || fn.isExternal())
      return rankError(r, "no func.func @" + entry + " with a body in the module");
    if (!fn.getBody().hasOneBlock())
      return rankError(r, "@" + entry + " has more than one block; control flow is not supported");
    Frame frame;
    frame.fn = fn;
    frame.it = fn.getBody().front().begin();
    if (concrete()) {
      std::vector<Tensor> arguments = argumentsOf(r);
      if (arguments.size() != fn.getNumArguments())
        return rankError(r, "@" + entry + " takes " + std::to_string(fn.getNumArguments()) + " arguments, got " +
                                std::to_string(arguments.size()));
      for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type || !arguments[i].hasType(type))
          return rankError(r, "argument " + std::to_string(i) + " of @" + entry + " is " + typeString(arg.getType()) +
                                  ", got " + arguments[i].getTypeString());
        frame.values[arg] = std::move(arguments[i]);
      }
    }
    process.stack.clear();
    process.stack.push_back(std::move(frame));
    process.done = false;
    process.results.clear();
    process.blockedAt = nullptr;
    process.blockedOn = nullptr;
  }
  while (true) {
    bool allDone = true, progress = false;
    for (int64_t r : active) {
      if (ranks[r].done)
        continue;
      llvm::Expected<bool> moved = advance(r);
      if (!moved) {
        for (RankProcess &process : ranks) {
          process.stack.clear();
          process.done = true;
        }
        return moved.takeError();
      }
      progress |= *moved;
      allDone &= ranks[r].done;
    }
    if (allDone)
      break;
    if (!progress) {
      std::string message = "deadlock: no rank can progress";
      for (int64_t r : active) {
        RankProcess &process = ranks[r];
        if (process.done)
          continue;
        message += "\n  " + describeRank(r) + " waits at " + describeOp(process.blockedAt) + " for " +
                   describeRequest(*process.blockedOn);
        process.stack.clear();
        process.done = true;
      }
      return makeError(message);
    }
  }
  // Every rank returned: a transfer or collective still unmatched was started but never waited on.
  for (auto *unmatched : {&unmatchedSends, &unmatchedRecvs})
    for (auto &[channel, posts] : *unmatched)
      if (!posts.empty())
        return makeError(describeRank(posts.front()->rank) + " returned with " + describeRequest(*posts.front()) +
                         " (never waited on)");
  for (auto &[key, comm] : communicators)
    for (auto [i, posts] : llvm::enumerate(comm.posted))
      if (!posts.empty())
        return makeError(describeRank(comm.members[i]) + " returned with " + describeRequest(*posts.front()) +
                         " on the communicator " + comm.name + " (never waited on)");
  std::vector<std::vector<Tensor>> results;
  for (RankProcess &process : ranks)
    results.push_back(std::move(process.results));
  return results;
}

llvm::Expected<std::unique_ptr<MultiRankExecutor>> MultiRankExecutor::create(ModuleOp module, StateProvider initial,
                                                                             ExecutionMode mode) {
  auto impl = std::make_unique<Impl>(module, std::move(initial), mode);
  if (llvm::Error error = impl->init())
    return std::move(error);
  return std::unique_ptr<MultiRankExecutor>(new MultiRankExecutor(std::move(impl)));
}

int64_t MultiRankExecutor::getNumRanks() const { return impl->numRanks(); }

llvm::ArrayRef<std::string> MultiRankExecutor::getAxisNames() const { return impl->axisNames; }

int64_t MultiRankExecutor::getAxisSize(llvm::StringRef axis) const {
  std::optional<size_t> d = impl->axisIndex(axis);
  return d ? impl->sizes[*d] : 1;
}

int64_t MultiRankExecutor::getCoordinate(int64_t rank, llvm::StringRef axis) const {
  std::optional<size_t> d = impl->axisIndex(axis);
  return d ? impl->coordinate(rank, *d) : 0;
}

std::string MultiRankExecutor::describeRank(int64_t rank) const { return impl->describeRank(rank); }

llvm::Error MultiRankExecutor::setSymmetricAxes(llvm::ArrayRef<std::string> axes) {
  return impl->setSymmetricAxes(axes);
}

void MultiRankExecutor::setSendObserver(SendObserver observer) { impl->sendObserver = std::move(observer); }

int64_t MultiRankExecutor::getNumActiveRanks() const { return static_cast<int64_t>(impl->active.size()); }

llvm::Expected<std::vector<std::vector<Tensor>>>
MultiRankExecutor::run(std::function<std::string(int64_t)> entryOf,
                       std::function<std::vector<Tensor>(int64_t)> argumentsOf) {
  return impl->run(std::move(entryOf), std::move(argumentsOf));
}

llvm::Expected<std::string> MultiRankExecutor::entryForRank(int64_t rank, llvm::StringRef kind,
                                                            llvm::StringRef fallback) const {
  int64_t stage = getCoordinate(rank, "pp");
  for (auto fn : impl->module.getOps<func::FuncOp>()) {
    auto entry = fn->getAttrOfType<StringAttr>("ptrain.entry");
    auto s = getStage(fn);
    if (entry && entry.getValue() == kind && s && s.getIndex() == stage)
      return fn.getSymName().str();
  }
  if (!fallback.empty() && impl->symbols.lookup<func::FuncOp>(fallback))
    return fallback.str();
  return makeError("no function with ptrain.entry = \"" + kind + "\" for stage " + llvm::Twine(stage) +
                   (fallback.empty() ? llvm::Twine("") : " and no @" + fallback) + " (run --ptrain-lower-to-runtime)");
}

const llvm::StringMap<Tensor> &MultiRankExecutor::getStates(int64_t rank) const { return impl->ranks[rank].states; }

llvm::Expected<Tensor> MultiRankExecutor::readState(int64_t rank, llvm::StringRef key) {
  for (StateOp state : impl->module.getOps<StateOp>())
    if (state.getKey() == key)
      return impl->loadState(rank, state);
  return makeError("the module has no state with key '" + key + "'");
}
