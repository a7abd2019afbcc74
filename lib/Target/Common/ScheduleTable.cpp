//===- ScheduleTable.cpp - A lowered schedule as data and a loop ----------===//
//
// See ScheduleTable.h. Each chunk's declarations are folded into the code that
// reads them, the code is lexed with every integer outside a declared bound
// and every string literal a candidate field, and chunks of equal shape (the
// tokens with the candidates abstracted) become one case whose fields are the
// candidates that differ between its chunks.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Common/ScheduleTable.h"

#include "Common/ChunkLexer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Regex.h"

#include <map>

using namespace mlir::ptrain::target;
using namespace mlir::ptrain::target::chunk;
using llvm::StringRef;

namespace {

constexpr const char kRequests[] = "ptrain_schedule_requests";

/// One op of the table: its code's tokens (declarations folded in) and its candidate fields.
struct Op {
  std::vector<Token> tokens;
  std::string shape;                ///< the tokens with the candidates abstracted
  std::vector<std::string> ints;    ///< candidate integers, in order
  std::vector<std::string> strings; ///< candidate string literals, in order
  std::string name;                 ///< the op's name (its header comment)
};

/// Which tokens are candidates: liftable integers (ChunkLexer.h, `static` ones only in `static const int64_t`
/// declarations), request slots, and string literals not next to another (a concatenation).
void markCandidates(std::vector<Token> &tokens) {
  auto next = [&](size_t t, int dir) {
    for (int64_t u = static_cast<int64_t>(t) + dir; u >= 0 && u < static_cast<int64_t>(tokens.size()); u += dir)
      if (tokens[u].kind != TokenKind::Space)
        return u;
    return int64_t(-1);
  };
  for (size_t t = 0; t < tokens.size(); ++t) {
    Token &tok = tokens[t];
    if (tok.kind == TokenKind::Ident && tok.text == "static") {
      // A static array of another element type keeps its literals (a lifted int64_t would narrow).
      std::string decl;
      size_t end = t;
      for (; end < tokens.size() && tokens[end].text != ";"; ++end)
        if (tokens[end].kind != TokenKind::Space)
          decl += tokens[end].text + " ";
      if (!StringRef(decl).starts_with("static const int64_t "))
        for (size_t u = t; u < end; ++u)
          tokens[u].liftable = false;
      t = end;
      continue;
    }
    if (tok.kind == TokenKind::Int && !tok.liftable) {
      int64_t p = next(t, -1), q = next(t, 1), r = p >= 0 ? next(p, -1) : -1;
      tok.liftable = p >= 0 && q >= 0 && r >= 0 && tokens[p].text == "[" && tokens[q].text == "]" &&
                     tokens[r].text == kRequests;
    }
    if (tok.kind == TokenKind::String) {
      int64_t p = next(t, -1), q = next(t, 1);
      tok.liftable = (p < 0 || tokens[p].kind != TokenKind::String) && (q < 0 || tokens[q].kind != TokenKind::String);
    }
  }
}

/// The index of `column` among `columns` (equal columns share one field), appended when new.
int64_t fieldOf(std::vector<std::vector<std::string>> &columns, std::vector<std::string> column) {
  auto it = llvm::find(columns, column);
  if (it != columns.end())
    return it - columns.begin();
  columns.push_back(std::move(column));
  return static_cast<int64_t>(columns.size()) - 1;
}

/// Whether `expr` needs no parentheses where a pointer is read: an identifier, or an expression in one pair of
/// parentheses.
bool isPrimary(StringRef expr) {
  std::vector<Token> tokens = lex(expr);
  if (tokens.size() == 1 && tokens[0].kind == TokenKind::Ident)
    return true;
  if (tokens.empty() || tokens.front().text != "(" || tokens.back().text != ")")
    return false;
  int64_t depth = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    depth += tokens[t].text == "(" ? 1 : tokens[t].text == ")" ? -1 : 0;
    if (depth == 0 && t + 1 < tokens.size())
      return false; // `(a) + (b)`
  }
  return true;
}

/// `text` with every line indented by `by` more spaces.
std::string indent(StringRef text, StringRef by) {
  std::string out;
  llvm::SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (i + 1 == lines.size() && line.empty())
      break;
    out += (line.empty() ? "" : by.str()) + line.str() + "\n";
  }
  return out;
}

} // namespace

std::optional<std::string> mlir::ptrain::target::writeScheduleTable(const EmittedFunction &fn,
                                                                    ScheduleTableStats *stats) {
  // The declarations: pointers become their expressions, requests slots of the request array.
  static const llvm::Regex pointerDecl("^  ([A-Za-z_][A-Za-z0-9_ ]* \\*)(v[0-9]+) = ([^;\n]+);\n"
                                       "(  \\(void\\)(v[0-9]+);\n)?$");
  static const llvm::Regex requestDecl("^  ([A-Za-z_][A-Za-z0-9_]*) (v[0-9]+_request) = nullptr;\n$");
  llvm::StringMap<std::string> exprOf;
  llvm::StringMap<int64_t> slotOf;
  std::string requestType;
  // `text` with its value names replaced (pointers by expressions, requests by slots); nullopt for a name that
  // is not declared (a value whose declaration the table cannot hold).
  auto substitute = [&](StringRef text) -> std::optional<std::string> {
    std::string out;
    for (const Token &t : lex(text)) {
      bool request = false;
      if (t.kind != TokenKind::Ident || !isValueName(t.text, request)) {
        out += t.text;
        continue;
      }
      if (request) {
        auto slot = slotOf.find(t.text);
        if (slot == slotOf.end())
          return std::nullopt;
        out += std::string(kRequests) + "[" + std::to_string(slot->second) + "]";
        continue;
      }
      auto expr = exprOf.find(t.text);
      if (expr != exprOf.end())
        out += expr->second;
      else if (StringRef(t.text).starts_with("v"))
        return std::nullopt; // a value declared where the table cannot see it
      else
        out += t.text; // an argument or a result pointer
    }
    return out;
  };
  std::vector<Op> ops;
  for (const EmittedChunk &c : fn.chunks) {
    for (const ChunkDecl &d : c.decls) {
      llvm::SmallVector<StringRef, 6> g;
      if (pointerDecl.match(d.text, &g) && g[2] == d.name && (g[5].empty() || g[5] == d.name)) {
        std::optional<std::string> expr = substitute(g[3]);
        if (!expr)
          return std::nullopt;
        exprOf[d.name] = isPrimary(*expr) ? *expr : "(" + *expr + ")";
      } else if (requestDecl.match(d.text, &g) && g[2] == d.name && (requestType.empty() || requestType == g[1])) {
        requestType = g[1].str();
        slotOf[d.name] = static_cast<int64_t>(slotOf.size());
      } else {
        return std::nullopt;
      }
    }
    if (StringRef(c.code).trim().empty())
      continue; // only declarations (a constant, an alias): no effect of its own
    std::optional<std::string> code = substitute(c.header + c.code);
    if (!code)
      return std::nullopt;
    Op op;
    op.tokens = lex(*code, /*liftStatic=*/true);
    markCandidates(op.tokens);
    for (const Token &t : op.tokens) {
      if (t.liftable && t.kind == TokenKind::Int) {
        op.ints.push_back(t.text);
        op.shape += "#";
      } else if (t.liftable && t.kind == TokenKind::String) {
        op.strings.push_back(t.text);
        op.shape += "$";
      } else {
        op.shape += t.text;
      }
      op.shape += "\x1f";
    }
    // The row's comment: the op (the lowering's ops all carry the function's name as their location).
    op.name = StringRef(c.header).trim().ltrim("/ ").split('\n').first.str();
    if (op.name == "func.call") // the callee: the first function the code calls in PTRAIN_STEP_CALL
      for (size_t t = 0; t + 2 < op.tokens.size(); ++t)
        if (op.tokens[t].text == "PTRAIN_STEP_CALL" && op.tokens[t + 1].text == "(" &&
            op.tokens[t + 2].kind == TokenKind::Ident) {
          op.name += " " + op.tokens[t + 2].text;
          break;
        }
    ops.push_back(std::move(op));
  }

  if (ops.empty())
    return std::nullopt;

  // Cases: ops of equal shape, in order of first appearance; a field per candidate that differs between them.
  std::map<std::string, int64_t> caseOf;
  std::vector<std::vector<const Op *>> cases;
  std::vector<int64_t> opCase;
  for (const Op &op : ops) {
    auto [it, inserted] = caseOf.try_emplace(op.shape, static_cast<int64_t>(cases.size()));
    if (inserted)
      cases.emplace_back();
    cases[it->second].push_back(&op);
    opCase.push_back(it->second);
  }
  // Per case: the field of each candidate (-1: the same in every op of the case, written literally).
  std::vector<std::vector<int64_t>> intField(cases.size()), textField(cases.size());
  std::vector<std::vector<std::vector<std::string>>> intColumns(cases.size()), textColumns(cases.size());
  int64_t numInts = 0, numTexts = 0;
  for (auto [k, group] : llvm::enumerate(cases)) {
    auto fields = [&](auto member, std::vector<int64_t> &field, std::vector<std::vector<std::string>> &columns) {
      const std::vector<std::string> &first = group.front()->*member;
      for (size_t j = 0; j < first.size(); ++j) {
        std::vector<std::string> column;
        for (const Op *op : group)
          column.push_back((op->*member)[j]);
        bool varies = llvm::any_of(column, [&](const std::string &v) { return v != column.front(); });
        field.push_back(varies ? fieldOf(columns, std::move(column)) : -1);
      }
    };
    fields(&Op::ints, intField[k], intColumns[k]);
    fields(&Op::strings, textField[k], textColumns[k]);
    numInts = std::max<int64_t>(numInts, intColumns[k].size());
    numTexts = std::max<int64_t>(numTexts, textColumns[k].size());
  }

  // The cases' code: the first op's tokens, fields for what differs; `static` dropped from a declaration that
  // now holds a field (its values change from row to row).
  std::string switchText;
  for (auto [k, group] : llvm::enumerate(cases)) {
    const std::vector<Token> &tokens = group.front()->tokens;
    std::vector<std::string> text(tokens.size());
    size_t intIndex = 0, textIndex = 0;
    for (size_t t = 0; t < tokens.size(); ++t) {
      const Token &tok = tokens[t];
      text[t] = tok.text;
      if (tok.liftable && tok.kind == TokenKind::Int) {
        int64_t f = intField[k][intIndex++];
        if (f >= 0)
          text[t] = "row.arg[" + std::to_string(f) + "]";
      } else if (tok.liftable && tok.kind == TokenKind::String) {
        int64_t f = textField[k][textIndex++];
        if (f >= 0)
          text[t] = "row.text[" + std::to_string(f) + "]";
      }
    }
    for (size_t t = 0; t < tokens.size(); ++t) {
      if (tokens[t].kind != TokenKind::Ident || tokens[t].text != "static")
        continue;
      size_t end = t;
      bool field = false;
      for (; end < tokens.size() && tokens[end].text != ";"; ++end)
        field = field || StringRef(text[end]).starts_with("row.");
      if (field) {
        text[t].clear();
        if (t + 1 < tokens.size() && tokens[t + 1].kind == TokenKind::Space)
          text[t + 1].clear();
      }
    }
    std::string code;
    for (const std::string &piece : text)
      code += piece;
    switchText += "    case " + std::to_string(k) + ": {\n" + indent(StringRef(code).ltrim('\n'), "    ") +
                  "      break;\n    }\n";
  }

  // The rows, one line per op.
  const int64_t intWidth = std::max<int64_t>(numInts, 1);
  std::string rows;
  for (auto [i, op] : llvm::enumerate(ops)) {
    int64_t k = opCase[i];
    std::vector<std::string> ints(intColumns[k].size()), texts(textColumns[k].size());
    for (auto [j, f] : llvm::enumerate(intField[k]))
      if (f >= 0)
        ints[f] = op.ints[j];
    for (auto [j, f] : llvm::enumerate(textField[k]))
      if (f >= 0)
        texts[f] = op.strings[j];
    rows += "      {" + std::to_string(k) + ", {" + (ints.empty() ? "0" : llvm::join(ints, ", ")) + "}";
    if (numTexts)
      rows += ", {" + (texts.empty() ? "nullptr" : llvm::join(texts, ", ")) + "}";
    rows += "}, // " + op.name + "\n";
  }

  std::string out = "\n  // The schedule as data (include/ptrain/Target/Common/ScheduleTable.h): " +
                    std::to_string(ops.size()) + " ops in order, " + std::to_string(cases.size()) +
                    " distinct; a row is an op's case and the integers (arena offsets, tags, slots) and texts that "
                    "differ between the ops of its case.\n"
                    "  struct ScheduleRow {\n"
                    "    int32_t op;\n"
                    "    int64_t arg[" +
                    std::to_string(intWidth) + "];\n";
  if (numTexts)
    out += "    const char *text[" + std::to_string(numTexts) + "];\n";
  out += "  };\n  static const ScheduleRow kSchedule[" + std::to_string(ops.size()) + "] = {\n" + rows + "  };\n";
  if (!slotOf.empty())
    out += "  " + requestType + " " + kRequests + "[" + std::to_string(slotOf.size()) + "] = {};\n";
  out += "  for (const ScheduleRow &row : kSchedule) {\n"
         "    switch (row.op) {\n" +
         switchText + "    }\n  }\n";
  if (stats)
    *stats = {static_cast<int64_t>(ops.size()), static_cast<int64_t>(cases.size()), numInts, numTexts,
              static_cast<int64_t>(slotOf.size())};
  return out;
}
