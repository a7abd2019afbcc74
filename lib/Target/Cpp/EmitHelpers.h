//===- EmitHelpers.h - Text helpers shared by the code generators -*- C++ -*-===//
//
// Literals, identifiers and location comments written by --emit-cpp
// (EmitCpp.cpp) and --emit-cuda (lib/Target/Cuda): one definition each.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITHELPERS_H
#define PTRAIN_TARGET_CPP_EMITHELPERS_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mlir::ptrain::cpp {

/// A C++ float literal that reads back as exactly `value` rounded to float.
std::string floatLiteral(double value);

/// A C++ double literal that reads back exactly (finite values).
std::string doubleLiteral(double value);

/// A C++ int64_t literal.
std::string int64Literal(int64_t v);

/// "a, b, c".
std::string joinInts(ArrayRef<int64_t> values);

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

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITHELPERS_H
