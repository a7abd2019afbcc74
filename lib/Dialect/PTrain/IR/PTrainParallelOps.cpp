//===- PTrainParallelOps.cpp - grid and communication ops --------*- C++ -*-===//

#include "PTrainGridAxes.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::ptrain;

//===----------------------------------------------------------------------===//
// Custom directive for the wait's types
//===----------------------------------------------------------------------===//

/// `: !ptrain.request<T>` gives the request type and, when it carries a value, the result type T.
static ParseResult parseWaitTypes(OpAsmParser &parser, Type &requestType, Type &resultType) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseType(requestType))
    return failure();
  auto request = dyn_cast<RequestType>(requestType);
  if (!request)
    return parser.emitError(loc) << "expected !ptrain.request type, got " << requestType;
  resultType = request.getValueType();
  return success();
}

static void printWaitTypes(OpAsmPrinter &printer, Operation *, Type requestType, Type) {
  printer << requestType;
}

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainParallelOps.cpp.inc"

//===----------------------------------------------------------------------===//
// GridOp
//===----------------------------------------------------------------------===//

LogicalResult GridOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  // (C1)
  if (getAxisNames().empty())
    return emitOpError("needs at least one axis");
  if (getAxisNames().size() != shape.size())
    return emitOpError() << "has " << getAxisNames().size() << " axis names but " << shape.size()
                         << " sizes";
  // (C2)
  for (auto [name, size] : llvm::zip(getAxisNames(), shape))
    if (size < 1)
      return emitOpError() << "axis '" << cast<StringAttr>(name).getValue() << "' has size " << size
                           << "; sizes must be >= 1";
  // (C3)
  llvm::SmallSet<StringRef, 4> seen;
  for (Attribute name : getAxisNames())
    if (!seen.insert(cast<StringAttr>(name).getValue()).second)
      return emitOpError() << "names axis '" << cast<StringAttr>(name).getValue() << "' twice";
  return success();
}

std::optional<unsigned> GridOp::getAxisIndex(StringRef name) {
  for (auto [i, axis] : llvm::enumerate(getAxisNames()))
    if (cast<StringAttr>(axis).getValue() == name)
      return i;
  return std::nullopt;
}

int64_t GridOp::getAxisSize(StringRef name) { return getShape()[*getAxisIndex(name)]; }

int64_t GridOp::getGroupSize(ArrayAttr axes) {
  int64_t size = 1;
  for (Attribute axis : axes)
    size *= getAxisSize(cast<StringAttr>(axis).getValue());
  return size;
}

int64_t GridOp::getNumRanks() {
  int64_t n = 1;
  for (int64_t s : getShape())
    n *= s;
  return n;
}

//===----------------------------------------------------------------------===//
// DistributeOp
//===----------------------------------------------------------------------===//

LogicalResult DistributeOp::verify() {
  auto inputType = getInput().getType();
  // (C1)
  if (static_cast<int64_t>(getSplit().size()) > inputType.getRank())
    return emitOpError() << "has " << getSplit().size() << " split entries but the input "
                         << inputType << " has only " << inputType.getRank() << " dimensions";
  // (C3)
  llvm::SmallSet<StringRef, 4> seen;
  for (Attribute dim : getSplit()) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitOpError() << "split entries must be lists of axis names, got " << dim;
    for (Attribute a : axes) {
      auto name = dyn_cast<StringAttr>(a);
      if (!name)
        return emitOpError() << "split entries must be lists of axis names, got " << a;
      if (!seen.insert(name.getValue()).second)
        return emitOpError() << "splits over grid axis '" << name.getValue() << "' twice";
    }
  }
  if (getResult().getType().getElementType() != inputType.getElementType())
    return emitOpError("result element type must equal the input element type");
  return success();
}

LogicalResult DistributeOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  // (C2)
  FailureOr<GridOp> grid = lookupGrid(*this, symbolTable, getGridAttr());
  if (failed(grid))
    return failure();
  auto inputType = getInput().getType();
  SmallVector<int64_t> local(inputType.getShape());
  for (auto [dim, entry] : llvm::enumerate(getSplit())) {
    auto axes = cast<ArrayAttr>(entry);
    if (axes.empty())
      continue;
    if (failed(verifyAxesExist(*this, *grid, axes, "split axes")))
      return failure();
    int64_t group = grid->getGroupSize(axes);
    if (ShapedType::isDynamic(local[dim]))
      continue;
    // (C4)
    if (local[dim] % group != 0 && !getPad())
      return emitOpError() << "splits dimension " << dim << " of size " << local[dim] << " over "
                           << group << " ranks " << axes
                           << ", which does not divide it; add 'pad' to pad it with zeros";
    local[dim] = llvm::divideCeil(local[dim], group);
  }
  // (C5)
  auto expected = inputType.clone(local);
  if (expected != getResult().getType())
    return emitOpError() << "result type must be the local block " << expected << ", got "
                         << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// SendStartOp, RecvStartOp
//===----------------------------------------------------------------------===//

/// (C1) and (C2) of send_start and recv_start: the peer along `axis` at `offset` exists.
static LogicalResult verifyPeer(Operation *op, SymbolTableCollection &symbolTable, FlatSymbolRefAttr grid,
                                StringRef axis, int64_t offset) {
  FailureOr<GridOp> gridOp = lookupGrid(op, symbolTable, grid);
  if (failed(gridOp))
    return failure();
  if (!gridOp->getAxisIndex(axis))
    return op->emitOpError() << "names axis '" << axis << "', but grid @" << gridOp->getSymName()
                             << " has axes " << gridOp->getAxisNames();
  int64_t size = gridOp->getAxisSize(axis);
  if (offset >= size || offset <= -size)
    return op->emitOpError() << "peer offset " << offset << " is out of range for axis '" << axis
                             << "' of size " << size;
  return success();
}

LogicalResult SendStartOp::verify() {
  if (getOffset() == 0)
    return emitOpError("peer offset must not be 0 (a rank cannot send to itself)");
  return success();
}

LogicalResult SendStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyPeer(*this, symbolTable, getGridAttr(), getAxis(), getOffset());
}

LogicalResult RecvStartOp::verify() {
  if (getOffset() == 0)
    return emitOpError("peer offset must not be 0 (a rank cannot receive from itself)");
  return success();
}

LogicalResult RecvStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyPeer(*this, symbolTable, getGridAttr(), getAxis(), getOffset());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceStartOp::verify() {
  if (failed(verifyAxesUnique(*this, getGridAxes(), "collective axes")))
    return failure();
  // (C4)-(C6), (C8): the optional sub-group (PTrainSubgroup.h).
  return verifySubgroup(*this, getGridAxes());
}

LogicalResult AllReduceStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (failed(verifyCollectiveGroup(*this, symbolTable, getGridAttr(), getGridAxes())))
    return failure();
  // (C7)
  return verifySubgroupInGrid(*this, *lookupGrid(*this, symbolTable, getGridAttr()));
}

LogicalResult BroadcastStartOp::verify() { return verifyAxesUnique(*this, getGridAxes(), "collective axes"); }

LogicalResult BroadcastStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> group = verifyCollectiveGroup(*this, symbolTable, getGridAttr(), getGridAxes());
  if (failed(group))
    return failure();
  // (C4)
  if (getRoot() < 0 || getRoot() >= *group)
    return emitOpError() << "root " << getRoot() << " is not a rank of the group of size " << *group;
  return success();
}

/// The request's value type for gather/scatter collectives; verified against `dim` < rank first.
static LogicalResult verifyResizedDim(Operation *op, RankedTensorType input, Type request, int64_t dim,
                                      StringRef dimName) {
  if (dim < 0 || dim >= input.getRank())
    return op->emitOpError() << dimName << " " << dim << " is out of range for " << input;
  auto value = cast<RankedTensorType>(cast<RequestType>(request).getValueType());
  if (value.getElementType() != input.getElementType() || value.getRank() != input.getRank())
    return op->emitOpError() << "request must yield a tensor of the input's rank and element type, got "
                             << value;
  return success();
}

/// Checks that the request yields `input` with dimension `dim` set to `size`.
static LogicalResult verifyResizedResult(Operation *op, RankedTensorType input, Type request, int64_t dim,
                                         int64_t size) {
  SmallVector<int64_t> shape(input.getShape());
  shape[dim] = size;
  auto expected = RequestType::get(op->getContext(), input.clone(shape));
  if (expected != request)
    return op->emitOpError() << "request type must be " << expected << ", got " << request;
  return success();
}

LogicalResult AllGatherStartOp::verify() {
  if (failed(verifyAxesUnique(*this, getGridAxes(), "collective axes")))
    return failure();
  // (C4)
  return verifyResizedDim(*this, getInput().getType(), getRequest().getType(), getGatherDim(), "gather_dim");
}

LogicalResult AllGatherStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> group = verifyCollectiveGroup(*this, symbolTable, getGridAttr(), getGridAxes());
  if (failed(group))
    return failure();
  // (C5)
  auto input = getInput().getType();
  int64_t dim = input.getDimSize(getGatherDim());
  return verifyResizedResult(*this, input, getRequest().getType(), getGatherDim(),
                             ShapedType::isDynamic(dim) ? dim : dim * *group);
}

LogicalResult ReduceScatterStartOp::verify() {
  if (failed(verifyAxesUnique(*this, getGridAxes(), "collective axes")))
    return failure();
  // (C4)
  return verifyResizedDim(*this, getInput().getType(), getRequest().getType(), getScatterDim(),
                          "scatter_dim");
}

LogicalResult ReduceScatterStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> group = verifyCollectiveGroup(*this, symbolTable, getGridAttr(), getGridAxes());
  if (failed(group))
    return failure();
  auto input = getInput().getType();
  int64_t dim = input.getDimSize(getScatterDim());
  // (C5)
  if (!ShapedType::isDynamic(dim) && dim % *group != 0)
    return emitOpError() << "scatters dimension " << getScatterDim() << " of size " << dim << " over "
                         << *group << " ranks " << getGridAxes() << ", which does not divide it";
  // (C6)
  return verifyResizedResult(*this, input, getRequest().getType(), getScatterDim(),
                             ShapedType::isDynamic(dim) ? dim : dim / *group);
}

//===----------------------------------------------------------------------===//
// WaitOp
//===----------------------------------------------------------------------===//

LogicalResult WaitOp::verify() {
  // (C1)
  if (!getRequest().getDefiningOp<AsyncStartOpInterface>())
    return emitOpError("waits on a request that was never started: it is not the result of a *_start op");
  // (C2) Reported on every wait but the first one in block order.
  SmallVector<Operation *> waits;
  for (Operation *user : getRequest().getUsers())
    if (isa<WaitOp>(user))
      waits.push_back(user);
  Operation *self = getOperation();
  bool isFirst = llvm::all_of(waits, [&](Operation *other) {
    return other == self || (other->getBlock() == self->getBlock() && self->isBeforeInBlock(other));
  });
  if (!isFirst)
    return emitOpError() << "waits on a request that is waited on " << waits.size()
                         << " times; each request is waited on exactly once";
  // (C3)
  Type valueType = getRequest().getType().getValueType();
  Type resultType = getResult() ? getResult().getType() : Type();
  if (valueType != resultType)
    return emitOpError() << "result must be " << (valueType ? "of the request's value type" : "absent")
                         << " for " << getRequest().getType();
  return success();
}
