//===- EmitHelpers.cpp - Text helpers shared by the code generators -------===//

#include "Common/EmitHelpers.h"

#include "llvm/ADT/bit.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <cmath>
#include <cstdio>

using namespace mlir;

namespace mlir::ptrain::target {

/// A C++ float literal that reads back as exactly `value` rounded to float.
std::string doubleLiteral(double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", value);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string floatLiteral(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(f))
    return "__builtin_nanf(\"\")";
  if (std::isinf(f))
    return f > 0 ? "__builtin_inff()" : "-__builtin_inff()";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s + "f";
}

std::string int64Literal(int64_t v) {
  if (v == INT64_MIN)
    return "INT64_MIN";
  return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
}

std::string joinInts(ArrayRef<int64_t> values) {
  std::string s;
  for (auto [i, v] : llvm::enumerate(values))
    s += (i ? ", " : "") + std::to_string(v);
  return s;
}

std::string wrapInts(ArrayRef<int64_t> values, int64_t perLine, StringRef indent) {
  std::string s;
  for (auto [i, v] : llvm::enumerate(values))
    s += (i == 0                              ? std::string()
          : static_cast<int64_t>(i) % perLine ? std::string(", ")
                                              : ",\n" + indent.str()) +
         std::to_string(v);
  return s;
}

/// A location for a comment: ONNX node names in quotes, files as file:line:col.
void formatLoc(Location loc, llvm::raw_ostream &os) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    os << '"' << name.getName().getValue() << '"';
    if (!isa<UnknownLoc>(name.getChildLoc())) {
      os << " (";
      formatLoc(name.getChildLoc(), os);
      os << ")";
    }
  } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    llvm::interleave(
        fused.getLocations(), os, [&](Location l) { formatLoc(l, os); }, ", ");
  } else if (isa<UnknownLoc>(loc)) {
    os << "unknown location";
  } else {
    loc.print(os);
  }
}

/// Text safe inside a // comment: no newlines.
std::string commentSafe(std::string s) {
  for (char &c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  return s;
}

/// A C identifier fragment from a state key or symbol.
std::string identifierFrom(StringRef s) {
  std::string id;
  for (char c : s)
    id += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return id;
}

/// A C string literal.
std::string stringLiteral(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%03o", static_cast<unsigned char>(c));
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string locationComment(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  formatLoc(loc, os);
  return commentSafe(s);
}

} // namespace mlir::ptrain::target

std::string mlir::ptrain::target::elementLiteral(Type type, uint64_t bits) {
  if (type.isF32())
    return floatLiteral(llvm::bit_cast<float>(static_cast<uint32_t>(bits)));
  if (type.isInteger(1))
    return bits ? "1" : "0";
  return int64Literal(static_cast<int64_t>(bits));
}
