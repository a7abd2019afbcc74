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

CompressionAttr CompressionPlan::toAttr(MLIRContext *context) const {
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
  DictionaryAttr codecs;
  if (!dpCodecs.empty()) {
    NamedAttrList entries;
    for (const auto &[key, codec] : dpCodecs)
      entries.set(key, codec ? Attribute(codec) : Attribute(b.getBoolAttr(false)));
    codecs = entries.getDictionary(context);
  }
  return CompressionAttr::get(context, policy, rows(backwardSends, backwardCodec), backwardCodec, backwardErrorFeedback,
                              rows(forwardSends, forwardCodec), forwardCodec, forwardErrorFeedback, bools(dpAllReduce),
                              scRank, scErrorFeedback, codecs, fusedEmbedding, skipStages, /*tpAllReduces=*/ArrayAttr(),
                              /*tpSkipLayers=*/0);
}

FailureOr<std::optional<CompressionPlan>> mlir::ptrain::readCompressionPlan(ModuleOp module, int64_t pp, int64_t m,
                                                                            StringRef pass) {
  CompressionAttr record = getCompression(module);
  if (!record)
    return std::optional<CompressionPlan>();
  CompressionPlan plan;
  plan.policy = record.getPolicy().str();
  // With virtual stages (the interleaved schedule) a row holds V M entries: chunk k's micro-batch i at k M + i.
  if (PipelineAttr pipeline = getPipeline(module))
    plan.virtualStages = pipeline.getVirtualStages(); // >= 1 (#ptrain.pipeline C2)
  const int64_t v = plan.virtualStages, entries = v * m;
  // The rows are rectangular, of true, false or codecs, a `true` with the direction's codec (C2, C3).
  auto readSends = [&](ArrayAttr sends, CodecAttrInterface codec, std::vector<std::vector<CodecAttrInterface>> &out) {
    if (!sends) { // no forward compression
      out.assign(pp, std::vector<CodecAttrInterface>(entries));
      return;
    }
    for (Attribute row : sends) {
      out.emplace_back();
      for (Attribute entry : cast<ArrayAttr>(row)) {
        auto flag = dyn_cast<BoolAttr>(entry);
        out.back().push_back(flag ? (flag.getValue() ? codec : CodecAttrInterface()) : cast<CodecAttrInterface>(entry));
      }
    }
  };
  plan.backwardCodec = record.getBackwardCodec();
  plan.forwardCodec = record.getForwardCodec();
  readSends(record.getBackwardSends(), plan.backwardCodec, plan.backwardSends);
  readSends(record.getForwardSends(), plan.forwardCodec, plan.forwardSends);
  // Checked where the record sits (C10); a pass that changed the pipeline since would read past the rows.
  if (static_cast<int64_t>(plan.backwardSends.size()) != pp || plan.backwardSends[0].size() != size_t(entries)) {
    emitError(module.getLoc()) << pass << ": ptrain.compression: its rows of sends do not fit " << pp << " stages of "
                               << entries << " sends";
    return failure();
  }
  plan.backwardErrorFeedback = record.getBackwardErrorFeedback();
  plan.forwardErrorFeedback = record.getForwardErrorFeedback();
  for (Attribute flag : record.getDpAllReduce()) // one bool per stage (C4)
    plan.dpAllReduce.push_back(cast<BoolAttr>(flag).getValue());
  plan.scRank = record.getScRank();
  plan.scErrorFeedback = record.getScErrorFeedback();
  if (DictionaryAttr codecs = record.getDpCodecs())
    for (NamedAttribute entry : codecs) // a codec or false (C6)
      plan.dpCodecs[entry.getName().str()] = dyn_cast<CodecAttrInterface>(entry.getValue());
  plan.fusedEmbedding = record.getFusedEmbedding();
  plan.skipStages = record.getSkipStages();
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

void mlir::ptrain::markGradientResidual(ModuleOp module, StateOp residual) {
  if (getPrecision(module) == Precision::F16)
    residual->setAttr(kLossScaledResidualAttr, UnitAttr::get(module.getContext()));
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
