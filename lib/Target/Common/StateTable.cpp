//===- StateTable.cpp - The state table of a step as runs of layers -------===//
//
// See StateTable.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Common/StateTable.h"

#include "Common/EmitHelpers.h"
#include "Common/OpGeometry.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStateInit.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

KeyTemplate mlir::ptrain::target::keyTemplate(StringRef key) {
  KeyTemplate t;
  t.prefix = key.str();
  size_t at = key.find_first_of("0123456789");
  if (at == StringRef::npos)
    return t;
  size_t end = at;
  while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end])))
    ++end;
  StringRef digits = key.slice(at, end);
  if (digits.size() > 9 || (digits.size() > 1 && digits.front() == '0'))
    return t; // kept whole: std::to_string would not print it back
  t.numbered = true;
  t.prefix = key.take_front(at).str();
  t.suffix = key.drop_front(end).str();
  digits.getAsInteger(10, t.number);
  return t;
}

std::vector<StateRun> mlir::ptrain::target::compressStateRuns(ArrayRef<std::pair<int64_t, int64_t>> items,
                                                              ArrayRef<bool> numbered) {
  constexpr int64_t kMaxPeriod = 1024; // bounds the search: O(items x kMaxPeriod) compares at worst
  const int64_t n = static_cast<int64_t>(items.size());
  std::vector<StateRun> runs;
  for (int64_t i = 0; i < n;) {
    StateRun best{items[i].first, 1, 1, items[i].second, 0};
    // A period: consecutive templates from items[i]'s, every numbered one with the same number.
    std::optional<int64_t> number;
    for (int64_t period = 1; period <= kMaxPeriod && i + period <= n; ++period) {
      const auto &[t, num] = items[i + period - 1];
      if (t != items[i].first + period - 1)
        break;
      if (numbered[t]) {
        if (number && *number != num)
          break;
        number = num;
      }
      // Its repeats: the same templates, the number up by one step each (the first repeat decides it).
      int64_t step = 0, count = 1;
      for (int64_t next = i + count * period; next + period <= n; next = i + ++count * period) {
        bool same = true;
        std::optional<int64_t> repeatNumber;
        for (int64_t p = 0; p < period && same; ++p) {
          const auto &[tp, np] = items[next + p];
          same = tp == items[i + p].first;
          if (same && numbered[tp]) {
            if (!repeatNumber)
              repeatNumber = np;
            same = np == *repeatNumber;
          }
        }
        if (!same)
          break;
        if (number && repeatNumber) {
          if (count == 1)
            step = *repeatNumber - *number;
          if (*repeatNumber != *number + count * step)
            break;
        }
      }
      if (count > 1 && period * count > best.period * best.count)
        best = {items[i].first, period, count, number.value_or(0), step};
    }
    // An item no period repeats from joins the run before it when that one does not repeat either and the two
    // make one period (consecutive templates, one number): the items before a repeated run do not swallow its
    // first repeat.
    auto hasNumber = [&](const StateRun &r) {
      return llvm::any_of(llvm::seq<int64_t>(r.first, r.first + r.period), [&](int64_t t) { return numbered[t]; });
    };
    if (best.count == 1 && !runs.empty() && runs.back().count == 1 &&
        runs.back().first + runs.back().period == best.first &&
        (!hasNumber(best) || !hasNumber(runs.back()) || runs.back().number0 == best.number0)) {
      if (!hasNumber(runs.back()))
        runs.back().number0 = best.number0;
      ++runs.back().period;
    } else {
      runs.push_back(best);
    }
    i += best.period * best.count;
  }
  return runs;
}

std::string mlir::ptrain::target::stateTable(ArrayRef<StateOp> states,
                                             ArrayRef<std::pair<std::string, std::vector<int64_t>>> indexLists) {
  // The templates, in order of first appearance, and each state's (template, number).
  using Key = std::tuple<std::string, std::string, bool, std::string>; // prefix, suffix, numbered, the rest
  std::map<Key, int64_t> templateIndex;
  std::vector<std::string> templateRows;
  SmallVector<bool> numbered;
  std::vector<std::pair<int64_t, int64_t>> items;
  size_t maxRank = 1, numDims = 0;
  for (StateOp state : states) {
    KeyTemplate key = keyTemplate(state.getKey());
    RankedTensorType type = state.getTensorType();
    std::optional<StateInit> init = getStateInit(state);
    std::string rest = std::string(type.getElementType().isF32() ? "PTRAIN_DTYPE_F32" : "PTRAIN_DTYPE_I64") + ", " +
                       stateKindEnum(state.getKind()) + ", " + std::to_string(type.getRank()) + ", {" +
                       (type.getRank() ? joinInts(type.getShape()) : std::string("0")) + "}, " +
                       (init ? std::string(init->kind == kOrthogonalTransposedInit
                                               ? "PTRAIN_STATE_INIT_ORTHOGONAL_TRANSPOSED, "
                                               : "PTRAIN_STATE_INIT_ORTHOGONAL, ") +
                                   std::to_string(init->seed) + "u"
                             : std::string("PTRAIN_STATE_INIT_NONE, 0"));
    maxRank = std::max<size_t>(maxRank, type.getRank());
    numDims += type.getRank();
    auto [it, added] = templateIndex.try_emplace(Key{key.prefix, key.suffix, key.numbered, rest},
                                                  static_cast<int64_t>(templateRows.size()));
    if (added) {
      templateRows.push_back("{" + stringLiteral(key.prefix) + ", " + stringLiteral(key.suffix) + ", " +
                             (key.numbered ? "true" : "false") + ", " + rest + "}");
      numbered.push_back(key.numbered);
    }
    items.push_back({it->second, key.number});
  }
  std::vector<StateRun> runs = compressStateRuns(items, numbered);

  std::string s;
  llvm::raw_string_ostream os(s);
  os << "/// The state table as runs of a layer's rows (include/ptrain/Target/Common/StateTable.h): a template is a state's\n"
        "/// key around its number (prefix, number, suffix; the prefix alone when not numbered), dtype, kind,\n"
        "/// rank, dims and init; a run repeats the templates [first, first + period) count times, the number\n"
        "/// number0 + c step in repeat c. expandStateTable fills kStates, kStateDims and the stages' index lists\n"
        "/// from them when the library is loaded.\n"
     << "struct StateTemplate {\n  const char *prefix, *suffix;\n  bool numbered;\n  ptrain_dtype_t dtype;\n"
        "  int32_t kind, rank;\n  int64_t dims["
     << maxRank << "];\n  int32_t init;\n  uint64_t init_seed;\n};\n"
     ;
  os << "const StateTemplate kStateTemplates[" << std::max<size_t>(templateRows.size(), 1) << "] = {\n";
  for (const std::string &row : templateRows)
    os << "    " << row << ",\n";
  if (templateRows.empty())
    os << "    {\"\", \"\", false, PTRAIN_DTYPE_F32, 0, 0, {0}, PTRAIN_STATE_INIT_NONE, 0},\n";
  os << "};\n";
  SmallVector<int64_t> runInts;
  for (const StateRun &r : runs)
    runInts.append({r.first, r.period, r.count, r.number0, r.step});
  os << "/// The runs, five integers each: first, period, count, number0, step.\n"
     << "constexpr int64_t kNumStateRuns = " << runs.size() << ";\n"
     << "const int64_t kStateRuns[" << std::max<size_t>(runInts.size(), 1) << "] = {"
     << (runs.empty() ? std::string("0") : wrapInts(runInts, 15, "    ")) << "};\n";
  os << "constexpr int64_t kNumStates = " << states.size() << ";\n"
     << "/// The dims of every state, in kStates' order (a state's descriptor points at its own).\n"
     << "int64_t kStateDims[" << std::max<size_t>(numDims, 1) << "] = {};\n"
     << "/// Every state's descriptor; the data pointers are set when the storage is allocated (allocateStates).\n"
     << "ptrain_state_desc_t kStates[" << std::max<size_t>(states.size(), 1) << "] = {};\n"
     << "/// The keys kStates points to (set once, never resized).\n"
     << "std::vector<std::string> state_keys;\n";
  for (const auto &[name, indices] : indexLists) {
    SmallVector<int64_t> ranges;
    for (int64_t index : indices) {
      if (!ranges.empty() && ranges[ranges.size() - 2] + ranges.back() == index)
        ++ranges.back();
      else
        ranges.append({index, 1});
    }
    os << "const int64_t " << name << "Ranges[" << std::max<size_t>(ranges.size(), 1) << "] = {"
       << (ranges.empty() ? std::string("0") : wrapInts(ranges, 16, "    ")) << "};\n"
       << "int64_t " << name << "[" << std::max<size_t>(indices.size(), 1) << "] = {};\n";
  }
  os << "\n/// Expands kStateRuns into kStates and kStateDims, and each stage's index ranges into its list.\n"
        "bool expandStateTable() {\n"
        "  state_keys.resize(kNumStates);\n"
        "  int64_t i = 0, dims = 0;\n"
        "  for (int64_t r = 0; r < kNumStateRuns; ++r) {\n"
        "    const int64_t *run = kStateRuns + 5 * r; // first, period, count, number0, step\n"
        "    for (int64_t c = 0; c < run[2]; ++c) {\n"
        "      for (int64_t p = 0; p < run[1]; ++p, ++i) {\n"
        "        const StateTemplate &t = kStateTemplates[run[0] + p];\n"
        "        state_keys[i] = t.prefix;\n"
        "        if (t.numbered)\n"
        "          state_keys[i] += std::to_string(run[3] + c * run[4]) + t.suffix;\n"
        "        for (int32_t k = 0; k < t.rank; ++k)\n"
        "          kStateDims[dims + k] = t.dims[k];\n"
        "        kStates[i] = {state_keys[i].c_str(), nullptr, t.dtype, t.kind, t.rank,\n"
        "                      t.rank ? kStateDims + dims : nullptr, t.init, t.init_seed};\n"
        "        dims += t.rank;\n"
        "      }\n"
        "    }\n"
        "  }\n";
  for (const auto &[name, indices] : indexLists)
    os << "  for (int64_t r = 0, k = 0; k < " << indices.size() << "; r += 2)\n"
       << "    for (int64_t j = 0; j < " << name << "Ranges[r + 1]; ++j)\n"
       << "      " << name << "[k++] = " << name << "Ranges[r] + j;\n";
  os << "  return i == kNumStates;\n}\n"
        "[[maybe_unused]] const bool state_table_expanded = expandStateTable();\n";
  return s;
}

std::string mlir::ptrain::target::withNamedStatePointers(StringRef unit, ArrayRef<StateOp> states,
                                                         llvm::function_ref<std::string(StateOp)> var) {
  // The identifiers of the form state_<N>_... in the unit, in one pass.
  llvm::StringSet<> named;
  auto identChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = unit.find("state_"); at != StringRef::npos; at = unit.find("state_", at + 1)) {
    if (at > 0 && identChar(unit[at - 1]))
      continue;
    size_t end = at;
    while (end < unit.size() && identChar(unit[end]))
      ++end;
    named.insert(unit.slice(at, end));
  }
  std::string pointers;
  for (auto [index, op] : llvm::enumerate(states)) {
    StateOp state = op;
    std::string name = var(state);
    if (!named.contains(name))
      continue;
    const bool f32 = state.getTensorType().getElementType().isF32();
    pointers += std::string("[[maybe_unused]] ") + (f32 ? "float *&" : "int64_t *&") + name + " = " +
                (f32 ? "state_f32[" : "state_i64[") + std::to_string(index) + "];\n";
  }
  size_t mark = unit.find(kNamedStatesMark);
  if (mark == StringRef::npos)
    return unit.str();
  return (unit.take_front(mark) + pointers + unit.drop_front(mark + kNamedStatesMark.size())).str();
}
