//===- CodecPhases.h - the interpreter's PowerSGD phase ops ---------*- C++ -*-===//
//
// The reference semantics of the phase ops --ptrain-expand-codecs writes (PTrainCodecPhaseOps.td). They are
// implemented in lib/Interpreter/Codecs.cpp, beside the compressed all-reduce they expand and with its runtime
// descriptors; a header of their own so that only the files that evaluate them depend on their declarations.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_CODECPHASES_H
#define PTRAIN_INTERPRETER_CODECPHASES_H

#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h"
#include "ptrain/Interpreter/Tensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace mlir::ptrain::interp {

/// The PowerSGD phases with the runtime's phase kernels (batch 1, seed 0), so that an expanded plan computes
/// what the unexpanded `ptrain.compressed_all_reduce_start` does:
/// `ptrain.powersgd_phase_p`: {M, P, Q0} (ptrain_powersgd_phase_p_f32; the exact path: M in P and Q);
/// `ptrain.powersgd_phase_q`: {P^, Q} (ptrain_powersgd_phase_q_f32);
/// `ptrain.powersgd_finish`: {alpha P^ Q^T, M - beta P^ Q^T, beta Q} (ptrain_powersgd_finish_f32; the exact
/// path: alpha times the carried M, 0, Q unchanged).
llvm::Expected<std::vector<Tensor>> evalPowerSGDPhaseP(PowerSGDPhasePOp op,
                                                       llvm::function_ref<const Tensor &(Value)> get);
llvm::Expected<std::vector<Tensor>> evalPowerSGDPhaseQ(PowerSGDPhaseQOp op,
                                                       llvm::function_ref<const Tensor &(Value)> get);
llvm::Expected<std::vector<Tensor>> evalPowerSGDFinish(PowerSGDFinishOp op,
                                                       llvm::function_ref<const Tensor &(Value)> get);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_CODECPHASES_H
