//===- PTrainStepOps.h - clipping and SGD ---------------------------*- C++ -*-===//
//
// sum_squares, clip_scale and sgd (PTrainStepOps.td). A header of its own, included by the files that build,
// evaluate or emit these ops, so that the rest of the project does not depend on their declarations.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTEPOPS_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTEPOPS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h.inc"

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTEPOPS_H
