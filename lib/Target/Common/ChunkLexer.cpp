//===- ChunkLexer.cpp - The tokens of a generated op's code ---------------===//
//
// See ChunkLexer.h.
//
//===----------------------------------------------------------------------===//

#include "Common/ChunkLexer.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cctype>
#include <set>

using llvm::StringRef;

namespace mlir::ptrain::target::chunk {

/// Lexes the generated C++ of one chunk. Comments, string and character literals and non-integer numbers
/// (`0.5f`, `1e-05f`, `0ULL`) are single Other tokens: they must match literally.
std::vector<Token> lex(StringRef s, bool liftStatic) {
  std::vector<Token> out;
  size_t i = 0, n = s.size();
  auto isIdent = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < n) {
    char c = s[i];
    size_t j = i + 1;
    TokenKind kind = TokenKind::Other;
    if (c == ' ' || c == '\t' || c == '\n') {
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n'))
        ++j;
      kind = TokenKind::Space;
    } else if (c == '/' && j < n && s[j] == '/') {
      while (j < n && s[j] != '\n')
        ++j;
    } else if (c == '"' || c == '\'') {
      while (j < n && s[j] != c) {
        if (s[j] == '\\')
          ++j;
        ++j;
      }
      j = std::min(n, j + 1);
      if (c == '"')
        kind = TokenKind::String;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (j < n && isIdent(s[j]))
        ++j;
      kind = TokenKind::Ident;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (j < n && (isIdent(s[j]) || s[j] == '.' ||
                       ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E'))))
        ++j;
      StringRef text = s.slice(i, j);
      kind = llvm::all_of(text, [](char d) { return std::isdigit(static_cast<unsigned char>(d)); }) &&
                     text.size() <= 18
                 ? TokenKind::Int
                 : TokenKind::Other;
    }
    out.push_back({kind, s.slice(i, j).str()});
    i = j;
  }
  // Liftable integers (see Token::liftable).
  static const std::set<std::string> before = {"(", ",", "+", "-", "*", "=", "{"};
  static const std::set<std::string> after = {")", ",", ";", "}", "+", "-", "*"};
  bool inStatic = false;
  for (size_t t = 0; t < out.size(); ++t) {
    Token &tok = out[t];
    if (tok.kind == TokenKind::Space && tok.text.find('\n') != std::string::npos)
      inStatic = false;
    if (tok.kind == TokenKind::Ident && tok.text == "static")
      inStatic = true;
    if (tok.kind != TokenKind::Int || (inStatic && !liftStatic))
      continue;
    size_t p = t, q = t + 1;
    while (p > 0 && out[p - 1].kind == TokenKind::Space)
      --p;
    while (q < out.size() && out[q].kind == TokenKind::Space)
      ++q;
    tok.liftable = p > 0 && q < out.size() && before.count(out[p - 1].text) && after.count(out[q].text);
    // An element read in an argument list, `ev_done[2],` (never a declared bound, `dims[2] =`).
    if (liftStatic && p > 0 && q + 1 < out.size() && out[p - 1].text == "[" && out[q].text == "]") {
      size_t r = q + 1;
      while (r < out.size() && out[r].kind == TokenKind::Space)
        ++r;
      tok.liftable = tok.liftable || (r < out.size() && (out[r].text == "," || out[r].text == ")"));
    }
  }
  return out;
}

/// v<N>, v<N>_request, arg<N>, out_<N>: a function's values and arguments (d_arg<N>, d_out_<N>: those of a
/// CUDA step's functions on device pointers).
bool isValueName(StringRef name, bool &isRequest) {
  isRequest = name.consume_back("_request");
  auto digits = [](StringRef s) {
    return !s.empty() && llvm::all_of(s, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  if (name.consume_front("d_") && !name.starts_with("out_") && !name.starts_with("arg"))
    return false;
  if (name.consume_front("out_"))
    return !isRequest && digits(name);
  if (name.consume_front("arg"))
    return !isRequest && digits(name);
  return name.consume_front("v") && digits(name);
}

std::string chunkText(const EmittedChunk &c) {
  std::string text = c.header;
  for (const ChunkDecl &d : c.decls)
    text += d.text;
  return text + c.code;
}

} // namespace mlir::ptrain::target::chunk
