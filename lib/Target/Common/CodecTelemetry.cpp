//===- CodecTelemetry.cpp - Codec telemetry in the generated step ---------===//
//
// The generated code of docs/CodegenCpu.md's "Codec telemetry": per site a
// copy of the last input g (for the LEP cosine's x_k - x_{k+1}) and
// accumulators over the compressions of a measured step; a mode set by the
// driver (0 off: one branch per compress; 1 capture g only, the step before a
// measured one; 2 measure); the runtime's ptrain_codec_metrics_f32 does the
// one pass over memory.
//
//===----------------------------------------------------------------------===//

#include "Common/CodecTelemetry.h"

#include "Common/RuntimeCallTable.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#include <cstring>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

namespace {
const char *name(RuntimeCall call) { return getRuntimeCallInfo(call).name; }

/// The per-site values ptrain_step_codec_telemetry reports, in order.
constexpr const char *kFields[] = {"compressions",      "error (mean)", "residual norm (after the last)",
                                   "LEP cosine (mean)", "LEP cosines",  "input norm (mean)"};
constexpr int64_t kNumFields = sizeof(kFields) / sizeof(kFields[0]);
} // namespace

void CodecSites::collect(ModuleOp module) {
  llvm::StringMap<int64_t> byKey;
  module.walk([&](CompressOp op) {
    if (!op.getErrorFeedback() || op.getState().empty())
      return;
    auto read = op.getState()[0].getDefiningOp<StateReadOp>();
    auto state = read ? SymbolTable::lookupNearestSymbolFrom<StateOp>(op, read.getStateAttr()) : StateOp();
    if (!state)
      return;
    StringRef site = state.getKey();
    site.consume_back("/residual");
    // The residual has the input's type (the op's verifier), so every op of one residual codes as many elements.
    auto [it, inserted] = byKey.try_emplace(state.getKey(), static_cast<int64_t>(sites.size()));
    if (inserted)
      sites.push_back({site.str(), cast<RankedTensorType>(op.getInput().getType()).getNumElements()});
    siteOf[op] = it->second + 1;
  });
}

void mlir::ptrain::target::emitCompressTelemetry(CompressOp op, const CodecSites &sites,
                                                 llvm::function_ref<std::string(Value)> ptr,
                                                 llvm::function_ref<void(const std::string &)> line) {
  const int64_t site = sites.lookup(op);
  if (site < 0)
    return;
  // The old residual is still the state's value (its write follows the op); the new one is the kernel's.
  line("// Codec telemetry of site \"" + sites.sites[site].name + "\" (ptrain_step_set_telemetry).");
  line("if (ptrain_telemetry_mode != 0)");
  line("  PTRAIN_STEP_CALL(recordCodecSite(" + std::to_string(site) + ", " + ptr(op.getInput()) + ", " +
       ptr(op.getState()[0]) + ", " + ptr(op.getNewState()[0]) + "));");
}

void mlir::ptrain::target::emitTelemetryState(const CodecSites &sites, const TelemetryTarget &target,
                                              llvm::raw_ostream &s) {
  if (sites.sites.empty())
    return;
  const size_t n = sites.sites.size();
  s << "//===--- Codec telemetry: " << n << " site(s), docs/CodegenCpu.md ---===//\n\n";
  s << "constexpr int64_t kNumCodecSites = " << n << ";\n";
  s << "constexpr int64_t kNumCodecFields = " << kNumFields << "; ///< ";
  for (int64_t i = 0; i < kNumFields; ++i)
    s << (i ? ", " : "") << kFields[i];
  s << "\nconst char *const kCodecSiteNames[kNumCodecSites] = {";
  for (size_t i = 0; i < n; ++i)
    s << (i ? ", " : "") << '"' << sites.sites[i].name << '"';
  s << "};\n";
  s << "/// 0: off; 1: capture g only (the step before a measured one); 2: measure.\n"
       "int32_t ptrain_telemetry_mode = 0;\n";
  if (!target.allocCall)
    for (size_t i = 0; i < n; ++i)
      s << "alignas(64) float codec_site_" << i << "_previous_g[" << std::max<int64_t>(sites.sites[i].numel, 1)
        << "];\n";
  s << "struct CodecSiteTelemetry {\n"
       "  float *previousG; ///< g of the site's last compression with telemetry on\n"
       "  int64_t numel;\n"
       "  bool hasPrevious;\n"
       "  double compressions, errorSum, residualNorm, cosSum, cosCount, inputNormSum;\n"
       "};\n";
  s << "CodecSiteTelemetry codecSites[kNumCodecSites] = {";
  for (size_t i = 0; i < n; ++i)
    s << (i ? ", " : "") << "{"
      << (target.allocCall ? std::string("nullptr") : "codec_site_" + std::to_string(i) + "_previous_g") << ", "
      << sites.sites[i].numel << ", false, 0, 0, 0, 0, 0, 0}";
  s << "};\n\n";
  s << "/// One compression at `site`: g its input, residual the residual before and newResidual after the encode.\n"
       "ptrain_status_t recordCodecSite(int64_t site, const float *g, const float *residual, "
       "const float *newResidual) {\n"
       "  CodecSiteTelemetry &t = codecSites[site];\n";
  if (target.allocCall)
    s << "  if (!t.previousG) { // device memory for g, at the site's first compression with telemetry on\n"
         "    void *p = nullptr;\n"
         "    PTRAIN_STEP_CALL("
      << target.allocCall
      << "(4 * t.numel, &p));\n"
         "    t.previousG = static_cast<float *>(p);\n"
         "  }\n";
  s << "  ptrain_codec_metrics_t m;\n"
       "  PTRAIN_STEP_CALL("
    << target.metricsCall << "(g, residual, newResidual, nullptr, t.hasPrevious ? t.previousG : nullptr, t.numel,\n"
    << std::string(std::strlen(target.metricsCall) - std::strlen("ptrain_codec_metrics_f32"), ' ')
    << "                                            t.previousG, &m));\n"
       "  t.hasPrevious = true;\n"
       "  if (ptrain_telemetry_mode == 2) {\n"
       "    t.compressions += 1;\n"
       "    t.errorSum += m.error;\n"
       "    t.residualNorm = m.residual_norm;\n"
       "    t.inputNormSum += m.input_norm;\n"
       "    if (m.has_lep_cos) {\n"
       "      t.cosSum += m.lep_cos;\n"
       "      t.cosCount += 1;\n"
       "    }\n"
       "  }\n"
       "  return PTRAIN_OK;\n"
       "}\n\n";
}

void mlir::ptrain::target::emitTelemetryEntryPoints(const CodecSites &sites, bool hasWorld, llvm::raw_ostream &s,
                                                    const char *rendezvousGather) {
  if (sites.sites.empty())
    return;
  s << "//===--- Codec telemetry entry points ---===//\n\n";
  s << "/// The number of codec sites, and the name of site `site` (NULL when out of range).\n";
  s << "extern \"C\" PTRAIN_STEP_API int64_t ptrain_step_num_codec_sites(void) { return kNumCodecSites; }\n";
  s << "extern \"C\" PTRAIN_STEP_API const char *ptrain_step_codec_site_name(int64_t site) {\n"
       "  return site >= 0 && site < kNumCodecSites ? kCodecSiteNames[site] : nullptr;\n}\n\n";
  s << "/// 0 off (the default), 1 capture (keep each site's input g for the next compression's LEP cosine), 2\n"
       "/// measure (also accumulate the metrics that ptrain_step_codec_telemetry reports).\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_set_telemetry(int32_t mode) {\n"
       "  if (mode < 0 || mode > 2)\n"
       "    return stepError(\"ptrain_step_set_telemetry: mode %d is not 0 (off), 1 (capture) or 2 (measure)\", "
       "static_cast<int>(mode));\n"
       "  ptrain_telemetry_mode = mode;\n  return PTRAIN_OK;\n}\n\n";
  s << "/// out_metrics[(rank kNumCodecSites + site) kNumCodecFields + f]: per rank and site, since the last call:\n"
       "/// compressions measured, their mean codec error, the residual norm after the last, the mean LEP cosine, the\n"
       "/// number of cosines, the mean input norm (a site of another stage reports 0 compressions). Then zeroes the\n"
       "/// accumulators."
    << (hasWorld ? " Collective over every rank (kWorldSize entries)." : " One process (one entry).") << "\n";
  s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_codec_telemetry(double *out_metrics) {\n";
  if (hasWorld)
    s << "  if (!ptrain_world" << (rendezvousGather ? " && !ptrain_bootstrap" : "")
      << ")\n    return stepError(\"ptrain_step_codec_telemetry: call ptrain_step_init first\");\n";
  s << "  if (!out_metrics)\n    return stepError(\"ptrain_step_codec_telemetry: null out_metrics\");\n";
  s << "  double local[kNumCodecSites * kNumCodecFields];\n"
       "  for (int64_t i = 0; i < kNumCodecSites; ++i) {\n"
       "    CodecSiteTelemetry &t = codecSites[i];\n"
       "    double *f = &local[i * kNumCodecFields];\n"
       "    f[0] = t.compressions;\n"
       "    f[1] = t.compressions > 0 ? t.errorSum / t.compressions : 0.0;\n"
       "    f[2] = t.residualNorm;\n"
       "    f[3] = t.cosCount > 0 ? t.cosSum / t.cosCount : 0.0;\n"
       "    f[4] = t.cosCount;\n"
       "    f[5] = t.compressions > 0 ? t.inputNormSum / t.compressions : 0.0;\n"
       "    t.compressions = t.errorSum = t.residualNorm = t.cosSum = t.cosCount = t.inputNormSum = 0;\n"
       "  }\n";
  if (hasWorld && rendezvousGather)
    s << "  if (ptrain_bootstrap) { // a torchrun-style launch: the rendezvous' TCP all-gather, rank-major\n"
      << "    PTRAIN_STEP_CALL(" << rendezvousGather << "(ptrain_bootstrap, local, sizeof(local), out_metrics));\n"
      << "    return PTRAIN_OK;\n  }\n";
  if (hasWorld)
    s << "  ptrain_request_t request = nullptr;\n"
      << "  PTRAIN_STEP_CALL(" << name(RuntimeCall::ptrain_all_gather_start)
      << "(ptrain_world, local, out_metrics, kNumCodecSites * kNumCodecFields, PTRAIN_DTYPE_F64, &request));\n"
      << "  PTRAIN_STEP_CALL(" << name(RuntimeCall::ptrain_wait) << "(request));\n";
  else
    s << "  for (int64_t i = 0; i < kNumCodecSites * kNumCodecFields; ++i)\n    out_metrics[i] = local[i];\n";
  s << "  return PTRAIN_OK;\n}\n\n";
}
