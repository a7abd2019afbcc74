//===- ConstantFile.h - A step's constant file (step.consts.bin) -*- C++ -*-===//
//
// The large constants of a step that are neither splats nor generated
// (include/ptrain/Analysis/ConstantForm.h, ConstantForm::File) are never
// printed (issue 23): both code generators append their bytes to one file at
// 64-byte offsets (--emit-cpp-constants, --emit-cuda-constants; ptrain-compile:
// out/step.consts.bin beside libstep.so), which the step reads at init with
// ptrain_read_beside (an error naming the file when it is missing or short).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_CONSTANTFILE_H
#define PTRAIN_TARGET_COMMON_CONSTANTFILE_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mlir::ptrain::target {

/// The alignment of each constant in the file, in bytes (the arena's, so a read lands on an aligned block).
constexpr int64_t kConstantFileAlignment = 64;

/// Appends `bytes` to `file` at its next multiple of kConstantFileAlignment (zero padding); that offset in bytes.
int64_t appendToConstantFile(std::string &file, StringRef bytes);

/// Writes `bytes` to `path`; an error at `loc` naming the file and `flag`'s code generator when it cannot.
LogicalResult writeConstantFile(Location loc, StringRef flag, StringRef path, StringRef bytes);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_CONSTANTFILE_H
