//===- ptrain-translate.cpp - ptrain importers and emitters -------*- C++ -*-===//
//
// MlirTranslateMain with ptrain's translations: the ONNX importer and the C++/CUDA emitters register in
// mlir::ptrain::registerPTrainTranslations().
//
//===----------------------------------------------------------------------===//

#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "ptrain/Import/ONNX/ImportONNX.h"
#include "ptrain/Tools/Registration.h"

int main(int argc, char **argv) {
  mlir::ptrain::registerPTrainTranslations();
  // ONNX imports map the model file instead of letting mlirTranslateMain copy it (ImportONNX.h).
  if (std::optional<int> status = mlir::ptrain::importONNXMain(argc, argv))
    return *status;
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "ptrain translation driver\n")) ? 1 : 0;
}
