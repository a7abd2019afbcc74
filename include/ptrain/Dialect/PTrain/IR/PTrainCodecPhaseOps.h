//===- PTrainCodecPhaseOps.h - the phases of data-parallel PowerSGD -*- C++ -*-===//
//
// powersgd_phase_p, powersgd_phase_q and powersgd_finish (PTrainCodecPhaseOps.td). A header of its own,
// included by the files that build or evaluate these ops (--ptrain-expand-codecs, the interpreter), so that
// the rest of the project does not depend on their declarations.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECPHASEOPS_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECPHASEOPS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h.inc"

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECPHASEOPS_H
