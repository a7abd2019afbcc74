//===- AutoCandidates.cpp - the codecs policy=auto tries ------------*- C++ -*-===//
//
// See include/ptrain/Transforms/AutoCandidates.h. A new codec kind joins auto's candidates (and what
// ptrain-calibrate measures) with one row here.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/AutoCandidates.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir::ptrain;

namespace {
// spec, backward send, forward send, tp site, dp all-reduce, source. The dp column: gradient compression of
// data parallelism with error feedback (the dp all-reduces' residuals, CompressDataParallel.h).
constexpr CodecCandidate kCodecCandidates[] = {
    {"quant:bits=8", true, true, true, true,
     "MCBench (Bian et al., MLSys 2024): 8-bit quantization of activations and their gradients; dp: QSGD "
     "(Alistarh et al., NeurIPS 2017), 8-bit gradients"},
    {"quant:bits=4", true, true, true, true,
     "MCBench: 4-bit quantization; TAH-Quant (arXiv 2506.01352): 3-4 bits; dp: QSGD's 4-bit gradients"},
    {"quant:bits=2", true, true, false, false, "MCBench: 2-bit quantization (its quality cost is the quality model's)"},
    {"topk:ratio=0.3", true, true, false, true,
     "MCBench: top-k sparsification of activations and gradients; dp: sparsified SGD with memory (Stich et al., "
     "NeurIPS 2018)"},
    {"topk:ratio=0.1", true, true, false, true,
     "MCBench's top-k; Rudakov et al. 2024 (arXiv 2401.07788): 10% is the smallest that converges"},
    {"fp16", true, true, true, true, "casts: half the bytes at a unit roundoff of 2^-11"},
    {"bf16", true, true, true, true, "casts: half the bytes at a unit roundoff of 2^-8"},
};
constexpr int64_t kRanks[] = {4, 8, 16, 32, 64, 128};
} // namespace

llvm::ArrayRef<CodecCandidate> mlir::ptrain::getCodecCandidates() { return kCodecCandidates; }

std::string mlir::ptrain::getDefaultCandidateSpecs(CandidateSite site) {
  std::string out;
  for (const CodecCandidate &c : kCodecCandidates) {
    bool on = site == CandidateSite::BackwardSend      ? c.backwardSend
              : site == CandidateSite::ForwardSend    ? c.forwardSend
              : site == CandidateSite::TensorParallel ? c.tensorParallel
                                                      : c.dataParallel;
    if (on)
      out += (out.empty() ? "" : ";") + std::string(c.spec);
  }
  return out;
}

llvm::ArrayRef<int64_t> mlir::ptrain::getDefaultPowerSGDRanks() { return kRanks; }
