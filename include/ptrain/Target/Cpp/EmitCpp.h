//===- EmitCpp.h - The CPU code generator (--emit-cpp) ----------*- C++ -*-===//
//
// Translates a module of keyed state symbols and functions of ptrain model,
// gradient, optimizer and state ops into ONE C++17 translation unit that calls
// only the runtime's call table (include/ptrain/Runtime/RuntimeCalls.def):
// state storage with a keyed table and arenas planned by liveness, allocated
// per rank at init (no static storage sized by the model), one C ABI entry
// point per function, and ptrain_step_init/save/load/finalize
// (docs/CodegenCpu.md).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITCPP_H
#define PTRAIN_TARGET_CPP_EMITCPP_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::ptrain {

struct EmitCppOptions {
  /// The constant file: the large constants that are neither splats nor generated (a causal mask, an iota)
  /// are written there, and the step reads them at init from the file of this name beside its shared object.
  /// Empty: such a constant is an error.
  std::string constantsFile;
  /// Repeated runs of ops (identical transformer layers) are written once as functions and called with
  /// their own pointers and a row of integers (include/ptrain/Target/Common/BlockOutliner.h); false writes
  /// every op inline (ptrain-translate --emit-cpp-outline=false), computing the same.
  bool outlineBlocks = true;
  /// Generated kernels (issue 26, docs/GeneratedKernels.md): non-empty runs --ptrain-outline-elementwise on the
  /// module, calls its kernels where the chains' memory allows, and writes their object file here for the
  /// driver to link into libstep.so (an object without functions when nothing fuses). Empty: the runtime's
  /// kernels only.
  std::string kernelsObject;
  /// The CPU the kernels are compiled for (KernelObjectOptions::cpu): "native" is the host.
  std::string kernelsCpu = "native";
  /// Set by emitCpp from the object it wrote: the CPU's name and the extensions ptrain_step_init checks with
  /// `__builtin_cpu_supports` before anything runs (a step moved to an older CPU fails with an error naming the
  /// missing extension, not an illegal instruction).
  std::string kernelsCpuName;
  SmallVector<std::string> kernelsFeatures;
  /// A weight gradient's GEMM accumulates into its gradient state (StorageRules::accumulateGemmsIntoStates,
  /// GemmFusion.h; the default); false keeps the buffer, the add and the copy (ptrain-translate
  /// --emit-cpp-accumulate-gemms=false: the reference the fold is tested against, codegen-cpu-gemm-accumulate).
  /// The memory plan (--ptrain-memory-plan) assumes the default.
  bool accumulateGemmsIntoStates = true;
  /// The attention's head split and merge are read and written in place by ptrain_gemm_strided_f32
  /// (StorageRules::foldHeadPermutes, GemmFusion.h; the default); false materializes each with
  /// ptrain_permute_f32 (ptrain-translate --emit-cpp-fold-head-permutes=false: the reference the fold is tested
  /// against, codegen-cpu-gemm-heads). The memory plan (--ptrain-memory-plan) assumes the default.
  bool foldHeadPermutes = true;
  /// A layer norm's gradient reads the mean and rstd its forward saved (StorageRules::layerNormSavedStats; the
  /// default); false recomputes them by a forward into scratch (ptrain-translate
  /// --emit-cpp-layer-norm-saved-stats=false: the reference of the test codegen-cpu-layer-norm-stats).
  bool layerNormSavedStats = true;
};

/// Writes the C++ translation unit of `module` to `os` (and options.constantsFile). Fails, with an error
/// naming the op and its location and writing nothing, on an unsupported op, a dynamic shape or an element
/// type other than f32 and i64.
LogicalResult emitCpp(ModuleOp module, raw_ostream &os, const EmitCppOptions &options = {});

/// Registers `--emit-cpp` with mlir-translate.
void registerEmitCppTranslation();

} // namespace mlir::ptrain

#endif // PTRAIN_TARGET_CPP_EMITCPP_H
