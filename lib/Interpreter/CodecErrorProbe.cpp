//===- CodecErrorProbe.cpp - candidate codecs measured on a plan's sends ---===//
//
// See include/ptrain/Interpreter/CodecErrorProbe.h and docs/Compression.md, "Measured codec errors".
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/CodecErrorProbe.h"

#include "ptrain/Interpreter/Kernels.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {
/// The state one rank keeps for one codec instance at a site: what the sender's encoder and the receiver's
/// decoder hold between messages.
struct RankState {
  std::vector<float> residual;
  std::vector<float> encoderQ, decoderQ;
  int64_t encoderCounter = 0, decoderCounter = 0;
  /// Sums over the messages of g and of decode - g (for the cumulative error).
  std::vector<double> sumSent, sumError;
};

/// One candidate at a site (a codec, with or without error feedback).
struct Instance {
  CodecAttrInterface codec;
  bool errorFeedback = false;
  ptrain_codec_t descriptor;
  std::vector<unsigned char> code;
  std::map<int64_t, RankState> ranks;
  double sumSquares = 0;
};
} // namespace

struct CodecErrorProbe::SiteState {
  RankedTensorType type;
  int64_t messages = 0;
  std::vector<Instance> instances;
};

CodecErrorProbe::CodecErrorProbe(std::vector<CodecAttrInterface> codecs, std::vector<int64_t> powerSGDRanks)
    : codecs(std::move(codecs)), powerSGDRanks(std::move(powerSGDRanks)) {
  llvm::sort(this->powerSGDRanks);
}

CodecErrorProbe::~CodecErrorProbe() = default;

static llvm::Error probeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string siteName(CodecErrorSite site) {
  return llvm::formatv("{0} sends of boundary {1}", site.forward ? "forward" : "backward", site.boundary).str();
}

llvm::Error CodecErrorProbe::observe(int64_t rank, CodecErrorSite site, RankedTensorType type, const Tensor &value) {
  if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
    return probeError("codec errors: the " + siteName(site) + " must be static f32 tensors");
  std::unique_ptr<SiteState> &state = sites[site];
  if (!state) {
    state = std::make_unique<SiteState>();
    state->type = type;
    std::vector<CodecAttrInterface> here = codecs;
    MLIRContext *context = type.getContext();
    if (auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), type, nullptr); succeeded(nm)) {
      int64_t last = 0;
      for (int64_t r : powerSGDRanks) {
        int64_t rc = std::min({r, nm->first, nm->second});
        if (rc != last)
          here.push_back(PowerSGDAttr::get(context, rc, BoolAttr(), MatrixViewAttr()));
        last = rc;
      }
    }
    for (CodecAttrInterface codec : here) {
      if (failed(codec.verifyForType([] { return InFlightDiagnostic(); }, type)))
        continue;
      llvm::Expected<ptrain_codec_t> descriptor = getCodecDescriptor(codec, type);
      if (!descriptor) {
        llvm::consumeError(descriptor.takeError()); // No runtime kernel (the linear autoencoder): not measured.
        continue;
      }
      int64_t bytes = 0;
      if (ptrain_codec_code_bytes(&*descriptor, &bytes) != PTRAIN_OK)
        return probeError(llvm::Twine("codec errors: ptrain_codec_code_bytes: ") + ptrain_last_error());
      for (bool ef : {false, true}) {
        Instance instance;
        instance.codec = codec;
        instance.errorFeedback = ef;
        instance.descriptor = *descriptor;
        instance.code.resize(bytes);
        state->instances.push_back(std::move(instance));
      }
    }
  } else if (state->type != type) {
    std::string was, now;
    llvm::raw_string_ostream(was) << state->type;
    llvm::raw_string_ostream(now) << type;
    return probeError("codec errors: the " + siteName(site) + " send " + now + " and " + was);
  }
  ++state->messages;
  const int64_t numel = type.getNumElements();
  std::vector<float> g(numel), decoded(numel);
  double norm = 0;
  for (int64_t i = 0; i < numel; ++i) {
    g[i] = static_cast<float>(value.floats()[i]);
    norm += static_cast<double>(g[i]) * g[i];
  }
  norm = std::sqrt(norm);
  for (Instance &instance : state->instances) {
    const ptrain_codec_t &d = instance.descriptor;
    RankState &rs = instance.ranks[rank];
    if (rs.residual.empty()) {
      rs.residual.assign(numel, 0.0f);
      rs.sumSent.assign(numel, 0.0);
      rs.sumError.assign(numel, 0.0);
      if (d.kind == PTRAIN_CODEC_POWERSGD && d.warm_start) {
        rs.encoderQ.assign(d.batch * d.cols * d.rank, 0.0f);
        rs.decoderQ = rs.encoderQ;
      }
    }
    auto stateOf = [&](std::vector<float> &q, int64_t &counter) -> void * {
      if (d.kind == PTRAIN_CODEC_POWERSGD && d.warm_start)
        return q.data();
      return d.kind == PTRAIN_CODEC_RANDK ? static_cast<void *>(&counter) : nullptr;
    };
    if (ptrain_codec_encode(&d, g.data(), instance.errorFeedback ? rs.residual.data() : nullptr,
                            stateOf(rs.encoderQ, rs.encoderCounter), instance.code.data()) != PTRAIN_OK)
      return probeError(llvm::Twine("codec errors: ptrain_codec_encode: ") + ptrain_last_error());
    if (ptrain_codec_decode(&d, instance.code.data(), stateOf(rs.decoderQ, rs.decoderCounter), decoded.data()) !=
        PTRAIN_OK)
      return probeError(llvm::Twine("codec errors: ptrain_codec_decode: ") + ptrain_last_error());
    double diff = 0;
    for (int64_t i = 0; i < numel; ++i) {
      double e = static_cast<double>(decoded[i]) - g[i];
      diff += e * e;
      rs.sumSent[i] += g[i];
      rs.sumError[i] += e;
    }
    if (norm == 0)
      continue;
    instance.sumSquares += diff / (norm * norm);
  }
  return llvm::Error::success();
}

std::vector<CodecErrorSiteResult> CodecErrorProbe::results() const {
  std::vector<CodecErrorSiteResult> out;
  for (const auto &[site, state] : sites) {
    CodecErrorSiteResult result;
    result.site = site;
    result.type = state->type;
    result.messages = state->messages;
    for (const Instance &instance : state->instances) {
      double cumulative = 0;
      for (const auto &[rank, rs] : instance.ranks) {
        double sent = 0, error = 0;
        for (size_t i = 0; i < rs.sumSent.size(); ++i) {
          sent += rs.sumSent[i] * rs.sumSent[i];
          error += rs.sumError[i] * rs.sumError[i];
        }
        cumulative += sent > 0 ? error / sent : 0;
      }
      result.figures.push_back(
          {instance.codec, instance.errorFeedback,
           std::sqrt(instance.sumSquares / static_cast<double>(std::max<int64_t>(1, state->messages))),
           std::sqrt(cumulative / static_cast<double>(std::max<size_t>(1, instance.ranks.size())))});
    }
    out.push_back(std::move(result));
  }
  return out;
}
