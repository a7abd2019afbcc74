//===- EmitHelpers.h - Text helpers shared by the code generators -*- C++ -*-===//
//
// Literals, identifiers and location comments written by --emit-cpp
// (EmitCpp.cpp) and --emit-cuda (lib/Target/Cuda): one definition each.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_EMITHELPERS_H
#define PTRAIN_TARGET_COMMON_EMITHELPERS_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mlir::ptrain::target {

/// A C++ float literal that reads back as exactly `value` rounded to float.
std::string floatLiteral(double value);

/// A C++ double literal that reads back exactly (finite values).
std::string doubleLiteral(double value);

/// A C++ int64_t literal.
std::string int64Literal(int64_t v);

/// The C literal of one element of `type` (f32, i64 or i1) with the bits `bits` (a generated constant's fill,
/// keep or masked value, include/ptrain/Analysis/ConstantForm.h).
std::string elementLiteral(Type type, uint64_t bits);

/// "a, b, c".
std::string joinInts(ArrayRef<int64_t> values);

/// joinInts broken into lines of `perLine` values, each line after the first starting with `indent`: the
/// initializer of a table of integers that is data, one line per `perLine` entries rather than per entry.
std::string wrapInts(ArrayRef<int64_t> values, int64_t perLine, StringRef indent);

/// A location for a comment: ONNX node names in quotes, files as file:line:col.
void formatLoc(Location loc, llvm::raw_ostream &os);

/// Text safe inside a // comment: no newlines.
std::string commentSafe(std::string s);

/// "// <location>" of `loc` as one comment-safe string (without the slashes).
std::string locationComment(Location loc);

/// A C identifier fragment from a state key or symbol.
std::string identifierFrom(StringRef s);

/// A C string literal.
std::string stringLiteral(StringRef s);

/// The macros of a generated step (both targets): PTRAIN_STEP_CALL returns a runtime call's failed status (the
/// runtime owns the error), PTRAIN_STEP_FORWARD a repeated block's (BlockOutliner.h).
inline constexpr const char kStepCallMacros[] =
    "#define PTRAIN_STEP_CALL(call)                                                 \\\n"
    "  do {                                                                         \\\n"
    "    const ptrain_status_t ptrain_status_ = (call);                             \\\n"
    "    if (ptrain_status_ != PTRAIN_OK) {                                         \\\n"
    "      step_error_own = false;                                                  \\\n"
    "      return ptrain_status_;                                                   \\\n"
    "    }                                                                          \\\n"
    "  } while (0)\n"
    "/// A call of a repeated block (BlockOutliner.h): the runtime calls inside it set the error's owner.\n"
    "#define PTRAIN_STEP_FORWARD(call)                                              \\\n"
    "  do {                                                                         \\\n"
    "    const ptrain_status_t ptrain_status_ = (call);                             \\\n"
    "    if (ptrain_status_ != PTRAIN_OK)                                           \\\n"
    "      return ptrain_status_;                                                   \\\n"
    "  } while (0)\n\n";

/// The step's own errors (both targets, inside the generated unit's anonymous namespace): stepError formats the
/// message into step_error and makes it ptrain_step_last_error()'s; INVALID_ARGUMENT.
inline constexpr const char kStepErrorDefinitions[] =
    "/// Errors the step itself detects (the runtime's are in ptrain_last_error()).\n"
    "char step_error[512];\n"
    "bool step_error_own = false;\n"
    "[[maybe_unused]] __attribute__((format(printf, 1, 2))) ptrain_status_t stepError(const char *format, ...) {\n"
    "  va_list args;\n"
    "  va_start(args, format);\n"
    "  std::vsnprintf(step_error, sizeof(step_error), format, args);\n"
    "  va_end(args);\n"
    "  step_error_own = true;\n"
    "  return PTRAIN_ERROR_INVALID_ARGUMENT;\n"
    "}\n\n";

} // namespace mlir::ptrain::target

// The target-independent helpers (this header, CppTypes.h, OpGeometry.h, KernelTarget.h) are found from the CPU
// and CUDA targets' namespaces, whose code uses them unqualified.
namespace mlir::ptrain::cpp {
using namespace mlir::ptrain::target;
} // namespace mlir::ptrain::cpp
namespace mlir::ptrain::cuda {
using namespace mlir::ptrain::target;
} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_COMMON_EMITHELPERS_H
