//===- ptrain-opt.cpp - the ptrain optimizer driver ---------------*- C++ -*-===//
//
// MlirOptMain with the ptrain dialect, its passes, and the upstream dialects and passes ptrain's IR uses.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "ptrain/Pipelines/Passes.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::ptrain::registerPTrainPasses();
  mlir::ptrain::registerTrainingPipelines();
  mlir::DialectRegistry registry;
  mlir::ptrain::registerPTrainDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "ptrain optimizer driver\n", registry));
}
