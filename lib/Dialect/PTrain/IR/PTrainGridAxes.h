//===- PTrainGridAxes.h - naming axes of a ptrain.grid ------------*- C++ -*-===//
//
// Shared by every op that names grid axes: the custom assembly directives for axis lists (`[dp, tp]`), grid
// shapes (`(dp = 2, tp = 4)`) and per-dimension splits (`[[], [tp]]`), and the checks that the axes exist.
// Internal to the dialect library.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_DIALECT_PTRAIN_IR_PTRAINGRIDAXES_H
#define PTRAIN_LIB_DIALECT_PTRAIN_IR_PTRAINGRIDAXES_H

#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ptrain {

class GridOp;

/// `[dp, tp]` <-> an array of axis-name strings.
ParseResult parseGridAxes(OpAsmParser &parser, ArrayAttr &axes);
void printGridAxes(OpAsmPrinter &printer, Operation *op, ArrayAttr axes);

/// `pp` <-> one axis-name string.
ParseResult parseAxisName(OpAsmParser &parser, StringAttr &axis);
void printAxisName(OpAsmPrinter &printer, Operation *op, StringAttr axis);

/// `(dp = 2, tp = 4)` <-> axis names and sizes.
ParseResult parseGridShape(OpAsmParser &parser, ArrayAttr &names, DenseI64ArrayAttr &shape);
void printGridShape(OpAsmPrinter &printer, Operation *op, ArrayAttr names, DenseI64ArrayAttr shape);

/// `[[], [tp]]` <-> per tensor dimension, the axes it is split over.
ParseResult parseSplitAxes(OpAsmParser &parser, ArrayAttr &split);
void printSplitAxes(OpAsmPrinter &printer, Operation *op, ArrayAttr split);

/// Looks up `grid` from `op`; fails with "'@g' does not name a ptrain.grid" otherwise.
FailureOr<GridOp> lookupGrid(Operation *op, SymbolTableCollection &symbolTable, FlatSymbolRefAttr grid);

/// Checks that every entry of `axes` is a string naming an axis of `grid`; with `requireUnique`, also that no
/// axis repeats. `what` names the list in messages ("collective axes").
LogicalResult verifyAxesExist(Operation *op, GridOp grid, ArrayAttr axes, StringRef what);

/// Verifies what every collective shares, (C1)-(C3) of PTrain_CollectiveStartOp: `grid` names a grid and
/// `axes` are axes of it. Returns the group size (product of the axis sizes).
FailureOr<int64_t> verifyCollectiveGroup(Operation *op, SymbolTableCollection &symbolTable,
                                         FlatSymbolRefAttr grid, ArrayAttr axes);

/// Checks that `axes` are strings, not empty and without repeats (no grid needed).
LogicalResult verifyAxesUnique(Operation *op, ArrayAttr axes, StringRef what);

} // namespace mlir::ptrain

#endif // PTRAIN_LIB_DIALECT_PTRAIN_IR_PTRAINGRIDAXES_H
