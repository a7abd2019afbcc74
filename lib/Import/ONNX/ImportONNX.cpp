//===- ImportONNX.cpp - the importer's entry points ---------------*- C++ -*-===//

#include "ptrain/Import/ONNX/ImportONNX.h"
#include "ptrain/Import/ONNX/Initializers.h"

#include "BindDimensions.h"
#include "ConstantInputs.h"
#include "DeadStates.h"
#include "FaithfulImport.h"
#include "ModelProtoLoader.h"
#include "RecognizeGelu.h"
#include "RecognizeLayerNorm.h"
#include "RecognizeRmsNorm.h"
#include "TiedWeights.h"
#include "TrainingSignature.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::ptrain;

OwningOpRef<ModuleOp> mlir::ptrain::importONNX(StringRef bytes, StringRef path, MLIRContext *context,
                                               const ImportONNXOptions &options) {
  onnx::ModelProto model;
  onnx_import::LoadError loadError = onnx_import::loadModelProto(bytes, path, model, options.bindings);
  if (!loadError.message.empty()) {
    // A node's error is reported at its line, as the faithful import's node locations are (line = position).
    emitError(FileLineColLoc::get(context, path, loadError.node + 1, 0)) << loadError.message;
    return nullptr;
  }
  if (options.checkExternalData) {
    llvm::Expected<onnx_data::ONNXInitializers> initializers = onnx_data::ONNXInitializers::open(path);
    llvm::Error checked = initializers ? initializers->checkExternalData() : initializers.takeError();
    if (checked) {
      emitError(FileLineColLoc::get(context, path, 0, 0)) << "--check-external-data: " << llvm::toString(std::move(checked));
      return nullptr;
    }
  }
  onnx_import::ParameterOverrides overrides{options.trainable, options.frozen, std::nullopt,
                                             options.ortTrainingModel};
  if (std::string error = onnx_import::checkParameterOverrides(overrides); !error.empty()) {
    emitError(FileLineColLoc::get(context, path, 0, 0)) << error;
    return nullptr;
  }
  if (!options.ortTrainingModel.empty()) {
    std::string error;
    FailureOr<llvm::StringSet<>> names = onnx_import::readOrtRequiresGrad(options.ortTrainingModel, error);
    if (failed(names)) {
      emitError(FileLineColLoc::get(context, path, 0, 0)) << error;
      return nullptr;
    }
    overrides.ortRequiresGrad = std::move(*names);
  }
  OwningOpRef<ModuleOp> module = onnx_import::importFaithful(model, path, context, options.entry, overrides);
  if (!module)
    return nullptr;
  if (!options.constantInputs.empty() &&
      failed(onnx_import::applyConstantInputs(*module, options.entry, options.constantInputs)))
    return nullptr;
  // Before legalization, which turns a weighted NegativeLogLikelihoodLoss into ops no longer named after it.
  if (options.applySignature && failed(onnx_import::checkExportLossWeights(*module, options.entry)))
    return nullptr;
  if (options.legalize && failed(legalizeONNX(*module)))
    return nullptr;
  if (options.legalize) {
    onnx_import::dropUnreadParameters(*module);
    onnx_import::reportTiedWeights(*module);
  }
  // After legalization: the outputs' shapes (which picks the logits) may be known only then.
  if (options.applySignature && failed(onnx_import::applyTrainingSignature(*module, options.entry, options.signature)))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

LogicalResult mlir::ptrain::legalizeONNX(ModuleOp module) {
  if (failed(legalizeONNXNodes(module)))
    return failure();
  RewritePatternSet patterns(module.getContext());
  onnx_import::populateRecognizeGeluPatterns(patterns);
  onnx_import::populateRecognizeLayerNormPatterns(patterns);
  onnx_import::populateRecognizeRmsNormPatterns(patterns);
  // Folding is off so that constants stay where the exporter put them; dead expansion ops are removed.
  return applyPatternsGreedily(module, std::move(patterns), GreedyRewriteConfig().enableFolding(false));
}

static llvm::cl::OptionCategory importCategory("ONNX import options (--import-onnx, --import-onnx-faithful)");

static llvm::cl::opt<std::string>
    bindOption("bind",
               llvm::cl::desc("sizes of the graph inputs' symbolic dimensions, e.g. --bind batch=8,seq=64 (every "
                              "symbolic dimension must be bound; 0 makes zero-size tensors)"),
               llvm::cl::value_desc("name=size,..."), llvm::cl::cat(importCategory));

static llvm::cl::opt<std::string> constantInputOption(
    "constant-input",
    llvm::cl::desc("give graph inputs constant values from TensorProto files, e.g. --constant-input "
                   "shape=shape.pb (for shape operands fed as inputs: ptrain's IR is static)"),
    llvm::cl::value_desc("name=file.pb,..."), llvm::cl::cat(importCategory));

static llvm::cl::opt<std::string> signatureOption(
    "signature",
    llvm::cl::desc("import for training: the roles (tokens, logits, labels, position_ids, padding_mask, "
                   "causal_mask, token_type_ids, empty) of graph inputs and outputs as onnx_name=role,...; "
                   "'auto' infers all of them, and roles not given are inferred. Generated inputs become "
                   "constants, empty ones zero-size constants; the function keeps the token input and the "
                   "logits output"),
    llvm::cl::value_desc("onnx_name=role,...|auto"), llvm::cl::cat(importCategory));

static llvm::cl::opt<std::string> trainableOption(
    "trainable",
    llvm::cl::desc("train the initializers whose whole name matches this POSIX extended regular expression, "
                   "whatever the importer's rule says (docs/ImportONNX.md, 'Parameters and constants'); "
                   "an error when it matches none or an integer initializer"),
    llvm::cl::value_desc("regex"), llvm::cl::cat(importCategory));

static llvm::cl::opt<std::string> frozenOption(
    "frozen",
    llvm::cl::desc("hold the initializers whose whole name matches this POSIX extended regular expression "
                   "constant (no gradient, no optimizer state); wins over --trainable; an error when it "
                   "matches none"),
    llvm::cl::value_desc("regex"), llvm::cl::cat(importCategory));

static llvm::cl::opt<std::string> ortTrainingModelOption(
    "ort-training-model",
    llvm::cl::desc("onnxruntime's training artifact of this model (onnxruntime.training.artifacts' "
                   "training_model.onnx): train exactly the initializers its requires_grad list names (its "
                   "inputs <name>_grad.accumulation.buffer) and hold every other one constant; --frozen and "
                   "--trainable still win"),
    llvm::cl::value_desc("training_model.onnx"), llvm::cl::cat(importCategory));

static llvm::cl::opt<bool> checkExternalDataOption(
    "check-external-data",
    llvm::cl::desc("check that every initializer's external data file exists and holds its byte range before "
                   "importing (ptrain-compile does; without it the weights are only found when read)"),
    llvm::cl::cat(importCategory));

/// Reads the main buffer of `sourceMgr` as an ONNX model; the buffer's name is the file path.
static OwningOpRef<Operation *> translateImport(llvm::SourceMgr &sourceMgr, MLIRContext *context, bool legalize) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  ImportONNXOptions options;
  options.legalize = legalize;
  options.trainable = trainableOption;
  options.frozen = frozenOption;
  options.ortTrainingModel = ortTrainingModelOption;
  options.checkExternalData = checkExternalDataOption;
  Location fileLoc = FileLineColLoc::get(context, buffer->getBufferIdentifier(), 0, 0);
  if (std::string error = onnx_import::parseBindings(bindOption, options.bindings); !error.empty()) {
    emitError(fileLoc) << error;
    return nullptr;
  }
  if (std::string error = onnx_import::parseConstantInputs(constantInputOption, options.constantInputs);
      !error.empty()) {
    emitError(fileLoc) << error;
    return nullptr;
  }
  if (!signatureOption.empty()) {
    options.applySignature = true;
    if (std::string error = onnx_import::parseSignature(signatureOption, options.signature); !error.empty()) {
      emitError(fileLoc) << error;
      return nullptr;
    }
  }
  OwningOpRef<ModuleOp> module = importONNX(buffer->getBuffer(), buffer->getBufferIdentifier(), context, options);
  if (!module)
    return nullptr;
  return OwningOpRef<Operation *>(module.release().getOperation());
}

std::optional<int> mlir::ptrain::importONNXMain(int argc, char **argv) {
  bool legalize = false, onnx = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = llvm::StringRef(argv[i]).ltrim('-');
    if (arg == "import-onnx" || arg == "import-onnx-faithful") {
      onnx = true;
      legalize = arg == "import-onnx";
    }
  }
  if (!onnx)
    return std::nullopt;
  // The options mlirTranslateMain would give (input, -o, the translation), plus the printer's and the
  // import's own (--bind, --constant-input, --signature, above).
  static llvm::cl::opt<std::string> input(llvm::cl::Positional, llvm::cl::desc("<input file>"), llvm::cl::init("-"));
  static llvm::cl::opt<std::string> output("o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
                                           llvm::cl::init("-"));
  static llvm::cl::opt<bool> legal("import-onnx", llvm::cl::desc("import an ONNX model as a ptrain model graph"));
  static llvm::cl::opt<bool> faithful("import-onnx-faithful",
                                      llvm::cl::desc("import an ONNX model as ptrain.onnx_node ops"));
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  llvm::cl::ParseCommandLineOptions(argc, argv, "ptrain ONNX importer\n");
  if (legal && faithful) {
    llvm::errs() << "error: give one of --import-onnx and --import-onnx-faithful\n";
    return 1;
  }
  // Memory-mapped, never copied (no null terminator needed): the scan of EmbeddedWeights.h touches only the
  // pages with field headers.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(input, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    llvm::errs() << "error: cannot open input file '" << input << "': " << buffer.getError().message() << "\n";
    return 1;
  }
  MLIRContext context;
  context.loadDialect<PTrainDialect, func::FuncDialect, arith::ArithDialect>();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<Operation *> module = translateImport(sourceMgr, &context, legalize);
  if (!module)
    return 1;
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
  if (!file) {
    llvm::errs() << error << "\n";
    return 1;
  }
  module->print(file->os());
  file->os() << "\n";
  file->keep();
  return 0;
}

void mlir::ptrain::registerImportONNXTranslations() {
  TranslateToMLIRRegistration importLegal(
      "import-onnx", "import an ONNX model as a ptrain model graph (faithful import, then legalization)",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
        return translateImport(sourceMgr, context, /*legalize=*/true);
      },
      [](DialectRegistry &registry) { registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect>(); });
  TranslateToMLIRRegistration importFaithful(
      "import-onnx-faithful", "import an ONNX model as ptrain.onnx_node ops, without legalization",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
        return translateImport(sourceMgr, context, /*legalize=*/false);
      },
      [](DialectRegistry &registry) { registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect>(); });
}
