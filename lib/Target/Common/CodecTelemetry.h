//===- CodecTelemetry.h - Codec telemetry in the generated step -*- C++ -*-===//
//
// Per codec site, what training does to it, measured by the generated step
// with the runtime's ptrain_codec_metrics_f32 (docs/CodegenCpu.md, "Codec
// telemetry"): the codec error, the residual norm after the update and the
// lazy error propagation cosine of Optimus-CC (section 4.2). A site is one
// error-feedback residual: every ptrain.compress that updates it (the
// compressed sends of one pipeline link) feeds the same site. Off unless a
// driver turns it on (ptrain_step_set_telemetry). Both targets write it: the
// CPU target on host buffers, the CUDA target on device buffers.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_CODECTELEMETRY_H
#define PTRAIN_TARGET_COMMON_CODECTELEMETRY_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::ptrain::target {

/// One codec site: the key of its residual state without "/residual" (`cb/pp1->0`) and the residual's elements.
struct CodecSite {
  std::string name;
  int64_t numel = 0;
};

/// The codec sites of a module: every ptrain.compress with error feedback whose residual is a state read.
class CodecSites {
public:
  /// Registers the module's sites in walk order.
  void collect(ModuleOp module);
  /// The site of a ptrain.compress, or -1 (no error feedback, or its residual is not a state).
  int64_t lookup(Operation *op) const { return siteOf.lookup(op) - 1; }

  std::vector<CodecSite> sites;

private:
  llvm::DenseMap<Operation *, int64_t> siteOf; ///< site + 1
};

/// After a ptrain.compress's encode: when telemetry is on, the site's record call on the op's input, old residual
/// and new residual (`ptr`: the pointer variable of a value; `line`: one line of the op's block). Nothing for an
/// op without a site. Both targets: the pointers are host or device buffers, as the record helper expects.
void emitCompressTelemetry(CompressOp op, const CodecSites &sites, llvm::function_ref<std::string(Value)> ptr,
                           llvm::function_ref<void(const std::string &)> line);

/// Where the record helper keeps each site's previous input and which runtime call measures.
struct TelemetryTarget {
  /// ptrain_codec_metrics_f32 (host buffers) or ptrain_cuda_codec_metrics_f32 (device buffers, host metrics).
  const char *metricsCall;
  /// Null: the previous inputs are static host arrays (--emit-cpp). Else this call, `(int64_t bytes, void **out)`,
  /// allocates a site's buffer at its first compression with telemetry on (--emit-cuda: device memory only for
  /// a run that measures).
  const char *allocCall = nullptr;
};

/// The site table, the telemetry mode, the per-site buffers and the record helper (before the functions, inside
/// the generated unit's anonymous namespace). Nothing for a module without sites.
void emitTelemetryState(const CodecSites &sites, const TelemetryTarget &target, llvm::raw_ostream &s);

/// ptrain_step_num_codec_sites, ptrain_step_codec_site_name, ptrain_step_set_telemetry and
/// ptrain_step_codec_telemetry (an all-gather over ptrain_world when `hasWorld`, this process's sites otherwise;
/// with `rendezvousGather`, ptrain_rendezvous_all_gather over ptrain_bootstrap when the step was launched
/// torchrun-style, --emit-cuda). Nothing for a module without sites.
void emitTelemetryEntryPoints(const CodecSites &sites, bool hasWorld, llvm::raw_ostream &s,
                              const char *rendezvousGather = nullptr);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_CODECTELEMETRY_H
