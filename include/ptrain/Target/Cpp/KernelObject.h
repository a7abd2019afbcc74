//===- KernelObject.h - Generated kernels to object code --------*- C++ -*-===//
//
// The kernels --ptrain-outline-elementwise writes (the nested module
// @ptrain_kernels of linalg on memrefs) lowered in-process through upstream
// MLIR and LLVM to one relocatable object file for the host or a named CPU,
// which ptrain-compile links into libstep.so (docs/GeneratedKernels.md). The
// route is the one checked by hand with Debian's tools (mlir-opt ... ->
// mlir-translate --mlir-to-llvmir -> opt -O3 -> llc -O3 -filetype=obj), in one
// process so that ptrain-compile needs none of them.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_KERNELOBJECT_H
#define PTRAIN_TARGET_CPP_KERNELOBJECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace llvm {
class raw_pwrite_stream;
} // namespace llvm

namespace mlir::ptrain {

struct KernelObjectOptions {
  /// The CPU the object is compiled for: "native" is the host's (its model and features, as clang's
  /// -march=native), any other name an LLVM CPU name of the host's architecture ("x86-64-v3", "skylake-avx512",
  /// "znver3"): the object must run on the machine that runs the step.
  std::string cpu = "native";
  /// The LLVM optimization level (0-3) of both the IR pipeline and code generation.
  unsigned optLevel = 3;
};

/// What an object was compiled for: the CPU's LLVM name ("native" resolved: "znver4", "sapphirerapids") and the
/// instruction-set extensions among those a C++ compiler can test at run time (`__builtin_cpu_supports`: sse4.2,
/// avx, fma, avx2, avx512f, avx512bw, avx512dq, avx512vl) that it may use.
struct KernelObjectTarget {
  std::string cpu;
  SmallVector<std::string> features;
};

/// Lowers `kernels` (func.func ops of linalg, scf, vector, memref, math and arith on static shapes; not modified)
/// to LLVM IR with bare-pointer arguments (`void name(float *...)`: the kernel's memrefs in order, scalars by
/// value), optimizes it for the target
/// and writes an ELF object to `os`. Fails with an error at `kernels` naming the stage that failed (the MLIR
/// lowering, the LLVM translation, an unknown CPU or target).
/// `target`, when given, receives what the object was compiled for.
LogicalResult writeKernelObject(ModuleOp kernels, llvm::raw_pwrite_stream &os, const KernelObjectOptions &options,
                                KernelObjectTarget *target = nullptr);

/// The C declaration of `kernel` as the step calls it: `extern "C" void name(const float *, ..., float *);`
/// (`numInputs` read-only pointers, then the outputs; `uint8_t *` for an i8 memref), returning int64_t for a
/// kernel with an i64 result (a codec kernel: QuantArith.h); a scalar argument (f32: float, else int64_t) by value
/// (the AdamW kernels' coefficients: AdamWArith.h).
std::string kernelDeclaration(func::FuncOp kernel, unsigned numInputs);

} // namespace mlir::ptrain

#endif // PTRAIN_TARGET_CPP_KERNELOBJECT_H
