//===- CompressAuto.h - policy=auto: greedy search by re-simulation -*- C++ -*-===//
//
// --ptrain-compress="policy=auto" (docs/Compression.md, "policy=auto"): starting from the uncompressed
// plan, repeatedly applies the single (edge, codec) change that lowers the modelled iteration time most,
// re-simulating the whole plan for every candidate (1F1B has many tied critical paths, so slack alone
// misleads). Candidates are the edges the timing model prices: each backward send (stage, micro-batch) and
// each stage's dp gradient all-reduce, with PowerSGD at the ranks of `auto-ranks` (clamped to min(n, m)).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_COMPRESSAUTO_H
#define PTRAIN_TRANSFORMS_COMPRESSAUTO_H

#include "ptrain/Transforms/CompressionConfig.h"

#include <string>
#include <vector>

namespace mlir::ptrain {

struct AutoSearchOptions {
  /// PowerSGD ranks to try (each clamped to min(n, m) of the edge, duplicates dropped).
  std::vector<int64_t> ranks;
  /// Stop when the best change saves at most this fraction of the uncompressed iteration time.
  double minGain = 0.001;
  /// Skip a codec whose estimated relative error on the edge exceeds this (see estimatePowerSGDError).
  double errorBudget = 1.0;
  /// At most this many changes.
  int64_t maxPicks = 256;
};

/// One change the search applied, in order.
struct AutoDecision {
  /// "backward send stage 2 B15" or "dp all-reduce stage 0".
  std::string edge;
  std::string codec;
  /// Modelled seconds the change saved and the iteration time after it.
  double savedSeconds = 0, iterationSeconds = 0;
};

/// The error proxy of PowerSGD rank r on an n x m matrix: sqrt(1 - r / min(n, m)), the relative Frobenius
/// error of the best rank-r approximation when all min(n, m) singular values are equal (the worst case for
/// a given rank; real gradients, with decaying spectra, do better, and error feedback re-sends the rest).
/// 0 when r >= min(n, m) (exact).
double estimatePowerSGDError(int64_t n, int64_t m, int64_t r);

/// Fills `plan` (backwardSends, dpAllReduce, scRank; the caller set the shapes) by the greedy search on the
/// module's `ptrain.cluster`; `decisions` explains each pick. Errors (through `emitError`) say what is
/// missing: no cluster, or a timing model that cannot be built.
LogicalResult searchAutoCompression(ModuleOp module, const CompressionEdges &edges, const AutoSearchOptions &options,
                                    CompressionPlan &plan, std::vector<AutoDecision> &decisions,
                                    double &uncompressedSeconds, llvm::function_ref<InFlightDiagnostic()> emitError);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_COMPRESSAUTO_H
