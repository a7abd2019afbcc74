//===- CodecErrors.h - measured codec errors, policy=auto's input -*- C++ -*-===//
//
// The measured relative errors of candidate codecs at a plan's pipeline boundaries (docs/Compression.md,
// "Measured codec errors"; issue 25). `ptrain-interpret --multi-rank --codec-errors FILE` writes the file
// while it runs an uncompressed plan on real weights and data (CodecErrorProbe.h); `--ptrain-compress
// policy=auto auto-codec-errors=FILE` reads it and the quality model (QualityModel.h) takes each measured
// figure instead of the codec's error proxy. Schema, version 1:
//
//   {"schema": "ptrain-codec-errors", "version": 1,
//    "provenance": {"model": "gpt.onnx",            // the file name of the module's ptrain.onnx_file
//                   "model_path": "...", "plan": "...", "steps": 2, "data": "random-tokens 1",
//                   "date": "...", "command": "..."},
//    "definition": "...",                            // the figure's definition, for the reader
//    "sites": [{"direction": "backward",             // or "forward"
//               "boundary": 0,                       // between (virtual) stages 0 and 1
//               "shape": [2, 64, 128],               // the sent tensor (f32)
//               "messages": 8,                       // messages measured (ranks x steps x micro-batches)
//               "errors": [{"codec": "#ptrain.quant<bits = 4>",  // a codec attribute
//                           "error_feedback": true,
//                           "error": 0.0712,         // rms relative error, dimensionless, >= 0
//                           "cumulative_error": 0.01}]}]}  // of the sum over messages; for people
//
// Only `provenance.model`, `steps`, and the `sites` (but not `messages` and `cumulative_error`) are read; the
// other fields are for people.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_CODECERRORS_H
#define PTRAIN_TRANSFORMS_CODECERRORS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/CodecErrorProbe.h"
#include "ptrain/Transforms/CompressionConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::ptrain {

/// The schema name and version this build reads and writes.
constexpr const char *kCodecErrorsSchema = "ptrain-codec-errors";
constexpr int64_t kCodecErrorsVersion = 1;

/// A parsed codec errors file.
struct MeasuredCodecErrors {
  struct Figure {
    CodecAttrInterface codec;
    bool errorFeedback = false;
    double error = 0;
  };
  struct Site {
    bool forward = false;
    int64_t boundary = 0;
    std::vector<int64_t> shape;
    std::vector<Figure> figures;
  };
  /// The file it was read from, and its provenance.model and provenance.steps.
  std::string path, model;
  int64_t steps = 0;
  std::vector<Site> sites;

  /// The measured error of `codec` (with or without error feedback) on the sends at `boundary` in that
  /// direction; std::nullopt when the file has no such figure (the caller uses the proxy).
  std::optional<double> lookup(bool forward, int64_t boundary, CodecAttrInterface codec, bool errorFeedback) const;
};

/// The file for `results` (the probe's figures) with `provenance` (an object with at least "model", the ONNX
/// file's name, and "steps"), in the schema above.
llvm::json::Value codecErrorsToJSON(llvm::ArrayRef<interp::CodecErrorSiteResult> results,
                                    llvm::json::Object provenance);

/// Reads and checks the file at `path`. Errors name the file and the field (`'f.json': sites[1].errors[0].codec:
/// ...`): unreadable or not JSON, another schema or version, a missing or mistyped field, a direction other than
/// forward/backward, a negative boundary, a codec that is not a codec attribute, a negative or non-finite error, a
/// site or figure given twice.
llvm::Expected<MeasuredCodecErrors> readCodecErrors(MLIRContext *context, llvm::StringRef path);

/// Checks that `errors` were measured on `module`'s model and pipeline: provenance.model is the file name of
/// the module's ptrain.onnx_file, and every site is a boundary the plan has (below pp v - 1) whose sent tensor
/// has the file's shape (`edges`' forward / backward types). Errors name the file and the site.
llvm::Error checkCodecErrorsForPlan(const MeasuredCodecErrors &errors, ModuleOp module, const CompressionEdges &edges);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_CODECERRORS_H
