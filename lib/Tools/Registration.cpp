//===- Registration.cpp - what ptrain's tools register -----------*- C++ -*-===//

#include "ptrain/Tools/Registration.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllTranslations.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"
#include "ptrain/Import/ONNX/ImportONNX.h"
#include "ptrain/Target/Cpp/EmitCpp.h"
#include "ptrain/Target/Cuda/EmitCuda.h"
#include "ptrain/Target/PlanJson/EmitPlanJson.h"

void mlir::ptrain::registerPTrainDialects(DialectRegistry &registry) {
  registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect, math::MathDialect,
                  tensor::TensorDialect, linalg::LinalgDialect, scf::SCFDialect, memref::MemRefDialect,
                  bufferization::BufferizationDialect, emitc::EmitCDialect, DLTIDialect>();
}

void mlir::ptrain::registerPTrainTranslations() {
  // EmitC -> C++ (DESIGN: the CPU target emits C++ through EmitC where it fits). The ONNX importer and the
  // ptrain emitters register here as they land.
  // ONNX -> ptrain model graph (--import-onnx, --import-onnx-faithful).
  registerToCppTranslation();
  registerImportONNXTranslations();
  // ptrain -> C++ calling the runtime (--emit-cpp, docs/CodegenCpu.md).
  registerEmitCppTranslation();
  // ptrain -> CUDA calling libptrain_runtime_cuda (--emit-cuda, docs/CodegenCuda.md).
  registerEmitCudaTranslation();
  // The module's part of plan.json (--emit-plan-json, docs/Plan.md).
  registerEmitPlanJsonTranslation();
}
