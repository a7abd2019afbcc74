//===- PTrainGridAxes.cpp - naming axes of a ptrain.grid ---------*- C++ -*-===//

#include "PTrainGridAxes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::ptrain;

ParseResult mlir::ptrain::parseGridAxes(OpAsmParser &parser, ArrayAttr &axes) {
  SmallVector<Attribute> names;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
        std::string name;
        if (parser.parseKeywordOrString(&name))
          return failure();
        names.push_back(parser.getBuilder().getStringAttr(name));
        return success();
      }))
    return failure();
  axes = parser.getBuilder().getArrayAttr(names);
  return success();
}

void mlir::ptrain::printGridAxes(OpAsmPrinter &printer, Operation *, ArrayAttr axes) {
  printer << '[';
  llvm::interleaveComma(axes, printer, [&](Attribute a) {
    if (auto s = dyn_cast<StringAttr>(a))
      printer.printKeywordOrString(s.getValue());
    else
      printer.printAttribute(a);
  });
  printer << ']';
}

ParseResult mlir::ptrain::parseAxisName(OpAsmParser &parser, StringAttr &axis) {
  std::string name;
  if (parser.parseKeywordOrString(&name))
    return failure();
  axis = parser.getBuilder().getStringAttr(name);
  return success();
}

void mlir::ptrain::printAxisName(OpAsmPrinter &printer, Operation *, StringAttr axis) {
  printer.printKeywordOrString(axis.getValue());
}

ParseResult mlir::ptrain::parseGridShape(OpAsmParser &parser, ArrayAttr &names, DenseI64ArrayAttr &shape) {
  SmallVector<Attribute> axisNames;
  SmallVector<int64_t> sizes;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
        std::string name;
        int64_t size = 0;
        if (parser.parseKeywordOrString(&name) || parser.parseEqual() || parser.parseInteger(size))
          return failure();
        axisNames.push_back(parser.getBuilder().getStringAttr(name));
        sizes.push_back(size);
        return success();
      }))
    return failure();
  names = parser.getBuilder().getArrayAttr(axisNames);
  shape = parser.getBuilder().getDenseI64ArrayAttr(sizes);
  return success();
}

void mlir::ptrain::printGridShape(OpAsmPrinter &printer, Operation *op, ArrayAttr names,
                                  DenseI64ArrayAttr shape) {
  // The verifier guarantees equal lengths; print defensively for the generic-form round trip of bad IR.
  printer << '(';
  for (auto [i, name] : llvm::enumerate(names)) {
    if (i)
      printer << ", ";
    printer.printKeywordOrString(cast<StringAttr>(name).getValue());
    printer << " = " << (i < static_cast<size_t>(shape.size()) ? shape[i] : 0);
  }
  printer << ')';
}

ParseResult mlir::ptrain::parseSplitAxes(OpAsmParser &parser, ArrayAttr &split) {
  SmallVector<Attribute> dims;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
        ArrayAttr axes;
        if (parseGridAxes(parser, axes))
          return failure();
        dims.push_back(axes);
        return success();
      }))
    return failure();
  split = parser.getBuilder().getArrayAttr(dims);
  return success();
}

void mlir::ptrain::printSplitAxes(OpAsmPrinter &printer, Operation *op, ArrayAttr split) {
  printer << '[';
  llvm::interleaveComma(split, printer, [&](Attribute dim) {
    if (auto axes = dyn_cast<ArrayAttr>(dim))
      printGridAxes(printer, op, axes);
    else
      printer.printAttribute(dim);
  });
  printer << ']';
}

FailureOr<GridOp> mlir::ptrain::lookupGrid(Operation *op, SymbolTableCollection &symbolTable,
                                           FlatSymbolRefAttr grid) {
  auto gridOp = symbolTable.lookupNearestSymbolFrom<GridOp>(op, grid.getAttr());
  if (!gridOp)
    return op->emitOpError() << grid << " does not name a ptrain.grid";
  return gridOp;
}

LogicalResult mlir::ptrain::verifyAxesUnique(Operation *op, ArrayAttr axes, StringRef what) {
  if (axes.empty())
    return op->emitOpError() << what << " must name at least one grid axis";
  llvm::SmallSet<StringRef, 4> seen;
  for (Attribute a : axes) {
    auto name = dyn_cast<StringAttr>(a);
    if (!name)
      return op->emitOpError() << what << " must be axis names, got " << a;
    if (!seen.insert(name.getValue()).second)
      return op->emitOpError() << what << " name grid axis '" << name.getValue() << "' twice";
  }
  return success();
}

LogicalResult mlir::ptrain::verifyAxesExist(Operation *op, GridOp grid, ArrayAttr axes, StringRef what) {
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (!grid.getAxisIndex(name))
      return op->emitOpError() << what << " name axis '" << name << "', but grid @" << grid.getSymName()
                               << " has axes " << grid.getAxisNames();
  }
  return success();
}

FailureOr<int64_t> mlir::ptrain::verifyCollectiveGroup(Operation *op, SymbolTableCollection &symbolTable,
                                                       FlatSymbolRefAttr grid, ArrayAttr axes) {
  // (C1)
  FailureOr<GridOp> gridOp = lookupGrid(op, symbolTable, grid);
  if (failed(gridOp))
    return failure();
  // (C2)
  if (failed(verifyAxesExist(op, *gridOp, axes, "collective axes")))
    return failure();
  return gridOp->getGroupSize(axes);
}
