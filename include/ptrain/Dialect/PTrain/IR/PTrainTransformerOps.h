//===- PTrainTransformerOps.h - LLaMA-style model ops -------------*- C++ -*-===//
//
// rms_norm and rotary_embedding (PTrainTransformerOps.td). A header of its own, included by the files that
// build or evaluate these ops, so that the rest of the project does not depend on their declarations.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINTRANSFORMEROPS_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINTRANSFORMEROPS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h.inc"

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINTRANSFORMEROPS_H
