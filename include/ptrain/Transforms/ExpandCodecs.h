//===- ExpandCodecs.h - --ptrain-expand-codecs -------------------------*- C++ -*-===//
//
// The pass of ExpandCodecs.td (lib/Transforms/ExpandCodecs.cpp), declared and registered on its own.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_EXPANDCODECS_H
#define PTRAIN_TRANSFORMS_EXPANDCODECS_H

#include "mlir/Pass/Pass.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"

namespace mlir::ptrain {

#define GEN_PASS_DECL
#include "ptrain/Transforms/ExpandCodecs.h.inc"

#define GEN_PASS_REGISTRATION
#include "ptrain/Transforms/ExpandCodecs.h.inc"

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_EXPANDCODECS_H
