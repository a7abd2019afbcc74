//===- VerifyPlanBeforeEmit.h - The plan verifier ahead of code generation --------------------------------===//
//
// --emit-cpp and --emit-cuda run --ptrain-verify-plan on the module before they write a line, so that a
// lowered plan edited by hand (or produced by a pass pipeline that skipped the verifier) with a deadlock or
// mismatched communication is refused with the verifier's message instead of compiling into a step that hangs
// under mpirun. ptrain-compile's pipeline has already verified its plan and passes `--emit-verify-plan=false`.
//
//===----------------------------------------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_TARGET_COMMON_VERIFYPLANBEFOREEMIT_H
#define PTRAIN_LIB_TARGET_COMMON_VERIFYPLANBEFOREEMIT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::ptrain {

/// Runs --ptrain-verify-plan (lib/Transforms/VerifyPlan.cpp: every rank's lowered steps executed abstractly)
/// when `module` has lowered steps (a function with `ptrain.entry` = "train" or "eval"); a module without them
/// (a single function emitted for a kernel test) has no plan to verify and succeeds. `flag` ("--emit-cpp") is
/// named in the error note. The verifier's remark on symmetric ranks is dropped; its errors pass through.
/// Cost: O(ranks x ops) of the representative ranks, no arithmetic.
LogicalResult verifyPlanBeforeEmit(ModuleOp module, StringRef flag);

/// The `--emit-verify-plan` option shared by --emit-cpp and --emit-cuda (default true).
bool shouldVerifyPlanBeforeEmit();

} // namespace mlir::ptrain

#endif // PTRAIN_LIB_TARGET_COMMON_VERIFYPLANBEFOREEMIT_H
