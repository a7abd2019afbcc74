//===- CompressionConfig.cpp - codec specs and per-edge overrides ---*- C++ -*-===//
//
// See include/ptrain/Transforms/CompressionConfig.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/CompressionConfig.h"

#include "ptrain/Plan/ScheduleTable.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::ptrain;

using EmitErrorFn = llvm::function_ref<InFlightDiagnostic()>;

FailureOr<CodecAttrInterface> mlir::ptrain::parseCodecSpec(MLIRContext *context, StringRef spec, StringRef what,
                                                           EmitErrorFn emitError) {
  spec = spec.trim();
  auto error = [&]() -> InFlightDiagnostic {
    InFlightDiagnostic diag = emitError();
    diag << what << ": ";
    return diag;
  };
  if (spec == "none")
    return CodecAttrInterface();
  if (spec.starts_with("#")) {
    Attribute attr = parseAttribute(spec, context);
    auto codec = dyn_cast_or_null<CodecAttrInterface>(attr);
    if (!codec)
      return error() << "'" << spec << "' is not a codec attribute", failure();
    return codec;
  }
  auto [name, rest] = spec.split(':');
  llvm::StringMap<std::string> params;
  SmallVector<StringRef> pieces;
  if (!rest.empty())
    rest.split(pieces, ',');
  for (StringRef piece : pieces) {
    auto [key, value] = piece.split('=');
    if (key.trim().empty() || value.trim().empty())
      return error() << "malformed parameter '" << piece << "' in codec spec '" << spec << "' (expected key=value)",
             failure();
    params[key.trim()] = value.trim().str();
  }
  // Takes the parameter `key` (erased, so leftovers are unknown), parsed as an integer, a float or a bool.
  bool bad = false;
  auto integer = [&](StringRef key, int64_t byDefault) {
    auto it = params.find(key);
    if (it == params.end())
      return byDefault;
    int64_t value = 0;
    if (StringRef(it->second).getAsInteger(10, value)) {
      error() << "parameter " << key << " of '" << spec << "' must be an integer, got '" << it->second << "'";
      bad = true;
    }
    params.erase(it);
    return value;
  };
  auto real = [&](StringRef key) -> FloatAttr {
    auto it = params.find(key);
    if (it == params.end())
      return FloatAttr();
    double value = 0;
    if (StringRef(it->second).getAsDouble(value)) {
      error() << "parameter " << key << " of '" << spec << "' must be a number, got '" << it->second << "'";
      bad = true;
    }
    params.erase(it);
    return FloatAttr::get(Float64Type::get(context), value);
  };
  auto boolean = [&](StringRef key) -> BoolAttr {
    auto it = params.find(key);
    if (it == params.end())
      return BoolAttr();
    bool value = it->second == "true";
    if (it->second != "true" && it->second != "false") {
      error() << "parameter " << key << " of '" << spec << "' must be true or false, got '" << it->second << "'";
      bad = true;
    }
    params.erase(it);
    return BoolAttr::get(context, value);
  };
  auto checked = [&]() { return error(); };
  CodecAttrInterface codec;
  if (name == "fp16" || name == "bf16") {
    codec = CastAttr::get(context, name == "fp16" ? Type(Float16Type::get(context)) : BFloat16Type::get(context));
  } else if (name == "powersgd") {
    if (!params.count("rank"))
      return error() << "powersgd needs rank=R in '" << spec << "'", failure();
    int64_t rank = integer("rank", 0);
    BoolAttr warm = boolean("warm-start");
    if (!bad)
      codec = PowerSGDAttr::getChecked(checked, context, rank, warm, MatrixViewAttr());
  } else if (name == "topk" || name == "randk") {
    int64_t k = integer("k", 0);
    FloatAttr ratio = real("ratio");
    int64_t seed = name == "randk" ? integer("seed", 0) : 0;
    if (!bad)
      codec = name == "topk" ? CodecAttrInterface(TopKAttr::getChecked(checked, context, k, ratio))
                             : CodecAttrInterface(RandKAttr::getChecked(checked, context, k, ratio, seed));
  } else if (name == "quant") {
    if (!params.count("bits"))
      return error() << "quant needs bits=B in '" << spec << "'", failure();
    int64_t bits = integer("bits", 0);
    QuantGranularity granularity = QuantGranularity::Channel;
    if (auto it = params.find("granularity"); it != params.end()) {
      std::optional<QuantGranularity> g = symbolizeQuantGranularity(it->second);
      if (!g)
        return error() << "granularity must be tensor, channel or block, got '" << it->second << "'", failure();
      granularity = *g;
      params.erase(it);
    }
    int64_t block = integer("block-size", 0);
    BoolAttr symmetric = boolean("symmetric");
    if (!bad)
      codec = QuantAttr::getChecked(checked, context, bits, granularity, block, symmetric, MatrixViewAttr());
  } else if (name == "tahquant") {
    int64_t tile = integer("tile", 64);
    int64_t low = integer("low-bits", 3);
    int64_t high = integer("high-bits", 4);
    FloatAttr ratio = real("high-ratio");
    if (!bad)
      codec = TahQuantAttr::getChecked(checked, context, tile, low, high, ratio);
  } else {
    return error() << "unknown codec '" << name
                   << "' (known: none, powersgd, topk, randk, quant, tahquant, fp16, bf16, or a #ptrain codec "
                      "attribute)",
           failure();
  }
  if (bad || !codec)
    return failure();
  if (!params.empty())
    return error() << "unknown parameter '" << params.begin()->getKey() << "' for codec " << name, failure();
  return codec;
}

LogicalResult mlir::ptrain::checkCodecForEdge(CodecAttrInterface codec, RankedTensorType type, const Twine &edge,
                                              EmitErrorFn emitError) {
  if (isa<LinearAEAttr>(codec))
    return emitError() << "codec " << Attribute(codec) << " on " << edge
                       << ": the linear autoencoder is trained with the model, so its weights must exist before "
                          "autodiff: insert it with --ptrain-insert-linear-ae=\"dim="
                       << cast<LinearAEAttr>(codec).getDim()
                       << "\" between --ptrain-split-stages and --ptrain-build-training-step (the sends then carry "
                          "its code uncompressed)",
           failure();
  std::string where = edge.str();
  return codec.verifyForType(
      [&] {
        InFlightDiagnostic diag = emitError();
        diag << "codec " << Attribute(codec) << " cannot serve " << where << ": ";
        return diag;
      },
      type);
}

namespace {
/// The edges one override entry names.
struct Selection {
  /// (virtual stage, micro-batch) pairs per direction (the stage without virtual stages).
  SmallVector<std::pair<int64_t, int64_t>> forward, backward;
  /// Gradient keys and types.
  SmallVector<std::pair<std::string, RankedTensorType>> gradients;
};
} // namespace

LogicalResult mlir::ptrain::applyCompressionOverrides(StringRef path, const CompressionEdges &edges,
                                                      CompressionPlan &plan, MLIRContext *context,
                                                      EmitErrorFn emitError, int64_t &numOverridden) {
  auto fileError = [&]() -> InFlightDiagnostic {
    InFlightDiagnostic diag = emitError();
    diag << "overrides file '" << path << "': ";
    return diag;
  };
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fileError() << "cannot read it (" << buffer.getError().message() << ")", failure();
  llvm::Expected<llvm::json::Value> root = llvm::json::parse((*buffer)->getBuffer());
  if (!root)
    return fileError() << "invalid JSON: " << llvm::toString(root.takeError()), failure();
  const llvm::json::Object *object = root->getAsObject();
  const llvm::json::Array *entries = object ? object->getArray("edges") : nullptr;
  if (!entries)
    return fileError() << "expected an object with an array \"edges\"", failure();
  for (auto [index, entryValue] : llvm::enumerate(*entries)) {
    auto error = [&, index = index]() -> InFlightDiagnostic {
      InFlightDiagnostic diag = fileError();
      diag << "edges[" << index << "]: ";
      return diag;
    };
    const llvm::json::Object *entry = entryValue.getAsObject();
    if (!entry)
      return error() << "expected an object", failure();
    for (const auto &field : *entry)
      if (!llvm::is_contained({"stage", "direction", "link", "step", "parameter", "codec"}, field.first.str()))
        return error() << "unknown field \"" << field.first.str()
                       << "\" (known: stage, direction, link, step, parameter, codec)",
               failure();
    std::optional<StringRef> spec = entry->getString("codec");
    if (!spec)
      return error() << "needs a string \"codec\" (a codec spec or \"none\")", failure();
    FailureOr<CodecAttrInterface> codec = parseCodecSpec(context, *spec, "codec", error);
    if (failed(codec))
      return failure();

    Selection sel;
    std::optional<int64_t> stage = entry->getInteger("stage");
    if (entry->get("stage") && (!stage || *stage < 0 || *stage >= edges.pp))
      return error() << "\"stage\" must be an integer in [0, " << edges.pp << ")", failure();
    // Every send of stage s in one direction: with virtual stages, of each of its model chunks that sends
    // (chunk k is virtual stage k pp + s; the first sends no gradient, the last no activation).
    const int64_t chunks = edges.pp * edges.v;
    auto allOf = [&](int64_t s, bool forward) {
      for (int64_t c = s; c < chunks; c += edges.pp)
        if (forward ? c + 1 < chunks : c > 0)
          for (int64_t i = 0; i < edges.m; ++i)
            (forward ? sel.forward : sel.backward).push_back({c, i});
    };
    if (std::optional<StringRef> link = entry->getString("link")) {
      int64_t from = -1, to = -1;
      auto [a, b] = link->split("->");
      // With virtual stages the pipeline wraps around: pp-1 -> 0 forward and 0 -> pp-1 backward too.
      const int64_t p = edges.pp;
      bool wraps = edges.v > 1 && p > 2;
      bool ok = !a.trim().getAsInteger(10, from) && !b.trim().getAsInteger(10, to) && from >= 0 && to >= 0 &&
                from < p && to < p &&
                (to == from + 1 || to == from - 1 || (wraps && (to == (from + 1) % p || from == (to + 1) % p)));
      if (!ok)
        return error() << "\"link\" '" << *link << "' does not exist: links are \"s->s+1\" (forward) and \"s->s-1\" "
                       << "(backward) between the " << p << " stages"
                       << (wraps ? ", and \"" + std::to_string(p - 1) + "->0\" / \"0->" + std::to_string(p - 1) +
                                       "\" between the model chunks of the interleaved schedule"
                                 : std::string()),
               failure();
      // At pp = 2 with virtual stages, 0->1 and 1->0 each carry both directions' sends of that rank.
      bool forward = to == (from + 1) % p, backward = from == (to + 1) % p;
      if (forward)
        allOf(from, true);
      if (backward)
        allOf(from, false);
    } else if (std::optional<StringRef> step = entry->getString("step")) {
      if (!stage)
        return error() << "\"step\" needs \"stage\"", failure();
      const std::vector<std::string> &row = edges.steps[*stage];
      if (!llvm::is_contained(row, step->str()))
        return error() << "stage " << *stage << " has no schedule step '" << *step << "'", failure();
      std::optional<ScheduleStep> parsed = ScheduleStep::parse(*step);
      bool forward = parsed->kind == ScheduleStep::Forward;
      const int64_t c = parsed->chunk * edges.pp + *stage;
      if (parsed->kind == ScheduleStep::Optimizer || (forward && c == chunks - 1) || (!forward && c == 0))
        return error() << "step '" << *step << "' of stage " << *stage << " sends nothing", failure();
      (forward ? sel.forward : sel.backward).push_back({c, parsed->microBatch});
    } else if (std::optional<StringRef> direction = entry->getString("direction")) {
      if (!stage)
        return error() << "\"direction\" needs \"stage\"", failure();
      if (*direction != "forward" && *direction != "backward")
        return error() << "\"direction\" must be forward or backward, got '" << *direction << "'", failure();
      bool forward = *direction == "forward";
      if ((forward && *stage == edges.pp - 1 && edges.v == 1) || (!forward && *stage == 0 && edges.v == 1))
        return error() << "stage " << *stage << " sends nothing " << *direction, failure();
      allOf(*stage, forward);
    } else if (std::optional<StringRef> param = entry->getString("parameter")) {
      if (edges.dp < 2)
        return error() << "\"parameter\" '" << *param << "' names a dp gradient all-reduce, but dp = " << edges.dp,
               failure();
      std::string key = param->str() + "/grad";
      for (const auto &stageGrads : edges.gradients)
        for (const auto &[gradKey, type] : stageGrads)
          if (gradKey == key)
            sel.gradients.push_back({gradKey, type});
      if (sel.gradients.empty())
        return error() << "no parameter '" << *param << "' has a dp gradient all-reduce", failure();
    } else {
      return error() << "names no edge: give \"link\", \"stage\" with \"direction\" or \"step\", or \"parameter\"",
             failure();
    }

    const char *stageWord = edges.v > 1 ? "virtual stage " : "stage ";
    for (auto [s, i] : sel.forward) {
      if (*codec &&
          failed(checkCodecForEdge(*codec, edges.forwardTypes[s],
                                   "the forward send of " + Twine(stageWord) + Twine(s) + " (activation)", error)))
        return failure();
      plan.forwardSend(s, i) = *codec;
      ++numOverridden;
    }
    for (auto [s, i] : sel.backward) {
      if (*codec && failed(checkCodecForEdge(
                        *codec, edges.backwardTypes[s],
                        "the backward send of " + Twine(stageWord) + Twine(s) + " (activation gradient)", error)))
        return failure();
      plan.backwardSend(s, i) = *codec;
      ++numOverridden;
    }
    for (auto &[key, type] : sel.gradients) {
      if (*codec && failed(checkCodecForEdge(*codec, type, "the dp all-reduce of '" + key + "'", error)))
        return failure();
      plan.dpCodecs[key] = *codec;
      ++numOverridden;
    }
  }
  return success();
}
