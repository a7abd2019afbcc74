//===- ptrain-interpret.cpp - run an L0 model graph on the CPU -----*- C++ -*-===//
//
// Evaluates a function of an L0 module with the reference interpreter, feeding its state symbols from an ONNX
// model's initializers (by key) and its arguments from TensorProto files, and compares the results with
// reference outputs:
//
//   ptrain-interpret model.mlir --weights models/gpt/gpt.onnx --input models/gpt/test_data_set_0/input_0.pb
//       --expect models/gpt/test_data_set_0/output_0.pb --atol 1e-5
//
// Exit code 0 on success, 1 on any error or when a result differs from its expectation by more than --atol.
// See docs/Interpreter.md.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Import/ONNX/Initializers.h"
#include "ptrain/Interpreter/Interpreter.h"
#include "ptrain/Tools/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional, llvm::cl::desc("<model.mlir>"), llvm::cl::Required);
static llvm::cl::opt<std::string>
    weightsFile("weights",
                llvm::cl::desc("ONNX model whose initializers give the state values by key (default: the "
                               "module attribute ptrain.onnx_file, relative to the current directory)"),
                llvm::cl::value_desc("model.onnx"));
static llvm::cl::list<std::string> argumentFiles("input", llvm::cl::desc("TensorProto file for the next argument"),
                                                 llvm::cl::value_desc("file.pb"));
static llvm::cl::list<std::string>
    expectFiles("expect", llvm::cl::desc("TensorProto file with the expected value of the next result"),
                llvm::cl::value_desc("file.pb"));
static llvm::cl::opt<double> absoluteTolerance("atol", llvm::cl::desc("largest accepted |result - expected|"),
                                               llvm::cl::init(1e-5));
static llvm::cl::opt<double> expectRelativeTolerance(
    "expect-rtol",
    llvm::cl::desc("for --expect: also accept |result - expected| up to this fraction of max|expected| (default "
                   "0: --atol alone)"),
    llvm::cl::init(0.0));
static llvm::cl::opt<std::string>
    expectGrads("expect-grads",
                llvm::cl::desc("ONNX file whose initializers are the expected gradients: each result with a "
                               "ptrain.grad_of attribute is compared with the initializer of that name"),
                llvm::cl::value_desc("reference_grads.onnx"));
static llvm::cl::opt<double>
    relativeTolerance("rtol",
                      llvm::cl::desc("largest accepted max|result - expected| / max|expected| for --expect-grads"),
                      llvm::cl::init(1e-4));
static llvm::cl::opt<bool>
    runPipeline("pipeline",
                llvm::cl::desc("run the stages named by the module's ptrain.pipeline attribute in order, each on the "
                               "previous stage's results (the inputs go to stage 0), instead of --entry"));
static llvm::cl::opt<std::string> entryName("entry", llvm::cl::desc("function to run"), llvm::cl::init("forward"));
static llvm::cl::opt<bool> printSummary("print-summary",
                                        llvm::cl::desc("print the ops evaluated and the states loaded"));

static int fail(const llvm::Twine &message) {
  llvm::outs().flush(); // Keep the error after what was printed before it.
  llvm::errs() << "ptrain-interpret: error: " << message << "\n";
  return 1;
}

/// Largest |a - b| over the elements; NaN where either side has a NaN the other does not.
static double maxAbsDiff(const interp::Tensor &a, const interp::Tensor &b) {
  double worst = 0.0;
  for (int64_t i = 0, e = a.getNumElements(); i < e; ++i) {
    double x = a.getAsDouble(i), y = b.getAsDouble(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y))
        return NAN;
      continue;
    }
    if (x == y) // Equal infinities.
      continue;
    worst = std::max(worst, std::fabs(x - y));
  }
  return worst;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "ptrain reference interpreter\n");

  DialectRegistry registry;
  registerPTrainDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string includeError;
  if (sourceMgr.AddIncludeFile(inputFile, llvm::SMLoc(), includeError) == 0)
    return fail("cannot read '" + inputFile + "'");
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("cannot parse '" + inputFile + "'");

  std::string weights = weightsFile;
  if (weights.empty()) {
    auto attr = (*module)->getAttrOfType<StringAttr>("ptrain.onnx_file");
    if (!attr)
      return fail("no --weights given and the module has no ptrain.onnx_file attribute");
    weights = attr.getValue().str();
  }
  llvm::Expected<onnx_data::ONNXInitializers> initializers = onnx_data::ONNXInitializers::open(weights);
  if (!initializers)
    return fail(llvm::toString(initializers.takeError()));

  std::vector<interp::Tensor> arguments;
  for (const std::string &path : argumentFiles) {
    llvm::Expected<interp::Tensor> tensor = onnx_data::readTensorProtoFile(path);
    if (!tensor)
      return fail(llvm::toString(tensor.takeError()));
    arguments.push_back(std::move(*tensor));
  }

  interp::Interpreter interpreter(*module,
                                  [&](llvm::StringRef key, RankedTensorType) { return initializers->read(key); });
  llvm::Expected<std::vector<interp::Tensor>> results = std::vector<interp::Tensor>();
  if (runPipeline) {
    auto pipeline = (*module)->getAttrOfType<DictionaryAttr>("ptrain.pipeline");
    auto stages = pipeline ? pipeline.getAs<ArrayAttr>("stages") : ArrayAttr();
    if (!stages)
      return fail("--pipeline: the module has no ptrain.pipeline attribute with stages (run "
                  "--ptrain-split-stages first)");
    std::vector<interp::Tensor> values = std::move(arguments);
    for (Attribute stage : stages) {
      std::string name = cast<FlatSymbolRefAttr>(stage).getValue().str();
      results = interpreter.run(name, values);
      if (!results)
        return fail(llvm::toString(results.takeError()));
      values = *results;
      llvm::outs() << "stage @" << name << ": " << values.size() << " result(s)\n";
    }
    entryName = cast<FlatSymbolRefAttr>(stages[stages.size() - 1]).getValue().str();
  } else {
    results = interpreter.run(entryName, arguments);
  }
  if (!results)
    return fail(llvm::toString(results.takeError()));

  if (!expectFiles.empty() && expectFiles.size() != results->size())
    return fail("@" + entryName + " has " + llvm::Twine(results->size()) + " results but " +
                llvm::Twine(expectFiles.size()) + " --expect files were given");

  std::optional<onnx_data::ONNXInitializers> referenceGrads;
  if (!expectGrads.empty()) {
    llvm::Expected<onnx_data::ONNXInitializers> opened = onnx_data::ONNXInitializers::open(expectGrads);
    if (!opened)
      return fail(llvm::toString(opened.takeError()));
    referenceGrads.emplace(std::move(*opened));
  }
  auto entry = module->lookupSymbol<func::FuncOp>(entryName);

  bool mismatch = false;
  llvm::outs() << "@" << entryName << ": " << results->size() << " result(s)\n";
  for (auto [i, result] : llvm::enumerate(*results)) {
    llvm::outs() << "result " << i << ": " << result.getTypeString() << llvm::format(" max|x| = %.6e", result.maxAbs());
    if (result.getNumElements() == 1)
      llvm::outs() << llvm::format(" value = %.9g", result.getAsDouble(0));
    llvm::outs() << "\n";
    auto gradOf = entry ? entry.getResultAttrOfType<StringAttr>(i, "ptrain.grad_of") : StringAttr();
    if (referenceGrads && gradOf) {
      llvm::Expected<interp::Tensor> expected = referenceGrads->read(gradOf.getValue());
      if (!expected)
        return fail(llvm::toString(expected.takeError()));
      if (expected->getShape() != result.getShape())
        return fail("gradient of '" + gradOf.getValue() + "' is " + result.getTypeString() + " but '" + expectGrads +
                    "' holds " + expected->getTypeString());
      double scale = expected->maxAbs();
      double rel = maxAbsDiff(result, *expected) / (scale > 0 ? scale : 1.0);
      bool ok = rel <= relativeTolerance; // False for NaN.
      mismatch |= !ok;
      llvm::outs() << "  grad of '" << gradOf.getValue()
                   << "': max|x - expected| / max|expected| = " << llvm::format("%.3e", rel)
                   << llvm::format(" (rtol %.1e): ", relativeTolerance.getValue()) << (ok ? "ok" : "MISMATCH") << "\n";
    }
    if (expectFiles.empty())
      continue;
    llvm::Expected<interp::Tensor> expected = onnx_data::readTensorProtoFile(expectFiles[i]);
    if (!expected)
      return fail(llvm::toString(expected.takeError()));
    if (expected->getShape() != result.getShape() || expected->isFloat() != result.isFloat())
      return fail("result " + llvm::Twine(i) + " is " + result.getTypeString() + " but '" + expectFiles[i] +
                  "' holds " + expected->getTypeString());
    double diff = maxAbsDiff(result, *expected);
    double scale = std::isfinite(expected->maxAbs()) ? expected->maxAbs() : 0.0;
    bool ok = diff <= absoluteTolerance + expectRelativeTolerance * scale; // False for NaN.
    mismatch |= !ok;
    llvm::outs() << "  max|x - expected| = " << llvm::format("%.6e", diff)
                 << llvm::format(" (atol %.1e): ", absoluteTolerance.getValue()) << (ok ? "ok" : "MISMATCH") << "\n";
  }

  if (printSummary) {
    const interp::RunStatistics &stats = interpreter.getStatistics();
    llvm::outs() << "summary: ops evaluated\n";
    for (const auto &[name, count] : stats.opCounts)
      llvm::outs() << "  " << name << " " << count << "\n";
    llvm::outs() << "summary: states loaded from " << initializers->getModelPath() << "\n";
    for (const auto &[key, type] : stats.statesRead)
      llvm::outs() << "  '" << key << "' " << type << "\n";
  }
  if (mismatch) {
    std::string tolerance;
    llvm::raw_string_ostream(tolerance) << llvm::format("%g", absoluteTolerance.getValue());
    return fail(expectGrads.empty() ? "a result differs from its expectation by more than --atol " + tolerance
                                    : "a result differs from its expectation (--atol " + tolerance + ", --rtol)");
  }
  return 0;
}
