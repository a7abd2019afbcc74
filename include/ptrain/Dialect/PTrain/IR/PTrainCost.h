//===- PTrainCost.h - FLOPs and bytes of an op for the timing model -*- C++ -*-===//
//
// The cost of one op on one device (CostOpInterface, PTrainInterfaces.td) and the documented fallback for
// ops that do not implement it. Used by --ptrain-split-stages (balance) and the timing model
// (docs/TimingModel.md).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINCOST_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINCOST_H

#include "mlir/IR/Operation.h"

namespace mlir::ptrain {

/// Work of one execution of an op on one device, for its full static shapes.
struct OpCost {
  /// Floating-point operations (a multiply-add counts 2).
  double flops = 0;
  /// Bytes read plus bytes written in device memory.
  double bytes = 0;

  OpCost &operator+=(const OpCost &other) {
    flops += other.flops;
    bytes += other.bytes;
    return *this;
  }
};

/// Bytes of a statically shaped ranked tensor (element bit width rounded up to whole bytes, i1 is 1 byte);
/// 0 for any other type, including dynamically shaped tensors.
double getTensorBytes(Type type);

/// Bytes of all tensor operands plus all tensor results of `op`: the default of
/// CostOpInterface::getBytesAccessed and the fallback of getOpCost.
double getOperandAndResultBytes(Operation *op);

/// The cost of `op`:
/// * CostOpInterface when the op implements it;
/// * zero for structural ops (func.call, func.return, constants, ptrain.state_read / state_write, ops without
///   tensor results) and communication ops (AsyncStartOpInterface, ptrain.wait): the timing model charges
///   transfers separately;
/// * otherwise the fallback: one FLOP per element of each tensor result, bytes = getOperandAndResultBytes.
/// Regions are not entered: callers sum over the ops they walk.
OpCost getOpCost(Operation *op);

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINCOST_H
