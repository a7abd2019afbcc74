//===- ChunkLexer.h - The tokens of a generated op's code --------*- C++ -*-===//
//
// The block outliner (include/ptrain/Target/Common/BlockOutliner.h) and the
// schedule table (include/ptrain/Target/Common/ScheduleTable.h) both read the
// code generators' chunks (one op's C++ each) as tokens: which identifiers are
// the function's values, which integers may become a row entry of a table.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_CHUNKLEXER_H
#define PTRAIN_TARGET_COMMON_CHUNKLEXER_H

#include "ptrain/Target/Common/BlockOutliner.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace mlir::ptrain::target::chunk {

enum class TokenKind { Space, Ident, Int, String, Other };

struct Token {
  TokenKind kind;
  std::string text;
  /// An integer that may become a row entry: between operators or argument separators (never an array bound
  /// or a template argument), and not in a `static` declaration unless lexed with `liftStatic`; with
  /// `liftStatic`, also an index `[N]` followed by `,` or `)` (an array element read in an argument list).
  bool liftable = false;
};

/// Lexes generated C++. Comments and non-integer numbers (`0.5f`, `1e-05f`, `0ULL`) are single Other tokens,
/// string literals single String tokens (escapes kept): they must match literally unless a table lifts them.
/// `liftStatic` (the schedule table): the integers of `static const` array initializers are liftable too, for
/// a caller that drops `static` where it lifts one.
std::vector<Token> lex(llvm::StringRef s, bool liftStatic = false);

/// Whether `name` is v<N>, v<N>_request, arg<N> or out_<N>: a function's values and arguments (d_arg<N>,
/// d_out_<N>: those of a CUDA step's functions on device pointers). `isRequest`: it ends in `_request`.
bool isValueName(llvm::StringRef name, bool &isRequest);

/// A chunk's whole text: header, declarations, code (EmittedChunk).
std::string chunkText(const EmittedChunk &c);

} // namespace mlir::ptrain::target::chunk

#endif // PTRAIN_TARGET_COMMON_CHUNKLEXER_H
