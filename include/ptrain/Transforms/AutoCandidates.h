//===- AutoCandidates.h - the codecs policy=auto tries, in one table -*- C++ -*-===//
//
// The default candidates of --ptrain-compress="policy=auto" per kind of edge (docs/Compression.md,
// "policy=auto"), and what `ptrain-calibrate` measures at a plan's shapes: one table, so that a new codec
// kind joins both the search and the calibration by adding one row to kCodecCandidates
// (lib/Transforms/AutoCandidates.cpp). PowerSGD's ranks are not rows: they come from `auto-ranks` (backward
// sends and dp all-reduces). A dp row must be a codec with a compressed all-reduce in both runtimes (the CPU
// runtime's and NCCL's: summed casts and rand-k, gathered top-k and quantization; not TAH-Quant, whose
// codes the CUDA generator cannot all-reduce).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_AUTOCANDIDATES_H
#define PTRAIN_TRANSFORMS_AUTOCANDIDATES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::ptrain {

/// The kinds of edge a candidate can sit on.
enum class CandidateSite { BackwardSend, ForwardSend, TensorParallel, DataParallel };

/// One row of the table: a codec spec (CompressionConfig.h's parseCodecSpec) and the sites it is a default
/// candidate on, with the source that makes it one.
struct CodecCandidate {
  const char *spec;
  bool backwardSend, forwardSend, tensorParallel, dataParallel;
  const char *source;
};

/// The table (the order is the search's tie order: the first row wins a tie).
llvm::ArrayRef<CodecCandidate> getCodecCandidates();

/// The specs of the table's rows for `site`, joined with ';' (the syntax of auto-*-codecs).
std::string getDefaultCandidateSpecs(CandidateSite site);

/// The default PowerSGD ranks of `auto-ranks` (backward sends and dp all-reduces).
llvm::ArrayRef<int64_t> getDefaultPowerSGDRanks();

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_AUTOCANDIDATES_H
