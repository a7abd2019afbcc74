//===- ImportONNXFuzzer.cpp - libFuzzer target: the ONNX importer ---------===//
//
// Input: the bytes of a serialized ModelProto, imported by mlir::ptrain::importONNX (ImportONNX.h), the entry
// point `ptrain-translate --import-onnx` calls: protobuf parse, symbolic dimensions, ONNX shape inference,
// the faithful import, legalization and the verifier. The path given does not exist, so the whole message
// is parsed in memory (the embedded weights are the wire scanner's target, OnnxWireFuzzer.cpp). Each input
// gets a fresh MLIRContext without threads. Checked:
//  - the importer never crashes, reads out of bounds or trips UndefinedBehaviorSanitizer on any bytes;
//  - it returns a verified module, or null after at least one error diagnostic (bad input gets a clear
//    error, never a silent failure).
// Hangs and memory blow-ups are caught by libFuzzer's -timeout and -rss_limit_mb (scripts/fuzz.sh).
// A broken property aborts, which libFuzzer reports as a crash.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Import/ONNX/ImportONNX.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<mlir::ptrain::PTrainDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  int errors = 0;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
      ++errors;
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ptrain::importONNX(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "/nonexistent/fuzz.onnx", &context);
  if (!module && errors == 0) {
    std::fprintf(stderr, "ImportONNXFuzzer: property broken: the import failed without an error diagnostic\n");
    std::abort();
  }
  return 0;
}
