//===- ptrain-translate.cpp - ptrain importers and emitters -------*- C++ -*-===//
//
// MlirTranslateMain with ptrain's translations: the ONNX importer and the C++/CUDA emitters register in
// mlir::ptrain::registerPTrainTranslations().
//
//===----------------------------------------------------------------------===//

#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "ptrain/Tools/Registration.h"

int main(int argc, char **argv) {
  mlir::ptrain::registerPTrainTranslations();
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "ptrain translation driver\n")) ? 1 : 0;
}
