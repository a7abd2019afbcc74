//===- PTrainDialect.h - the ptrain dialect ----------------------*- C++ -*-===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINDIALECT_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h.inc"
#include "ptrain/Dialect/PTrain/IR/PTrainEnums.h.inc"

namespace mlir::ptrain {

/// The network, read and written by every communication op (DESIGN decision 3).
struct CommResource : public SideEffects::Resource::Base<CommResource> {
  StringRef getName() final { return "<PTrainComm>"; }
};

/// Module-level state symbols, read by `state_read` and written by `state_write`.
struct StateResource : public SideEffects::Resource::Base<StateResource> {
  StringRef getName() final { return "<PTrainState>"; }
};

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINDIALECT_H
