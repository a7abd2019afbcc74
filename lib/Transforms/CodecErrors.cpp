//===- CodecErrors.cpp - measured codec errors, policy=auto's input --------===//
//
// See include/ptrain/Transforms/CodecErrors.h (the schema) and docs/Compression.md, "Measured codec errors".
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/CodecErrors.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <set>

using namespace mlir;
using namespace mlir::ptrain;
namespace json = llvm::json;

std::optional<double> MeasuredCodecErrors::lookup(bool forward, int64_t boundary, CodecAttrInterface codec,
                                                  bool errorFeedback) const {
  for (const Site &site : sites)
    if (site.forward == forward && site.boundary == boundary)
      for (const Figure &figure : site.figures)
        if (figure.codec == codec && figure.errorFeedback == errorFeedback)
          return figure.error;
  return std::nullopt;
}

json::Value mlir::ptrain::codecErrorsToJSON(llvm::ArrayRef<interp::CodecErrorSiteResult> results,
                                           json::Object provenance) {
  json::Array sites;
  for (const interp::CodecErrorSiteResult &result : results) {
    json::Array figures;
    for (const interp::CodecErrorFigure &figure : result.figures) {
      std::string text;
      llvm::raw_string_ostream(text) << Attribute(figure.codec);
      figures.push_back(json::Object{{"codec", text},
                                     {"error_feedback", figure.errorFeedback},
                                     {"error", figure.error},
                                     {"cumulative_error", figure.cumulativeError}});
    }
    sites.push_back(json::Object{{"direction", result.site.forward ? "forward" : "backward"},
                                 {"boundary", result.site.boundary},
                                 {"shape", json::Array(result.type.getShape())},
                                 {"messages", result.messages},
                                 {"errors", std::move(figures)}});
  }
  return json::Object{
      {"schema", kCodecErrorsSchema},
      {"version", kCodecErrorsVersion},
      {"provenance", std::move(provenance)},
      {"definition", "error: root mean square over the site's messages of ||decode(encode(g)) - g||_2 / ||g||_2, g "
                     "the tensor sent in the uncompressed plan, the codec's state (error-feedback residual, "
                     "PowerSGD warm start, rand-k counter) kept per rank across the messages; cumulative_error "
                     "(not read by auto): ||sum_t (decode_t - g_t)|| / ||sum_t g_t|| per rank, root mean square "
                     "over the ranks (include/ptrain/Interpreter/CodecErrorProbe.h)"},
      {"sites", std::move(sites)}};
}

namespace {
/// Errors naming the file and the field.
struct FieldError {
  llvm::StringRef path;
  llvm::Error operator()(const llvm::Twine &field, const llvm::Twine &message) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'" + path + "': " + (field.isTriviallyEmpty() ? "" : field + ": ") + message);
  }
};
} // namespace

llvm::Expected<MeasuredCodecErrors> mlir::ptrain::readCodecErrors(MLIRContext *context, llvm::StringRef path) {
  FieldError fail{path};
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail("", "cannot read: " + buffer.getError().message());
  auto parsed = json::parse((*buffer)->getBuffer());
  if (!parsed)
    return fail("", "not JSON: " + llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fail("", "must be a JSON object");
  auto schema = root->getString("schema");
  if (!schema || *schema != kCodecErrorsSchema)
    return fail("schema", llvm::Twine("must be \"") + kCodecErrorsSchema +
                              "\" (a file of ptrain-interpret --codec-errors)");
  auto version = root->getInteger("version");
  if (!version || *version != kCodecErrorsVersion)
    return fail("version", "must be " + llvm::Twine(kCodecErrorsVersion) + " (this build's schema version)");
  MeasuredCodecErrors out;
  out.path = path.str();
  const json::Object *provenance = root->getObject("provenance");
  if (!provenance)
    return fail("provenance", "missing (an object with model and steps)");
  auto model = provenance->getString("model");
  if (!model || model->empty())
    return fail("provenance.model", "missing or not a non-empty string");
  out.model = model->str();
  auto steps = provenance->getInteger("steps");
  if (!steps || *steps < 1)
    return fail("provenance.steps", "missing or not an integer >= 1");
  out.steps = *steps;
  const json::Array *sites = root->getArray("sites");
  if (!sites)
    return fail("sites", "missing or not an array");
  std::set<std::pair<bool, int64_t>> seen;
  for (auto [i, value] : llvm::enumerate(*sites)) {
    std::string field = "sites[" + std::to_string(i) + "]";
    const json::Object *site = value.getAsObject();
    if (!site)
      return fail(field, "must be an object");
    MeasuredCodecErrors::Site parsedSite;
    auto direction = site->getString("direction");
    if (!direction || (*direction != "forward" && *direction != "backward"))
      return fail(field + ".direction", "must be \"forward\" or \"backward\"");
    parsedSite.forward = *direction == "forward";
    auto boundary = site->getInteger("boundary");
    if (!boundary || *boundary < 0)
      return fail(field + ".boundary", "missing or not an integer >= 0");
    parsedSite.boundary = *boundary;
    if (!seen.insert({parsedSite.forward, parsedSite.boundary}).second)
      return fail(field, "the " + direction->str() + " sends of boundary " + std::to_string(*boundary) +
                             " appear twice");
    const json::Array *shape = site->getArray("shape");
    if (!shape || shape->empty())
      return fail(field + ".shape", "missing or not a non-empty array of sizes");
    for (const json::Value &d : *shape) {
      auto size = d.getAsInteger();
      if (!size || *size < 1)
        return fail(field + ".shape", "sizes must be integers >= 1");
      parsedSite.shape.push_back(*size);
    }
    const json::Array *errors = site->getArray("errors");
    if (!errors)
      return fail(field + ".errors", "missing or not an array");
    for (auto [j, e] : llvm::enumerate(*errors)) {
      std::string efield = field + ".errors[" + std::to_string(j) + "]";
      const json::Object *figure = e.getAsObject();
      if (!figure)
        return fail(efield, "must be an object");
      auto text = figure->getString("codec");
      if (!text)
        return fail(efield + ".codec", "missing or not a string");
      // The codec: an attribute, parsed with its diagnostics captured into the error.
      std::string diagnostic;
      Attribute attr;
      {
        ScopedDiagnosticHandler handler(context, [&](Diagnostic &d) {
          diagnostic = d.str();
          return success();
        });
        size_t consumed = 0;
        attr = parseAttribute(*text, context, Type(), &consumed);
        if (attr && consumed != text->size())
          attr = nullptr;
      }
      auto codec = dyn_cast_or_null<CodecAttrInterface>(attr);
      if (!codec)
        return fail(efield + ".codec", "'" + *text + "' is not a codec attribute" +
                                           (diagnostic.empty() ? "" : " (" + diagnostic + ")"));
      auto ef = figure->getBoolean("error_feedback");
      if (!ef)
        return fail(efield + ".error_feedback", "missing or not true/false");
      auto error = figure->getNumber("error");
      if (!error || !std::isfinite(*error) || *error < 0)
        return fail(efield + ".error", "missing or not a finite number >= 0");
      for (const MeasuredCodecErrors::Figure &other : parsedSite.figures)
        if (other.codec == codec && other.errorFeedback == *ef)
          return fail(efield, "'" + *text + "' with error_feedback = " + (*ef ? "true" : "false") +
                                  " appears twice at this site");
      parsedSite.figures.push_back({codec, *ef, *error});
    }
    out.sites.push_back(std::move(parsedSite));
  }
  return out;
}

llvm::Error mlir::ptrain::checkCodecErrorsForPlan(const MeasuredCodecErrors &errors, ModuleOp module,
                                                  const CompressionEdges &edges) {
  FieldError fail{errors.path};
  auto onnx = module->getAttrOfType<StringAttr>("ptrain.onnx_file");
  if (!onnx)
    return fail("provenance.model", "the module has no ptrain.onnx_file to compare '" + errors.model + "' with");
  llvm::StringRef name = llvm::sys::path::filename(onnx.getValue());
  if (name != errors.model)
    return fail("provenance.model", "measured on '" + errors.model + "', but this module's model is '" + name + "'");
  const int64_t chunks = edges.pp * edges.v;
  for (auto [i, site] : llvm::enumerate(errors.sites)) {
    std::string field = "sites[" + std::to_string(i) + "]";
    std::string what = std::string(site.forward ? "forward" : "backward") + " sends of boundary " +
                       std::to_string(site.boundary);
    if (site.boundary + 1 >= chunks)
      return fail(field + ".boundary", "the plan has no " + what + " (" + std::to_string(chunks) + " stages)");
    RankedTensorType type = site.forward ? edges.forwardTypes[site.boundary] : edges.backwardTypes[site.boundary + 1];
    if (!type || type.getShape() != llvm::ArrayRef<int64_t>(site.shape)) {
      std::string shape;
      for (auto [k, d] : llvm::enumerate(site.shape))
        shape += (k ? "x" : "") + std::to_string(d);
      std::string plan;
      if (type)
        llvm::raw_string_ostream(plan) << type;
      return fail(field + ".shape", "the " + what + " were measured as " + shape + ", but the plan sends " +
                                        (type ? plan : std::string("nothing")) +
                                        " there (another model or micro-batch size?)");
    }
  }
  return llvm::Error::success();
}
