//===- CodecErrorProbe.h - candidate codecs measured on a plan's sends -*- C++ -*-===//
//
// The measurement behind `ptrain-interpret --multi-rank --codec-errors` (docs/Compression.md, "Measured codec
// errors"; issue 25): while the multi-rank executor runs an uncompressed plan, every tensor a rank sends to
// the next or previous pipeline stage is encoded and decoded with every candidate codec through the runtime's
// own kernels (ptrain_codec_encode / ptrain_codec_decode, as the compiled step runs them), once without and
// once with error feedback. Per (rank, site, codec, error feedback) the probe keeps the codec's state across
// the messages it sees (the residual, PowerSGD's warm-start Q, rand-k's counter; the encoder's and the
// decoder's copies), so error feedback's effect over the run's steps and micro-batches is in the figure.
//
// The figure of a message is the relative error of what the receiver decodes against the tensor the sender
// meant to send, ||decode(encode(g [+ residual])) - g||_2 / ||g||_2 (with error feedback the residual re-sends
// the previous messages' error, so this is the error the receiving stage sees, not the codec's error on
// g + residual); a site's figure is the root mean square over its messages (the quality model uses e^2,
// QualityModel.h). Messages with ||g|| = 0 are counted but add no error. Error feedback raises this figure
// (each message also carries earlier messages' error) and lowers the error of the sum over the messages,
// ||sum_t (decode_t - g_t)|| / ||sum_t g_t|| (= ||r_0 - r_T|| / ||sum g|| with it), which the probe reports
// beside it as `cumulativeError` (per rank, root mean square over the ranks): what error feedback is for where
// the messages add up (a gradient accumulated over steps), not what a pipeline stage's next op sees.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_CODECERRORPROBE_H
#define PTRAIN_INTERPRETER_CODECERRORPROBE_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/Tensor.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace mlir::ptrain::interp {

/// A pipeline boundary and direction: the sends between (virtual) stages `boundary` and `boundary + 1`,
/// forward (activations, boundary -> boundary + 1) or backward (gradients, boundary + 1 -> boundary).
struct CodecErrorSite {
  bool forward = false;
  int64_t boundary = 0;
  bool operator<(const CodecErrorSite &o) const {
    return std::make_pair(forward, boundary) < std::make_pair(o.forward, o.boundary);
  }
};

/// One codec's measured figure at a site.
struct CodecErrorFigure {
  CodecAttrInterface codec;
  bool errorFeedback = false;
  /// Root mean square over the messages of the per-message relative error (dimensionless).
  double error = 0;
  /// The relative error of the sum of the rank's messages, root mean square over the ranks (dimensionless).
  double cumulativeError = 0;
};

/// One site's figures, in the probe's codec order (each codec without, then with error feedback).
struct CodecErrorSiteResult {
  CodecErrorSite site;
  /// The sent tensor's type (the first message's; every message of a site must have it).
  RankedTensorType type;
  /// Messages measured (over every rank that sends at this site, every step and micro-batch).
  int64_t messages = 0;
  std::vector<CodecErrorFigure> figures;
};

class CodecErrorProbe {
public:
  /// `codecs`: the candidates (a codec that does not verify for a site's type, or has no runtime kernel, is
  /// skipped there); `powerSGDRanks`: PowerSGD at each rank, clamped to min(n, m) of the site's matrix view
  /// like policy=auto's candidates (a clamp that repeats a smaller rank is dropped).
  CodecErrorProbe(std::vector<CodecAttrInterface> codecs, std::vector<int64_t> powerSGDRanks);
  ~CodecErrorProbe();

  /// Measures one message `value` of `type` (f32) that `rank` sends at `site`. Errors: a non-f32 or
  /// non-static type, a type that differs from the site's earlier messages, a failing kernel (the runtime's
  /// message).
  llvm::Error observe(int64_t rank, CodecErrorSite site, RankedTensorType type, const Tensor &value);

  /// The figures of every site seen, ordered by (direction, boundary).
  std::vector<CodecErrorSiteResult> results() const;

  struct SiteState;

private:
  std::vector<CodecAttrInterface> codecs;
  std::vector<int64_t> powerSGDRanks;
  std::map<CodecErrorSite, std::unique_ptr<SiteState>> sites;
};

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_CODECERRORPROBE_H
