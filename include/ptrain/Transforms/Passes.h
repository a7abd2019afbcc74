//===- Passes.h - ptrain's passes ---------------------------------*- C++ -*-===//

#ifndef PTRAIN_TRANSFORMS_PASSES_H
#define PTRAIN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"

namespace mlir::ptrain {

#define GEN_PASS_DECL
#include "ptrain/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ptrain/Transforms/Passes.h.inc"

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_PASSES_H
