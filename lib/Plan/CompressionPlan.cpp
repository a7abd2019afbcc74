//===- CompressionPlan.cpp - the decisions of --ptrain-compress ---*- C++ -*-===//
//
// See include/ptrain/Plan/CompressionPlan.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Plan/CompressionPlan.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {
/// One row of sends: `false` (uncompressed), `true` (the direction's codec) or a codec attribute.
ArrayAttr sendRow(Builder &b, ArrayRef<CodecAttrInterface> row, CodecAttrInterface codec) {
  SmallVector<Attribute> attrs;
  for (CodecAttrInterface c : row)
    attrs.push_back(!c ? Attribute(b.getBoolAttr(false)) : c == codec ? Attribute(b.getBoolAttr(true)) : Attribute(c));
  return b.getArrayAttr(attrs);
}
} // namespace

DictionaryAttr CompressionPlan::toAttr(MLIRContext *context) const {
  Builder b(context);
  auto bools = [&](const std::vector<bool> &flags) {
    SmallVector<Attribute> attrs;
    for (bool flag : flags)
      attrs.push_back(b.getBoolAttr(flag));
    return b.getArrayAttr(attrs);
  };
  auto rows = [&](const std::vector<std::vector<CodecAttrInterface>> &sends, CodecAttrInterface codec) {
    SmallVector<Attribute> attrs;
    for (const std::vector<CodecAttrInterface> &row : sends)
      attrs.push_back(sendRow(b, row, codec));
    return b.getArrayAttr(attrs);
  };
  NamedAttrList entries;
  entries.set("policy", b.getStringAttr(policy));
  entries.set("backward_sends", rows(backwardSends, backwardCodec));
  if (backwardCodec)
    entries.set("backward_codec", backwardCodec);
  entries.set("backward_error_feedback", b.getBoolAttr(backwardErrorFeedback));
  entries.set("forward_sends", rows(forwardSends, forwardCodec));
  if (forwardCodec)
    entries.set("forward_codec", forwardCodec);
  entries.set("forward_error_feedback", b.getBoolAttr(forwardErrorFeedback));
  entries.set("dp_all_reduce", bools(dpAllReduce));
  entries.set("sc_rank", b.getI64IntegerAttr(scRank));
  entries.set("sc_error_feedback", b.getBoolAttr(scErrorFeedback));
  if (!dpCodecs.empty()) {
    NamedAttrList codecs;
    for (const auto &[key, codec] : dpCodecs)
      codecs.set(key, codec ? Attribute(codec) : Attribute(b.getBoolAttr(false)));
    entries.set("dp_codecs", codecs.getDictionary(context));
  }
  entries.set("fused_embedding", b.getBoolAttr(fusedEmbedding));
  if (skipStages)
    entries.set("skip_stages", b.getI64IntegerAttr(skipStages));
  return entries.getDictionary(context);
}

FailureOr<std::optional<CompressionPlan>> mlir::ptrain::readCompressionPlan(ModuleOp module, int64_t pp, int64_t m,
                                                                            StringRef pass) {
  auto dict = module->getAttrOfType<DictionaryAttr>("ptrain.compression");
  if (!dict)
    return std::optional<CompressionPlan>();
  auto bad = [&](const Twine &why) {
    emitError(module.getLoc()) << pass << ": ptrain.compression: " << why;
    return failure();
  };
  CompressionPlan plan;
  auto policy = dict.getAs<StringAttr>("policy");
  if (!policy)
    return bad("needs a string `policy`");
  plan.policy = policy.getValue().str();
  // With virtual stages (the interleaved schedule) a row holds V M entries: chunk k's micro-batch i at k M + i.
  if (PipelineAttr pipeline = getPipeline(module))
    plan.virtualStages = pipeline.getVirtualStages(); // >= 1 (#ptrain.pipeline C2)
  const int64_t v = plan.virtualStages, entries = v * m;
  auto readFlags = [&](ArrayAttr array, int64_t size, std::vector<bool> &out) -> LogicalResult {
    if (!array || static_cast<int64_t>(array.size()) != size)
      return failure();
    for (Attribute flag : array) {
      auto value = dyn_cast<BoolAttr>(flag);
      if (!value)
        return failure();
      out.push_back(value.getValue());
    }
    return success();
  };
  // The rows of one direction: per stage, per micro-batch false, true (the direction's codec) or a codec.
  auto readSends = [&](StringRef name, StringRef codecName, std::vector<std::vector<CodecAttrInterface>> &out,
                       CodecAttrInterface &codec) -> LogicalResult {
    codec = dict.getAs<CodecAttrInterface>(codecName);
    if (dict.get(codecName) && !codec)
      return bad("`" + codecName + "` must be a codec attribute");
    auto sends = dict.getAs<ArrayAttr>(name);
    if (!sends && name == "forward_sends") { // optional: no forward compression
      out.assign(pp, std::vector<CodecAttrInterface>(entries));
      return success();
    }
    if (!sends || static_cast<int64_t>(sends.size()) != pp)
      return bad("`" + name + "` needs one row per stage (" + Twine(pp) + ")");
    for (Attribute rowAttr : sends) {
      auto row = dyn_cast<ArrayAttr>(rowAttr);
      if (!row || static_cast<int64_t>(row.size()) != entries)
        return bad("every `" + name + "` row needs one entry per " +
                   (v > 1 ? "model chunk and micro-batch (" + Twine(v) + " x " + Twine(m) + ")"
                          : "micro-batch (" + Twine(m) + ")"));
      out.emplace_back();
      for (Attribute entry : row) {
        if (auto flag = dyn_cast<BoolAttr>(entry)) {
          if (flag.getValue() && !codec)
            return bad("`" + name + "` marks a send `true` but there is no `" + codecName + "`");
          out.back().push_back(flag.getValue() ? codec : CodecAttrInterface());
        } else if (auto c = dyn_cast<CodecAttrInterface>(entry)) {
          out.back().push_back(c);
        } else {
          return bad("a `" + name + "` entry must be a bool or a codec attribute");
        }
      }
    }
    return success();
  };
  if (failed(readSends("backward_sends", "backward_codec", plan.backwardSends, plan.backwardCodec)) ||
      failed(readSends("forward_sends", "forward_codec", plan.forwardSends, plan.forwardCodec)))
    return failure();
  for (int64_t i = 0; i < m && pp > 0; ++i) {
    if (plan.backwardCodecOf(0, i))
      return bad(v > 1 ? "virtual stage 0 sends no gradient backward" : "stage 0 sends no gradient backward");
    if (plan.forwardCodecOf(pp * v - 1, i))
      return bad(v > 1 ? "the last virtual stage sends no activation forward"
                       : "the last stage sends no activation forward");
  }
  auto flag = [&](StringRef name, bool byDefault) {
    auto value = dict.getAs<BoolAttr>(name);
    return value ? value.getValue() : byDefault;
  };
  plan.backwardErrorFeedback = flag("backward_error_feedback", true);
  plan.forwardErrorFeedback = flag("forward_error_feedback", false);
  if (failed(readFlags(dict.getAs<ArrayAttr>("dp_all_reduce"), pp, plan.dpAllReduce)))
    return bad("`dp_all_reduce` needs one bool per stage (" + Twine(pp) + ")");
  if (auto rank = dict.getAs<IntegerAttr>("sc_rank"))
    plan.scRank = rank.getInt();
  if (plan.scRank < 1)
    return bad("`sc_rank` must be >= 1");
  plan.scErrorFeedback = flag("sc_error_feedback", true);
  if (auto codecs = dict.getAs<DictionaryAttr>("dp_codecs")) {
    for (NamedAttribute entry : codecs) {
      auto codec = dyn_cast<CodecAttrInterface>(entry.getValue());
      auto off = dyn_cast<BoolAttr>(entry.getValue());
      if (!codec && !(off && !off.getValue()))
        return bad("a `dp_codecs` entry must be a codec attribute or false");
      plan.dpCodecs[entry.getName().str()] = codec;
    }
  }
  plan.fusedEmbedding = flag("fused_embedding", false);
  if (auto skip = dict.getAs<IntegerAttr>("skip_stages"))
    plan.skipStages = skip.getInt();
  return std::optional<CompressionPlan>(std::move(plan));
}

std::string mlir::ptrain::linkStateKey(int64_t from, int64_t to, StringRef what,
                                       std::optional<std::pair<int64_t, int64_t>> chunks) {
  std::string boundary =
      chunks ? "c" + std::to_string(chunks->first) + "->" + std::to_string(chunks->second) + "/" : std::string();
  return "pp" + std::to_string(from) + "->" + std::to_string(to) + "/" + boundary + what.str();
}

std::pair<StringRef, StateKind> mlir::ptrain::codecStateNameAndKind(CodecAttrInterface codec) {
  if (isa<RandKAttr>(codec))
    return {"counter", StateKind::CodecSeed};
  return {"warm_start_q", StateKind::CodecWarmStart};
}

std::string mlir::ptrain::uniqueSymbolName(ModuleOp module, StringRef base) {
  std::string name = base.str();
  for (int64_t k = 1; module.lookupSymbol(name); ++k)
    name = base.str() + "_" + std::to_string(k);
  return name;
}

FailureOr<StateOp> mlir::ptrain::getOrAddCodecState(ModuleOp module, Operation *anchor, StringRef name, StringRef key,
                                                    StateKind kind, RankedTensorType type) {
  for (auto state : module.getOps<StateOp>()) {
    if (state.getKey() != key)
      continue;
    if (state.getTensorType() != type)
      return anchor->emitError("--ptrain-lower-to-runtime: the codec state \"")
             << key << "\" is needed as " << type << " but exists as " << state.getTensorType()
             << " (two codecs with different states on one link or parameter)";
    return state;
  }
  OpBuilder b(anchor);
  return StateOp::create(b, anchor->getLoc(), uniqueSymbolName(module, name), key, kind, type);
}
