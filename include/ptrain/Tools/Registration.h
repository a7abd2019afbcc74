//===- Registration.h - what ptrain's tools register -------------*- C++ -*-===//
//
// One place that lists the dialects, passes and translations ptrain-opt and ptrain-translate offer, so that
// every tool, unit test and lit test sees the same set.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TOOLS_REGISTRATION_H
#define PTRAIN_TOOLS_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::ptrain {

/// (ptrain's passes register through the generated mlir::ptrain::registerPTrainPasses() in
/// ptrain/Transforms/Passes.h.)

/// Registers the ptrain dialect and the upstream dialects ptrain's IR uses (func, arith, math, tensor,
/// linalg, scf, memref, bufferization, emitc, dlti).
void registerPTrainDialects(DialectRegistry &registry);

/// Registers ptrain-translate's translations (importers and emitters).
void registerPTrainTranslations();

} // namespace mlir::ptrain

#endif // PTRAIN_TOOLS_REGISTRATION_H
