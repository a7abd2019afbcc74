//===- Compress.cpp - compression decisions (Optimus-CC) ------------*- C++ -*-===//
//
// --ptrain-compress: see the pass description in Passes.td and docs/Compression.md. Decides, from the
// schedule and the critical-path flags, which backward sends and which stages' data-parallel all-reduces
// are compressed, and records it as `ptrain.compression`; --ptrain-lower-to-runtime materializes it.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Transforms/CompressionPlan.h"
#include "ptrain/Transforms/ScheduleTable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "ptrain-compress"

namespace mlir::ptrain {
#define GEN_PASS_DEF_COMPRESSPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {
struct CompressPass : public ptrain::impl::CompressPassBase<CompressPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  InFlightDiagnostic error(const Twine &message) {
    return emitError(getOperation().getLoc()) << "--ptrain-compress: " << message;
  }
};
} // namespace

void CompressPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (policy != "optimus-cc") {
    error("unknown policy '") << policy.getValue() << "' (known: optimus-cc)";
    return signalPassFailure();
  }
  if (module->hasAttr("ptrain.compression")) {
    error("the module already has ptrain.compression (compressed twice?)");
    return signalPassFailure();
  }
  auto pipeline = module->getAttrOfType<DictionaryAttr>("ptrain.pipeline");
  auto schedule = module->getAttrOfType<DictionaryAttr>("ptrain.schedule");
  if (!pipeline || !schedule) {
    error("no ptrain.pipeline or ptrain.schedule attribute; run --ptrain-split-stages, "
          "--ptrain-build-training-step and --ptrain-schedule first");
    return signalPassFailure();
  }
  auto ppAttr = pipeline.getAs<IntegerAttr>("pp");
  auto mbAttr = pipeline.getAs<IntegerAttr>("micro_batches");
  if (!ppAttr || !mbAttr || ppAttr.getInt() < 1 || mbAttr.getInt() < 1) {
    error("ptrain.pipeline needs integer pp >= 1 and micro_batches >= 1");
    return signalPassFailure();
  }
  if (auto v = pipeline.getAs<IntegerAttr>("virtual_stages"); v && v.getInt() != 1) {
    error("virtual stages (the interleaved schedule) are not supported");
    return signalPassFailure();
  }
  const int64_t pp = ppAttr.getInt(), m = mbAttr.getInt();
  auto table = schedule.getAs<ArrayAttr>("table");
  auto sendCritical = schedule.getAs<ArrayAttr>("send_critical");
  if (!sendCritical) {
    error("ptrain.schedule has no critical-path information; run --ptrain-critical-path first");
    return signalPassFailure();
  }
  if (!table || static_cast<int64_t>(table.size()) != pp || sendCritical.size() != table.size()) {
    error("ptrain.schedule's table and send_critical need one row per stage (") << pp << ")";
    return signalPassFailure();
  }
  if (cbRank < 1 || scRank < 1) {
    error("cb-rank and sc-rank must be >= 1, got cb-rank = ")
        << cbRank.getValue() << ", sc-rank = " << scRank.getValue();
    return signalPassFailure();
  }
  if (cbSends != "cooldown" && cbSends != "critical" && cbSends != "all") {
    error("unknown cb-sends '") << cbSends.getValue() << "' (known: cooldown, critical, all)";
    return signalPassFailure();
  }

  CompressionPlan plan;
  plan.policy = policy.getValue();
  plan.lep = lep;
  plan.scRank = scRank.getValue();
  plan.scErrorFeedback = scErrorFeedback;
  plan.backwardSends.assign(pp, std::vector<bool>(m, false));
  plan.dpAllReduce.assign(pp, false);
  MLIRContext *context = module.getContext();
  if (cb && pp > 1) {
    plan.cbCodec = PowerSGDAttr::get(context, cbRank.getValue(), BoolAttr(), MatrixViewAttr());
    for (int64_t s = 1; s < pp; ++s) {
      // The gradient stage s sends: its input activation's type.
      auto forward = module.lookupSymbol<func::FuncOp>("forward_stage" + std::to_string(s));
      auto type = forward && forward.getNumArguments() == 1 ? dyn_cast<RankedTensorType>(forward.getArgumentTypes()[0])
                                                            : RankedTensorType();
      if (!type || !type.hasStaticShape()) {
        error("@forward_stage") << s << " must take one statically shaped activation";
        return signalPassFailure();
      }
      // Rank too large: an error, not a clamp, since the user asked for this rank on this link.
      if (failed(plan.cbCodec.verifyForType([&] { return error("cb-rank: "); }, type)))
        return signalPassFailure();
      auto row = dyn_cast<ArrayAttr>(table[s]);
      auto flags = dyn_cast<ArrayAttr>(sendCritical[s]);
      if (!row || !flags || flags.size() != row.size()) {
        error("ptrain.schedule: row ") << s << " of table and send_critical differ in length";
        return signalPassFailure();
      }
      for (auto [stepAttr, flagAttr] : llvm::zip(row, flags)) {
        auto text = dyn_cast<StringAttr>(stepAttr);
        std::optional<ScheduleStep> step = text ? ScheduleStep::parse(text.getValue()) : std::nullopt;
        if (!step) {
          error("ptrain.schedule: stage ") << s << ": malformed step " << stepAttr;
          return signalPassFailure();
        }
        if (step->kind != ScheduleStep::Backward && step->kind != ScheduleStep::ForwardBackward)
          continue;
        if (step->microBatch < 0 || step->microBatch >= m) {
          error("ptrain.schedule: stage ") << s << ": micro-batch of " << stepAttr << " out of range";
          return signalPassFailure();
        }
        bool critical = isa<BoolAttr>(flagAttr) && cast<BoolAttr>(flagAttr).getValue();
        bool pick = cbSends == "all" || (cbSends == "critical" && critical) ||
                    (cbSends == "cooldown" && step->microBatch >= m - std::min(pp - s, m));
        if (pick) {
          plan.backwardSends[s][step->microBatch] = true;
          ++numCompressedSends;
        }
      }
    }
  }
  if (sc) {
    auto dpCritical = schedule.getAs<ArrayAttr>("dp_all_reduce_critical");
    for (int64_t s = 0; s < pp && dpCritical; ++s) {
      auto flag = s < static_cast<int64_t>(dpCritical.size()) ? dyn_cast<BoolAttr>(dpCritical[s]) : BoolAttr();
      plan.dpAllReduce[s] = scAll || (flag && flag.getValue());
      numCompressedStages += plan.dpAllReduce[s];
    }
  }
  module->setAttr("ptrain.compression", plan.toAttr(context));
}
