//===- BlockOutliner.cpp - Repeated op blocks emitted once ----------------===//
//
// See BlockOutliner.h. The chunks are lexed into C++ tokens; a chunk's shape is
// its token text with the value names, the globals and the liftable integers
// abstracted. Each round hashes every window of every length of the module's
// chunk sequence, counts each shape's non-overlapping occurrences, verifies the
// best candidates token by token (the same names in the same places, the same
// live-in types, no request crossing the block's boundary) and outlines the
// one that saves the most bytes; the occurrences become calls, which no later
// round reuses.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Common/BlockOutliner.h"

#include "Common/ChunkLexer.h"
#include "ptrain/Target/Common/ScheduleTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

using namespace mlir::ptrain::target;
using llvm::SmallVector;
using llvm::StringRef;
using namespace mlir::ptrain::target::chunk;

namespace {

//===----------------------------------------------------------------------===//
// Chunks
//===----------------------------------------------------------------------===//

/// A chunk, lexed: the tokens of its header, declarations and code, its shape and the names it uses.
struct LexedChunk {
  std::vector<Token> tokens;
  uint64_t shape = 0;
  int64_t bytes = 0;
  std::vector<std::string> used;     ///< value names read or written, in order of first appearance
  std::vector<std::string> declared; ///< value names it declares at function scope
};

bool isGlobal(const OutlineOptions &options, StringRef name) {
  return options.globalType && !options.globalType(name).empty();
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

LexedChunk lexChunk(const EmittedChunk &c, const OutlineOptions &options) {
  LexedChunk out;
  out.tokens = lex(chunkText(c));
  uint64_t h = 1469598103934665603ULL;
  std::set<std::string> seen;
  for (const Token &t : out.tokens) {
    StringRef key = t.text;
    bool request = false;
    if (t.kind == TokenKind::Ident && isValueName(t.text, request)) {
      key = request ? "$r" : "$";
      if (seen.insert(t.text).second)
        out.used.push_back(t.text);
    } else if (t.kind == TokenKind::Ident && isGlobal(options, t.text)) {
      key = "@";
    } else if (t.kind == TokenKind::Int && t.liftable) {
      key = "#";
    }
    h = mix(h, llvm::hash_value(key));
  }
  out.shape = h;
  out.bytes = 0; // the location comment is not saved: the call names the first and last
  for (const Token &t : out.tokens)
    out.bytes += static_cast<int64_t>(t.text.size());
  for (const ChunkDecl &d : c.decls)
    out.declared.push_back(d.name);
  return out;
}

//===----------------------------------------------------------------------===//
// Occurrences
//===----------------------------------------------------------------------===//

/// One candidate occurrence: chunks [start, start + length) of function `fn`, canonicalized.
struct Occurrence {
  int64_t fn = 0, start = 0, length = 0;
  bool valid = false;
  std::string key;                  ///< the canonical text: equal keys outline to the same function
  std::vector<std::string> values;  ///< canonical value index -> its name here
  std::vector<bool> local;          ///< declared inside the block
  std::vector<std::string> globals; ///< canonical global index -> its name here
  std::vector<std::string> ints;    ///< liftable integers, in order
  std::vector<std::string> liveOut; ///< locals read after the block, in the block's order
  /// Per value: its arena and offset when it is a live-in `T *v = reinterpret_cast<T *>(ARENA + OFFSET)`,
  /// or kTableMark + its table's expression and its index when it is a live-in `T *v = GLOBAL` whose global is
  /// in a table (OutlineOptions::tableEntry); computed inside the block when every occurrence's is, from the
  /// same arena or table; else empty.
  std::vector<std::string> arenaBase, arenaOffset;
  /// Per value: its pointer type when it is a parameter (a live-in), else empty. The key holds it without
  /// `const`: a block whose live-in is const in one occurrence (a function's argument) and not in another (an
  /// earlier block's result) is one block, whose parameter is const when any occurrence's is.
  std::vector<std::string> types;
  /// Per global: the index in `ints` of its entry in a table (OutlineOptions::tableEntry), else -1.
  std::vector<int64_t> globalInt;
  std::vector<std::string> globalTable;
};

struct Module {
  const std::vector<EmittedFunction> &functions;
  const OutlineOptions &options;
  std::vector<std::vector<LexedChunk>> chunks;
  /// Per function: the last chunk that uses each value name, and the declaration of each.
  std::vector<llvm::StringMap<int64_t>> lastUse;
  std::vector<llvm::StringMap<std::string>> declText;
};

/// `  T *NAME = reinterpret_cast<T *>(BASE + OFFSET);\n`: a pointer into an arena.
bool parseArenaDecl(StringRef text, std::string &base, std::string &offset) {
  static const llvm::Regex pattern("^  [A-Za-z0-9_]+ \\*v[0-9]+ = reinterpret_cast<[A-Za-z0-9_]+ \\*>\\("
                                   "([A-Za-z_][A-Za-z0-9_]*) \\+ ([0-9]+)\\);\n$");
  SmallVector<StringRef, 3> groups;
  if (!pattern.match(text, &groups) || groups[2].size() > 18)
    return false;
  base = groups[1].str();
  offset = groups[2].str();
  return true;
}

/// `  T *NAME = GLOBAL;\n`: a pointer that is a global (a state read used in place).
bool parseGlobalDecl(StringRef text, std::string &global) {
  static const llvm::Regex pattern("^  [A-Za-z0-9_ ]+ \\*v[0-9]+ = ([A-Za-z_][A-Za-z0-9_]*);\n$");
  SmallVector<StringRef, 2> groups;
  if (!pattern.match(text, &groups))
    return false;
  global = groups[1].str();
  return true;
}

/// Marks Occurrence::arenaBase as a table's expression (OutlineOptions::tableEntry, `#` its index) rather than
/// an arena's name.
constexpr char kTableMark = '\x01';

/// `type` without a leading `const ` (the pointer types of live-ins: `const float *` -> `float *`).
std::string withoutConst(StringRef type) {
  type.consume_front("const ");
  return type.str();
}

/// `type` with a leading `const ` (`float *` -> `const float *`).
std::string withConst(StringRef type) { return type.starts_with("const ") ? type.str() : "const " + type.str(); }

/// `  T *NAME = ROOT;\n  (void)NAME;\n`: an alias (a reshape used in place) of the value or argument ROOT.
bool parseAliasDecl(StringRef text, std::string &root) {
  static const llvm::Regex pattern("^  [A-Za-z0-9_ ]+ \\*(v[0-9]+) = ([A-Za-z_][A-Za-z0-9_]*);\n  \\(void\\)(v[0-9]+);\n$");
  SmallVector<StringRef, 4> groups;
  if (!pattern.match(text, &groups) || groups[1] != groups[3])
    return false;
  root = groups[2].str();
  return true;
}

/// The value an alias chain of `name` in function `fn` ends at (parseAliasDecl): the first value whose declaration
/// is not an alias of another declared value, or `name` itself.
std::string rootOf(const Module &m, int64_t fn, const std::string &name) {
  std::string current = name, root;
  for (int depth = 0; depth < 64 && parseAliasDecl(m.declText[fn].lookup(current), root); ++depth) {
    bool request = false;
    if (!isValueName(root, request) || request || !m.declText[fn].count(root))
      break;
    current = root;
  }
  return current;
}

Occurrence canonicalize(const Module &m, int64_t fn, int64_t start, int64_t length) {
  Occurrence o;
  o.fn = fn;
  o.start = start;
  o.length = length;
  const auto &chunks = m.chunks[fn];
  std::set<std::string> declared;
  for (int64_t c = start; c < start + length; ++c)
    for (const std::string &d : chunks[c].declared)
      declared.insert(d);
  std::map<std::string, int64_t> valueIndex, globalIndex;
  std::string &key = o.key;
  for (int64_t c = start; c < start + length; ++c) {
    if (m.functions[fn].chunks[c].barrier)
      return o;
    key += "\x1f";
    for (const Token &t : chunks[c].tokens) {
      bool request = false;
      if (t.kind == TokenKind::Ident && isValueName(t.text, request)) {
        auto [it, inserted] = valueIndex.try_emplace(t.text, static_cast<int64_t>(o.values.size()));
        if (inserted) {
          o.values.push_back(t.text);
          o.local.push_back(declared.count(t.text) > 0);
        }
        key += "$" + std::to_string(it->second) + (request ? "r" : "");
      } else if (t.kind == TokenKind::Ident && isGlobal(m.options, t.text)) {
        auto [it, inserted] = globalIndex.try_emplace(t.text, static_cast<int64_t>(o.globals.size()));
        if (inserted)
          o.globals.push_back(t.text);
        key += "@" + std::to_string(it->second) + ":" + m.options.globalType(t.text) + ":";
      } else if (t.kind == TokenKind::Int && t.liftable) {
        o.ints.push_back(t.text);
        key += "#";
      } else {
        key += t.text;
      }
    }
  }
  // Globals held in a table are read from it by an index in the row.
  key += "\x1e";
  o.globalInt.assign(o.globals.size(), -1);
  o.globalTable.assign(o.globals.size(), "");
  for (auto [j, name] : llvm::enumerate(o.globals)) {
    if (!m.options.tableEntry)
      break;
    auto [table, index] = m.options.tableEntry(name);
    if (table.empty())
      continue;
    o.globalTable[j] = table;
    o.globalInt[j] = static_cast<int64_t>(o.ints.size());
    o.ints.push_back(std::to_string(index));
    key += "T" + std::to_string(j) + table + ";";
  }
  // Live-ins are parameters of a known pointer type, or computed from their arena and offset; requests never
  // cross the boundary.
  key += "\x1e";
  o.arenaBase.assign(o.values.size(), "");
  o.arenaOffset.assign(o.values.size(), "");
  o.types.assign(o.values.size(), "");
  for (auto [i, name] : llvm::enumerate(o.values)) {
    bool request = false;
    isValueName(name, request);
    if (o.local[i]) {
      auto last = m.lastUse[fn].find(name);
      if (last != m.lastUse[fn].end() && last->second >= start + length) {
        if (request)
          return o;
        o.liveOut.push_back(name);
      }
      key += "L";
      continue;
    }
    auto type = m.functions[fn].types.find(name);
    if (request || type == m.functions[fn].types.end())
      return o;
    std::string base, offset, state;
    // An alias (a reshape used in place) of a pointer into an arena or of a state is that pointer: a per-layer
    // buffer read through its alias goes through the row table like any other (saved statistics, the
    // attention's heads), not as a call argument.
    const std::string decl = m.declText[fn].lookup(rootOf(m, fn, name));
    if (parseArenaDecl(decl, base, offset) && isGlobal(m.options, base)) {
      o.arenaBase[i] = base;
      o.arenaOffset[i] = offset;
    } else if (parseGlobalDecl(decl, state) && isGlobal(m.options, state) && m.options.tableEntry) {
      // A state read used in place (`T *v = state_N_name;`) whose state is in a table: read from its entry.
      auto [table, index] = m.options.tableEntry(state);
      if (!table.empty()) {
        o.arenaBase[i] = kTableMark + table;
        o.arenaOffset[i] = std::to_string(index);
      }
    }
    o.types[i] = type->second;
    key += "I" + withoutConst(type->second) + ";";
  }
  o.valid = true;
  return o;
}

/// What a group of occurrences outlines to: the parameters that differ between them.
struct BlockShape {
  std::vector<bool> varyingGlobal, varyingInt;
  /// Per value: a live-in computed inside the block from its arena (every occurrence's is a pointer into the
  /// same arena), and whether its offset differs (then a row entry after the varying integers).
  std::vector<bool> computed, offsetVaries;
  /// Per value: a live-in whose type is const in some occurrence (the parameter is then const: the body, the
  /// same text in every occurrence, compiled with it const there, so it only reads it).
  std::vector<bool> constIn;
  /// Per integer: the first varying integer equal to it in every occurrence (itself if none): one row entry.
  std::vector<int64_t> sameAs;
  int64_t numRowInts = 0;
};

BlockShape shapeOf(const std::vector<const Occurrence *> &group) {
  BlockShape s;
  const Occurrence &first = *group.front();
  s.varyingGlobal.assign(first.globals.size(), false);
  s.varyingInt.assign(first.ints.size(), false);
  s.computed.assign(first.values.size(), false);
  s.offsetVaries.assign(first.values.size(), false);
  s.constIn.assign(first.values.size(), false);
  for (size_t i = 0; i < first.values.size(); ++i)
    s.computed[i] = !first.local[i] && !first.arenaBase[i].empty();
  for (const Occurrence *o : group) {
    for (size_t j = 0; j < first.globals.size(); ++j)
      s.varyingGlobal[j] = s.varyingGlobal[j] || o->globals[j] != first.globals[j];
    for (size_t k = 0; k < first.ints.size(); ++k)
      s.varyingInt[k] = s.varyingInt[k] || o->ints[k] != first.ints[k];
    for (size_t i = 0; i < first.values.size(); ++i) {
      s.computed[i] = s.computed[i] && o->arenaBase[i] == first.arenaBase[i];
      s.offsetVaries[i] = s.offsetVaries[i] || o->arenaOffset[i] != first.arenaOffset[i];
      s.constIn[i] = s.constIn[i] || StringRef(o->types[i]).starts_with("const ");
    }
  }
  s.sameAs.resize(first.ints.size());
  std::map<std::vector<std::string>, int64_t> columns;
  for (size_t k = 0; k < first.ints.size(); ++k) {
    s.sameAs[k] = static_cast<int64_t>(k);
    if (!s.varyingInt[k])
      continue;
    std::vector<std::string> column;
    for (const Occurrence *o : group)
      column.push_back(o->ints[k]);
    auto [it, inserted] = columns.try_emplace(column, static_cast<int64_t>(k));
    s.sameAs[k] = it->second;
    s.numRowInts += inserted;
  }
  for (size_t i = 0; i < first.values.size(); ++i)
    s.numRowInts += s.computed[i] && s.offsetVaries[i];
  return s;
}

/// The row of `o`: its varying integers, then the varying offsets of its computed live-ins.
std::vector<std::string> rowOf(const Occurrence &o, const BlockShape &s) {
  std::vector<std::string> row;
  for (size_t k = 0; k < o.ints.size(); ++k)
    if (s.varyingInt[k] && s.sameAs[k] == static_cast<int64_t>(k))
      row.push_back(o.ints[k]);
  for (size_t i = 0; i < o.values.size(); ++i)
    if (s.computed[i] && s.offsetVaries[i])
      row.push_back(o.arenaOffset[i]);
  return row;
}

/// The argument for the live-in `name` of a call in function `fn`: a pointer into an arena or a global (a state
/// read used in place), or an alias of one, is passed as its declaration's expression, and an alias of an
/// argument as the argument, so that the caller need not declare it (a declaration is written only where later
/// text reads it); any other value by its name.
std::string argumentText(const Module &m, int64_t fn, const std::string &name, int depth = 0) {
  const std::string decl = m.declText[fn].lookup(name);
  std::string base, offset, global, root;
  if ((parseArenaDecl(decl, base, offset) && isGlobal(m.options, base)) ||
      (parseGlobalDecl(decl, global) && isGlobal(m.options, global)))
    return StringRef(decl).split(" = ").second.rtrim("\n").drop_back().str();
  if (depth < 64 && parseAliasDecl(decl, root)) {
    bool request = false;
    if (!isValueName(root, request) || request)
      return name;
    if (m.declText[fn].count(root)) {
      std::string text = argumentText(m, fn, root, depth + 1);
      return text == root ? name : text;
    }
    StringRef r(root);
    if (r.starts_with("arg") || r.starts_with("d_arg") || r.starts_with("out_") || r.starts_with("d_out_"))
      return root; // an argument of the function: in scope everywhere in it
  }
  return name;
}

/// The call that replaces `o` (its row: `rowExpr`), and in `redecls` the live-out declarations that follow it.
/// `expandArguments`: pointers into an arena and globals passed as their expressions (argumentText).
std::string callText(const Module &m, const Occurrence &o, const BlockShape &s, const std::string &fnName,
                     const std::string &rowExpr, std::vector<ChunkDecl> &redecls, bool expandArguments = true) {
  const auto &src = m.functions[o.fn].chunks;
  std::string text = "\n  // " + fnName + " (" + std::to_string(o.length) + " ops): " + src[o.start].location +
                     " .. " + src[o.start + o.length - 1].location + "\n";
  std::string args;
  auto add = [&](const std::string &a) { args += (args.empty() ? "" : ", ") + a; };
  if (s.numRowInts)
    add(rowExpr);
  for (auto [i, name] : llvm::enumerate(o.values))
    if (!o.local[i] && !s.computed[i])
      add(expandArguments ? argumentText(m, o.fn, name) : name);
  for (auto [j, name] : llvm::enumerate(o.globals))
    if (s.varyingGlobal[j] && o.globalInt[j] < 0)
      add(name);
  text += "  " + m.options.forwardMacro + "(" + fnName + "(" + args + "));\n";
  // The live-outs' declarations, with the locals they are declared from (aliases), in the block's order.
  std::set<std::string> needed(o.liveOut.begin(), o.liveOut.end());
  std::vector<const ChunkDecl *> decls;
  for (int64_t c = o.start; c < o.start + o.length; ++c)
    for (const ChunkDecl &d : src[c].decls)
      decls.push_back(&d);
  std::set<std::string> localNames;
  for (const ChunkDecl *d : decls)
    localNames.insert(d->name);
  for (const ChunkDecl *d : llvm::reverse(decls)) {
    if (!needed.count(d->name))
      continue;
    for (const Token &t : lex(d->text)) {
      bool request = false;
      if (t.kind == TokenKind::Ident && t.text != d->name && isValueName(t.text, request) &&
          localNames.count(t.text))
        needed.insert(t.text);
    }
  }
  for (const ChunkDecl *d : decls)
    if (needed.count(d->name))
      redecls.push_back(*d);
  return text;
}

/// The outlined function of `o`'s group.
std::string functionText(const Module &m, const Occurrence &o, const BlockShape &s, const std::string &fnName,
                         int64_t numCalls, const std::set<int64_t> &liveOut) {
  const OutlineOptions &opt = m.options;
  std::string params;
  auto add = [&](const std::string &p) { params += (params.empty() ? "" : ", ") + p; };
  if (s.numRowInts)
    add("const int64_t *row");
  // Row entries: the varying integers, in order.
  std::vector<int64_t> rowIndex(o.ints.size(), -1), offsetIndex(o.values.size(), -1);
  int64_t r = 0;
  for (size_t k = 0; k < o.ints.size(); ++k)
    if (s.varyingInt[k])
      rowIndex[k] = s.sameAs[k] == static_cast<int64_t>(k) ? r++ : rowIndex[s.sameAs[k]];
  for (size_t i = 0; i < o.values.size(); ++i)
    if (s.computed[i] && s.offsetVaries[i])
      offsetIndex[i] = r++;
  auto intText = [&](int64_t k) {
    return rowIndex[k] >= 0 ? "row[" + std::to_string(rowIndex[k]) + "]" : o.ints[k];
  };
  auto globalText = [&](int64_t j) {
    if (!s.varyingGlobal[j])
      return o.globals[j];
    if (o.globalInt[j] >= 0) {
      std::string t = o.globalTable[j];
      size_t at = t.find('#');
      return t.substr(0, at) + intText(o.globalInt[j]) + t.substr(at + 1);
    }
    return "g" + std::to_string(j);
  };
  const auto &types = m.functions[o.fn].types;
  std::string prologue;
  for (auto [i, name] : llvm::enumerate(o.values)) {
    if (o.local[i])
      continue;
    std::string type = types.lookup(name);
    if (s.constIn[i])
      type = withConst(type);
    std::string var = type + (type.empty() || type.back() == '*' ? "" : " ") + "x" + std::to_string(i);
    if (s.computed[i]) {
      std::string elem = StringRef(type).rtrim(" *").str();
      std::string offset = offsetIndex[i] >= 0 ? "row[" + std::to_string(offsetIndex[i]) + "]" : o.arenaOffset[i];
      if (!o.arenaBase[i].empty() && o.arenaBase[i][0] == kTableMark) {
        std::string t = o.arenaBase[i].substr(1);
        size_t at = t.find('#');
        prologue += "  " + var + " = " + t.substr(0, at) + offset + t.substr(at + 1) + ";\n";
        continue;
      }
      prologue += "  " + var + " = reinterpret_cast<" + elem + " *>(" + o.arenaBase[i] + " + " + offset + ");\n";
      continue;
    }
    add(var);
  }
  for (auto [j, name] : llvm::enumerate(o.globals))
    if (s.varyingGlobal[j] && o.globalInt[j] < 0)
      add("decltype(" + name + ") &g" + std::to_string(j));
  std::string text = "/// " + std::to_string(o.length) + " ops, called " + std::to_string(numCalls) +
                     " times (the locations are at the calls): x<i> are its values (the live-ins among them "
                     "parameters or computed from their arena offsets), g<j> the globals that differ between the calls" +
                     std::string(s.numRowInts ? ", and row: the " + std::to_string(s.numRowInts) +
                                                    " integers that differ (arena offsets, tags)"
                                              : "") +
                     ".\n" + opt.statusType + " " + fnName + "(" + params + ") {\n" + prologue;
  std::map<std::string, int64_t> valueIndex, globalIndex;
  int64_t intIndex = 0;
  for (int64_t c = o.start; c < o.start + o.length; ++c) {
    text += "\n";
    for (const Token &t : m.chunks[o.fn][c].tokens) {
      bool request = false;
      if (t.kind == TokenKind::Ident && isValueName(t.text, request)) {
        auto [it, inserted] = valueIndex.try_emplace(t.text, static_cast<int64_t>(valueIndex.size()));
        text += "x" + std::to_string(it->second) + (request ? "_request" : "");
      } else if (t.kind == TokenKind::Ident && isGlobal(opt, t.text)) {
        auto [it, inserted] = globalIndex.try_emplace(t.text, static_cast<int64_t>(globalIndex.size()));
        text += globalText(it->second);
      } else if (t.kind == TokenKind::Int && t.liftable) {
        text += intText(intIndex++);
      } else {
        text += t.text;
      }
    }
  }
  // The results some caller reads after the call (it declares them again): not read here.
  for (int64_t i : liveOut)
    text += "  (void)x" + std::to_string(i) + ";\n";
  return text + "  return " + opt.okValue + ";\n}\n\n";
}

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

/// An item of a function body: an original chunk, or a call that replaced a block.
struct Item {
  int64_t chunk = -1;             ///< the chunk, or -1 for a call
  std::string call;               ///< the call's text
  std::vector<ChunkDecl> redecls; ///< the call's live-outs, declared again after it
};

/// The value names `text` reads (all but `self`).
std::set<std::string> namesIn(StringRef text, StringRef self = "") {
  std::set<std::string> names;
  for (const Token &t : lex(text)) {
    bool request = false;
    if (t.kind == TokenKind::Ident && t.text != self && isValueName(t.text, request))
      names.insert(t.text);
  }
  return names;
}

struct Candidate {
  int64_t length = 0;
  int64_t estimate = 0;
  std::vector<int64_t> starts; ///< sequence positions, increasing, non-overlapping
};

} // namespace

//===----------------------------------------------------------------------===//
// ChunkList
//===----------------------------------------------------------------------===//

namespace {
/// Whether `text` holds the identifier `name` (not as part of a longer one).
bool namesIdentifier(StringRef text, StringRef name) {
  auto identChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(name); at != StringRef::npos; at = text.find(name, at + 1)) {
    size_t end = at + name.size();
    if ((at == 0 || !identChar(text[at - 1])) && (end == text.size() || !identChar(text[end])))
      return true;
  }
  return false;
}
} // namespace

void ChunkList::push(EmittedChunk chunk) {
  if (!pending.empty()) {
    std::string text = chunkText(chunk);
    std::vector<ChunkDecl> first, rest;
    for (ChunkDecl &d : pending)
      (namesIdentifier(text, d.name) ? first : rest).push_back(std::move(d));
    pending = std::move(rest);
    chunk.decls.insert(chunk.decls.begin(), first.begin(), first.end());
  }
  chunks.push_back(std::move(chunk));
}

void ChunkList::defer(const std::vector<ChunkDecl> &decls) { pending.insert(pending.end(), decls.begin(), decls.end()); }

std::vector<EmittedChunk> ChunkList::take(StringRef unusedLocation) {
  if (!pending.empty()) {
    EmittedChunk unused;
    unused.location = unusedLocation.str();
    unused.decls = std::move(pending);
    chunks.push_back(std::move(unused));
  }
  pending.clear();
  std::vector<EmittedChunk> out = std::move(chunks);
  chunks.clear();
  return out;
}

OutlineResult mlir::ptrain::target::outlineRepeatedBlocks(const std::vector<EmittedFunction> &functions,
                                                          const OutlineOptions &options, bool enabled) {
  Module m{functions, options, {}, {}};
  std::vector<std::vector<Item>> bodies(functions.size());
  for (auto [f, fn] : llvm::enumerate(functions)) {
    for (size_t c = 0; c < fn.chunks.size(); ++c)
      bodies[f].push_back({static_cast<int64_t>(c), {}});
  }
  OutlineResult result;
  if (enabled) {
    m.chunks.resize(functions.size());
    m.lastUse.resize(functions.size());
    m.declText.resize(functions.size());
    for (auto [f, fn] : llvm::enumerate(functions)) {
      for (auto [c, chunk] : llvm::enumerate(fn.chunks)) {
        m.chunks[f].push_back(lexChunk(chunk, options));
        for (const std::string &name : m.chunks[f].back().used)
          m.lastUse[f][name] = static_cast<int64_t>(c);
        for (const ChunkDecl &d : chunk.decls)
          m.declText[f][d.name] = d.text;
      }
    }
  }
  constexpr int64_t kCallBytes = 160; ///< a call's comment, its line and a row of the table, roughly
  int64_t uniqueSymbol = 0;
  while (enabled) {
    // The module's sequence: chunk shapes, calls and function boundaries as symbols of their own.
    std::vector<uint64_t> seq;
    std::vector<int64_t> bytes{0};
    std::vector<std::pair<int64_t, int64_t>> where; // (function, item)
    std::vector<int64_t> nextBreak;                  // the first unique symbol at or after each position
    for (auto [f, items] : llvm::enumerate(bodies)) {
      for (auto [p, item] : llvm::enumerate(items)) {
        bool plain = item.chunk >= 0 && !functions[f].chunks[item.chunk].barrier && !functions[f].schedule;
        seq.push_back(plain ? m.chunks[f][item.chunk].shape : (1ULL << 63) + uniqueSymbol++);
        bytes.push_back(bytes.back() + (plain ? m.chunks[f][item.chunk].bytes : 0));
        where.push_back({static_cast<int64_t>(f), plain ? static_cast<int64_t>(p) : -1});
      }
      seq.push_back((1ULL << 63) + uniqueSymbol++);
      bytes.push_back(bytes.back());
      where.push_back({static_cast<int64_t>(f), -1});
    }
    const int64_t n = static_cast<int64_t>(seq.size());
    nextBreak.assign(n + 1, n);
    for (int64_t i = n - 1; i >= 0; --i)
      nextBreak[i] = where[i].second < 0 ? i : nextBreak[i + 1];
    // Prefix hashes: H(i, L) = P[i + L] - P[i] * B^L (mod 2^64).
    const uint64_t base = 0x100000001b3ULL;
    std::vector<uint64_t> prefix(n + 1, 0), power(n + 1, 1);
    for (int64_t i = 0; i < n; ++i) {
      prefix[i + 1] = prefix[i] * base + seq[i];
      power[i + 1] = power[i] * base;
    }
    std::vector<Candidate> best; // the top candidates by estimated savings
    constexpr size_t kTop = 8;
    std::vector<std::pair<uint64_t, int64_t>> windows;
    for (int64_t length = options.minChunks; length <= std::min(options.maxChunks, n / 2); ++length) {
      windows.clear();
      for (int64_t i = 0; i + length <= n; ++i)
        if (nextBreak[i] >= i + length)
          windows.push_back({prefix[i + length] - prefix[i] * power[length], i});
      std::sort(windows.begin(), windows.end());
      bool repeats = false;
      for (size_t a = 0; a < windows.size();) {
        size_t b = a;
        while (b < windows.size() && windows[b].first == windows[a].first)
          ++b;
        if (b - a >= 2) {
          repeats = true;
          Candidate cand;
          cand.length = length;
          int64_t end = -1;
          for (size_t k = a; k < b; ++k)
            if (windows[k].second >= end) {
              cand.starts.push_back(windows[k].second);
              end = windows[k].second + length;
            }
          int64_t count = static_cast<int64_t>(cand.starts.size());
          int64_t weight = bytes[cand.starts[0] + length] - bytes[cand.starts[0]];
          cand.estimate = (count - 1) * weight - count * kCallBytes;
          if (count >= 2 && cand.estimate >= options.minSavedBytes &&
              (best.size() < kTop || cand.estimate > best.back().estimate)) {
            best.push_back(std::move(cand));
            std::sort(best.begin(), best.end(),
                      [](const Candidate &x, const Candidate &y) { return x.estimate > y.estimate; });
            if (best.size() > kTop)
              best.pop_back();
          }
        }
        a = b;
      }
      if (!repeats)
        break; // no longer window can repeat either
    }
    // Verify the candidates; take the one that saves the most.
    int64_t bestSaved = options.minSavedBytes - 1;
    std::vector<Occurrence> chosen;
    for (const Candidate &cand : best) {
      if (cand.estimate <= bestSaved)
        break;
      std::vector<Occurrence> occs;
      for (int64_t start : cand.starts) {
        auto [f, p] = where[start];
        occs.push_back(canonicalize(m, f, bodies[f][p].chunk, cand.length));
      }
      std::map<std::string, std::vector<const Occurrence *>> groups;
      for (const Occurrence &o : occs)
        if (o.valid)
          groups[o.key].push_back(&o);
      for (auto &[key, group] : groups) {
        if (group.size() < 2)
          continue;
        BlockShape s = shapeOf(group);
        int64_t weight = 0, calls = 0;
        for (int64_t c = group[0]->start; c < group[0]->start + cand.length; ++c)
          weight += m.chunks[group[0]->fn][c].bytes;
        for (const Occurrence *o : group) {
          std::vector<ChunkDecl> redecls;
          // Arguments by name: a pointer passed as its expression saves its declaration in the caller.
          calls += static_cast<int64_t>(callText(m, *o, s, "f", "r", redecls, false).size()) + 8 * s.numRowInts;
          for (const ChunkDecl &d : redecls)
            calls += static_cast<int64_t>(d.text.size());
        }
        int64_t saved = static_cast<int64_t>(group.size()) * weight - weight - calls;
        if (saved > bestSaved) {
          bestSaved = saved;
          chosen.clear();
          for (const Occurrence *o : group)
            chosen.push_back(*o);
        }
      }
    }
    if (chosen.empty())
      break;
    // Outline: the function, its row table, and a call per occurrence (replaced from the back).
    std::vector<const Occurrence *> group;
    for (const Occurrence &o : chosen)
      group.push_back(&o);
    BlockShape s = shapeOf(group);
    const std::string fnName = options.prefix + std::to_string(result.numBlocks);
    const std::string rows = "k" + fnName + "_rows";
    std::set<int64_t> liveOut;
    for (const Occurrence &o : chosen)
      for (const std::string &name : o.liveOut)
        liveOut.insert(llvm::find(o.values, name) - o.values.begin());
    std::string definition =
        functionText(m, chosen.front(), s, fnName, static_cast<int64_t>(chosen.size()), liveOut);
    if (s.numRowInts) {
      std::string table = "const int64_t " + rows + "[" + std::to_string(chosen.size()) + "][" +
                          std::to_string(s.numRowInts) + "] = {\n";
      for (const Occurrence &o : chosen)
        table += "    {" + llvm::join(rowOf(o, s), ", ") + "},\n";
      definition = table + "};\n" + definition;
    }
    result.definitions += definition;
    for (int64_t r = static_cast<int64_t>(chosen.size()) - 1; r >= 0; --r) {
      const Occurrence &o = chosen[r];
      auto &items = bodies[o.fn];
      auto it = llvm::find_if(items, [&](const Item &item) { return item.chunk == o.start; });
      Item call;
      call.call = callText(m, o, s, fnName, rows + "[" + std::to_string(r) + "]", call.redecls);
      it = items.erase(it, it + o.length);
      items.insert(it, std::move(call));
    }
    ++result.numBlocks;
    result.numOccurrences += static_cast<int64_t>(chosen.size());
  }
  for (auto [f, items] : llvm::enumerate(bodies)) {
    if (!enabled) {
      std::string body;
      for (const Item &item : items) {
        const EmittedChunk &c = functions[f].chunks[item.chunk];
        body += "\n  // " + c.location + "\n" + chunkText(c);
      }
      result.bodies.push_back(std::move(body));
      continue;
    }
    // A lowered schedule: its table and loop (ScheduleTable.h), where one can be written.
    if (functions[f].schedule)
      if (std::optional<std::string> table = writeScheduleTable(functions[f])) {
        result.bodies.push_back(std::move(*table));
        continue;
      }
    // From the end: a declaration (a pointer, without effects) is written only if later text reads it, so
    // that the pointers a block now computes itself, and live-outs nothing reads, are not declared.
    std::vector<std::string> parts(items.size());
    std::set<std::string> needed;
    for (int64_t p = static_cast<int64_t>(items.size()) - 1; p >= 0; --p) {
      const Item &item = items[p];
      const EmittedChunk *c = item.chunk >= 0 ? &functions[f].chunks[item.chunk] : nullptr;
      const std::string head = c ? "\n  // " + c->location + "\n" + c->header : item.call;
      const std::string &code = c ? c->code : std::string();
      for (const std::string &n : namesIn(head + code))
        needed.insert(n);
      std::string decls;
      const std::vector<ChunkDecl> &list = c ? c->decls : item.redecls;
      for (const ChunkDecl &d : llvm::reverse(list)) {
        if (!needed.count(d.name))
          continue;
        for (const std::string &n : namesIn(d.text, d.name))
          needed.insert(n);
        decls = d.text + decls;
      }
      parts[p] = head + decls + code;
    }
    std::string body;
    for (const std::string &part : parts)
      body += part;
    result.bodies.push_back(std::move(body));
  }
  return result;
}
