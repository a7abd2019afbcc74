//===- ptrain-interpret.cpp - run an L0 model graph on the CPU -----*- C++ -*-===//
//
// Evaluates a function of an L0 module with the reference interpreter, feeding its state symbols from an ONNX
// model's initializers (by key) and its arguments from TensorProto files, and compares the results with
// reference outputs:
//
//   ptrain-interpret model.mlir --weights models/gpt/gpt.onnx --input models/gpt/test_data_set_0/input_0.pb
//       --expect models/gpt/test_data_set_0/output_0.pb --atol 1e-5
//
// With --multi-rank --codec-errors FILE it also measures every candidate codec of policy=auto on the tensors
// the plan sends between pipeline stages (CodecErrorProbe.h) and writes the figures for auto-codec-errors
// (CodecErrors.h; docs/Compression.md, "Measured codec errors").
//
// Exit code 0 on success, 1 on any error or when a result differs from its expectation by more than --atol.
// See docs/Interpreter.md.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Import/ONNX/Initializers.h"
#include "ptrain/Interpreter/Interpreter.h"
#include "ptrain/Interpreter/MultiRankExecutor.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/AutoCandidates.h"
#include "ptrain/Transforms/CodecErrors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <ctime>

using namespace mlir;
using namespace mlir::ptrain;

// The tool's own options: --help lists these, not the LLVM code generator's (they are still accepted).
static llvm::cl::OptionCategory interpretOptions("ptrain-interpret options");
static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional, llvm::cl::desc("<model.mlir>"), llvm::cl::Required,
                                            llvm::cl::cat(interpretOptions));
static llvm::cl::opt<std::string>
    weightsFile("weights",
                llvm::cl::desc("ONNX model whose initializers give the state values by key (default: the "
                               "module attribute ptrain.onnx_file, relative to the current directory)"),
                llvm::cl::value_desc("model.onnx"), llvm::cl::cat(interpretOptions));
static llvm::cl::list<std::string> argumentFiles("input", llvm::cl::desc("TensorProto file for the next argument"),
                                                 llvm::cl::value_desc("file.pb"), llvm::cl::cat(interpretOptions));
static llvm::cl::list<std::string>
    expectFiles("expect", llvm::cl::desc("TensorProto file with the expected value of the next result"),
                llvm::cl::value_desc("file.pb"), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<double> absoluteTolerance("atol", llvm::cl::desc("largest accepted |result - expected|"),
                                               llvm::cl::init(1e-5), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<double> expectRelativeTolerance(
    "expect-rtol",
    llvm::cl::desc("for --expect: also accept |result - expected| up to this fraction of max|expected| (default "
                   "0: --atol alone)"),
    llvm::cl::init(0.0), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<std::string>
    expectGrads("expect-grads",
                llvm::cl::desc("ONNX file whose initializers are the expected gradients: each result with a "
                               "ptrain.grad_of attribute is compared with the initializer of that name"),
                llvm::cl::value_desc("reference_grads.onnx"), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<double>
    relativeTolerance("rtol",
                      llvm::cl::desc("largest accepted max|result - expected| / max|expected| for --expect-grads"),
                      llvm::cl::init(1e-4), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<bool>
    runPipeline("pipeline",
                llvm::cl::desc("run the stages named by the module's ptrain.pipeline attribute in order, each on the "
                               "previous stage's results (the inputs go to stage 0), instead of --entry"),
                llvm::cl::cat(interpretOptions));
static llvm::cl::opt<bool> multiRank(
    "multi-rank",
    llvm::cl::desc("run every rank of the module's ptrain.grid in process (the multi-rank executor): each rank "
                   "runs its stage's function with ptrain.entry = --entry-kind (the steps of "
                   "--ptrain-lower-to-runtime; @train_step without a pipeline) --steps times; --input is the "
                   "global batch, of which data-parallel replica d reads rows [d*R, (d+1)*R)"),
    llvm::cl::cat(interpretOptions));
static llvm::cl::opt<std::string> entryKind("entry-kind", llvm::cl::desc("--multi-rank: train or eval (default train)"),
                                            llvm::cl::init("train"), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<int> numSteps("steps", llvm::cl::desc("--multi-rank: how many steps to run"), llvm::cl::init(1),
                                   llvm::cl::cat(interpretOptions));
static llvm::cl::opt<int>
    randomTokens("random-tokens",
                 llvm::cl::desc("--multi-rank without --input: a global batch of token ids drawn uniformly from the "
                                "vocabulary (the embedding table's rows) with this seed, new for every step"),
                 llvm::cl::init(-1), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<std::string>
    tokensFile("tokens-file",
               llvm::cl::desc("--multi-rank: raw little-endian int64 token ids, --steps global batches one after the "
                              "other (step k reads the k-th [dp*R, S] block)"),
               llvm::cl::value_desc("tokens.bin"), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<std::string>
    labelsFile("labels-file",
               llvm::cl::desc("--multi-rank, a step with explicit labels (its second argument): raw little-endian "
                              "int64 labels in the layout of --tokens-file"),
               llvm::cl::value_desc("labels.bin"), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<bool> printStates("print-states",
                                       llvm::cl::desc("--multi-rank: after the last step, print every rank's "
                                                      "parameters (type, max|x|, FNV-1a of the f32 bits)"),
                                       llvm::cl::cat(interpretOptions));
static llvm::cl::opt<std::string> codecErrorsFile(
    "codec-errors",
    llvm::cl::desc("--multi-rank on an uncompressed plan: encode and decode every tensor sent between pipeline "
                   "stages with every candidate codec of policy=auto (the candidate table and PowerSGD at the "
                   "default ranks), without and with error feedback, and write the relative errors per boundary "
                   "and codec to this file (the input of --ptrain-compress auto-codec-errors)"),
    llvm::cl::value_desc("codec-errors.json"), llvm::cl::cat(interpretOptions));
static llvm::cl::opt<std::string> entryName("entry", llvm::cl::desc("function to run"), llvm::cl::init("forward"),
                                            llvm::cl::cat(interpretOptions));
static llvm::cl::opt<bool> printSummary("print-summary",
                                        llvm::cl::desc("print the ops evaluated and the states loaded"),
                                        llvm::cl::cat(interpretOptions));

/// The command line, for --codec-errors' provenance.
static std::string commandLine;

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

/// FNV-1a 64 of the f32 bit patterns (floats) or int64 values (integers) of `t`.
static uint64_t fingerprint(const interp::Tensor &t) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t i = 0, e = t.getNumElements(); i < e; ++i) {
    uint64_t bits;
    if (t.getDType() == interp::DType::F32) {
      float f = static_cast<float>(t.floats()[i]);
      uint32_t b;
      std::memcpy(&b, &f, sizeof b);
      bits = b;
    } else if (t.isFloat()) {
      double d = t.floats()[i];
      std::memcpy(&bits, &d, sizeof bits);
    } else {
      bits = static_cast<uint64_t>(t.ints()[i]);
    }
    for (int k = 0; k < 8; ++k) {
      h ^= (bits >> (8 * k)) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

/// --multi-rank: the steps of every rank of the grid, in process.
static int runMultiRank(ModuleOp module, interp::StateProvider states, std::vector<interp::Tensor> arguments) {
  llvm::Expected<std::unique_ptr<interp::MultiRankExecutor>> created =
      interp::MultiRankExecutor::create(module, std::move(states));
  if (!created)
    return fail(llvm::toString(created.takeError()));
  interp::MultiRankExecutor &executor = **created;
  const int64_t n = executor.getNumRanks();
  std::vector<std::string> entries;
  for (int64_t r = 0; r < n; ++r) {
    llvm::Expected<std::string> entry = executor.entryForRank(r, entryKind, entryKind == "train" ? "train_step" : "");
    if (!entry)
      return fail(llvm::toString(entry.takeError()));
    entries.push_back(*entry);
  }
  // The local batch of a replica: the entry's token argument; the global batch stacks dp replicas.
  auto fn = module.lookupSymbol<func::FuncOp>(entries[0]);
  // (tokens) or, with explicit labels, (tokens, labels) of the same type.
  const bool withLabels = fn.getNumArguments() == 2 && fn.getArgumentTypes()[0] == fn.getArgumentTypes()[1];
  auto local = fn.getNumArguments() == 1 || withLabels ? dyn_cast<RankedTensorType>(fn.getArgumentTypes()[0]) : nullptr;
  if (!local || local.getRank() != 2 || !local.hasStaticShape() || !local.getElementType().isInteger(64))
    return fail("--multi-rank: @" + entries[0] + " must take one tensor<RxSxi64> of token ids (and labels)");
  if (withLabels != !labelsFile.empty())
    return fail(withLabels ? "--multi-rank: @" + entries[0] + " takes labels: give --labels-file"
                           : "--labels-file: @" + entries[0] + " takes no labels");
  int64_t dp = 1;
  for (const std::string &axis : executor.getAxisNames())
    if (axis == "dp")
      dp = executor.getCoordinate(n - 1, "dp") + 1;
  const int64_t rows = local.getDimSize(0), seq = local.getDimSize(1);
  interp::Tensor global;
  if (!arguments.empty()) {
    if (arguments.size() != 1 || arguments[0].isFloat() || arguments[0].getRank() != 2 ||
        arguments[0].getShape()[0] != dp * rows || arguments[0].getShape()[1] != seq)
      return fail("--multi-rank: --input must be one integer tensor of the global batch [" + llvm::Twine(dp * rows) +
                  ", " + llvm::Twine(seq) + "] (dp = " + llvm::Twine(dp) + " replicas of " + llvm::Twine(rows) +
                  " rows), got " + (arguments.empty() ? std::string("none") : arguments[0].getTypeString()));
    global = arguments[0];
  } else if (randomTokens < 0 && tokensFile.empty()) {
    return fail("--multi-rank needs --input (the global batch of token ids), --tokens-file or --random-tokens SEED");
  }
  // --tokens-file and --labels-file: --steps global batches [dp R, S] of int64.
  auto readBatches = [&](const std::string &path, StringRef what, std::vector<int64_t> &out) -> bool {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      fail("cannot read '" + path + "': " + buffer.getError().message());
      return false;
    }
    const int64_t want = static_cast<int64_t>(numSteps) * dp * rows * seq;
    if (static_cast<int64_t>((*buffer)->getBufferSize()) != want * 8) {
      fail("'" + path + "' has " + llvm::Twine((*buffer)->getBufferSize()) + " bytes; " + llvm::Twine(numSteps) +
           " step(s) of [" + llvm::Twine(dp * rows) + ", " + llvm::Twine(seq) + "] int64 " + what + " are " +
           llvm::Twine(want * 8));
      return false;
    }
    out.resize(want);
    std::memcpy(out.data(), (*buffer)->getBufferStart(), want * 8);
    return true;
  };
  std::vector<int64_t> fileTokens, fileLabels;
  if (!tokensFile.empty() && !readBatches(tokensFile, "token ids", fileTokens))
    return 1;
  if (withLabels && tokensFile.empty())
    return fail("--labels-file needs --tokens-file (the tokens of the same steps)");
  if (withLabels && !readBatches(labelsFile, "labels", fileLabels))
    return 1;
  // The vocabulary: the rows of the table that the token ids index, i.e. of an embedding whose ids are a
  // function's argument (the stage's tokens). Position tables (learned positions, rotary cos/sin) are read
  // with constant ids and say nothing about the vocabulary: taking the last embedding of the module once drew
  // LLaMA's pp = 2 tokens below the 16 positions of its rotary table (pp = 1 drew them below 128). A
  // vocabulary-parallel table holds Vp / tp rows; its state's ptrain.tp_slice names the global V.
  int64_t vocab = 0;
  module.walk([&](Operation *op) {
    int64_t rows = 0;
    if (auto e = dyn_cast<EmbeddingOp>(op); e && isa<BlockArgument>(e.getIds())) {
      rows = e.getTable().getType().getDimSize(0);
    } else if (auto v = dyn_cast<VocabParallelEmbeddingOp>(op); v && isa<BlockArgument>(v.getIds())) {
      auto read = v.getTable().getDefiningOp<StateReadOp>();
      auto state = read ? SymbolTable::lookupNearestSymbolFrom<StateOp>(read, read.getStateAttr()) : StateOp();
      if (TPSliceAttr slice = state ? getTPSlice(state) : TPSliceAttr())
        rows = slice.getShape()[slice.getDim()];
    }
    if (rows > 0 && (vocab == 0 || rows < vocab))
      vocab = rows;
  });
  if (randomTokens >= 0 && arguments.empty() && fileTokens.empty() && vocab <= 0)
    return fail("--random-tokens: no ptrain.embedding of the token ids (a function argument) gives the "
                "vocabulary size");

  // --codec-errors: every send along pp is measured as it is posted.
  std::optional<interp::CodecErrorProbe> probe;
  if (!codecErrorsFile.empty()) {
    if (entryKind != "train")
      return fail("--codec-errors measures the sends of training steps (--entry-kind train)");
    if (getCompression(module))
      return fail("--codec-errors: the plan is compressed (ptrain.compression): measure the uncompressed plan");
    if (PipelineAttr pipeline = getPipeline(module); pipeline && pipeline.getVirtualStages() > 1)
      return fail("--codec-errors: interleaved plans (virtual stages) are not measured yet");
    if (executor.getAxisSize("pp") < 2)
      return fail("--codec-errors: the plan has no pipeline (a pp axis of 2 or more) whose sends to measure");
    std::vector<CodecAttrInterface> codecs;
    for (const CodecCandidate &c : getCodecCandidates()) {
      if (!c.backwardSend && !c.forwardSend)
        continue;
      auto codec = parseCodecSpec(module.getContext(), c.spec, "the candidate table",
                                  [&] { return emitError(module.getLoc()); });
      if (failed(codec))
        return 1;
      codecs.push_back(*codec);
    }
    probe.emplace(std::move(codecs), std::vector<int64_t>(getDefaultPowerSGDRanks().begin(),
                                                          getDefaultPowerSGDRanks().end()));
    executor.setSendObserver([&](int64_t rank, SendStartOp send, const interp::Tensor &value) -> llvm::Error {
      if (send.getAxis() != "pp")
        return llvm::Error::success();
      const int64_t stage = executor.getCoordinate(rank, "pp");
      const bool forward = send.getOffset() > 0;
      return probe->observe(rank, {forward, forward ? stage : stage - 1},
                            dyn_cast<RankedTensorType>(send.getInput().getType()), value);
    });
  }

  for (int step = 1; step <= numSteps; ++step) {
    if (!fileTokens.empty()) {
      const int64_t block = dp * rows * seq;
      std::vector<int64_t> ids(fileTokens.begin() + (step - 1) * block, fileTokens.begin() + step * block);
      llvm::Expected<interp::Tensor> read = interp::Tensor::fromInts(interp::DType::I64, {dp * rows, seq}, ids);
      if (!read)
        return fail(llvm::toString(read.takeError()));
      global = std::move(*read);
    } else if (arguments.empty()) {
      std::vector<int64_t> ids(dp * rows * seq);
      uint64_t x = 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(randomTokens) * 1000003ull + step);
      for (int64_t &id : ids) { // splitmix64
        uint64_t z = (x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        id = static_cast<int64_t>((z ^ (z >> 31)) % static_cast<uint64_t>(vocab));
      }
      global = cantFail(interp::Tensor::fromInts(interp::DType::I64, {dp * rows, seq}, ids));
    }
    llvm::Expected<std::vector<std::vector<interp::Tensor>>> results = executor.run(
        [&](int64_t r) { return entries[r]; },
        [&](int64_t r) {
          int64_t d = executor.getCoordinate(r, "dp");
          auto rowsOf = [&](llvm::ArrayRef<int64_t> all) {
            std::vector<int64_t> rowIds(all.begin() + d * rows * seq, all.begin() + (d + 1) * rows * seq);
            return cantFail(interp::Tensor::fromInts(interp::DType::I64, {rows, seq}, rowIds));
          };
          std::vector<interp::Tensor> args = {rowsOf(global.ints())};
          if (withLabels) {
            const int64_t block = dp * rows * seq;
            args.push_back(rowsOf(llvm::ArrayRef<int64_t>(fileLabels).slice((step - 1) * block, block)));
          }
          return args;
        });
    if (!results)
      return fail(llvm::toString(results.takeError()));
    const interp::Tensor &loss0 = (*results)[0].at(0);
    bool agree = true;
    for (const std::vector<interp::Tensor> &rank : *results)
      agree &= !rank.empty() && rank[0].getNumElements() == 1 && rank[0].getAsDouble(0) == loss0.getAsDouble(0);
    if (!agree) {
      for (auto [r, rank] : llvm::enumerate(*results))
        llvm::outs() << executor.describeRank(r) << ": loss "
                     << llvm::format("%.9g", rank.empty() ? NAN : rank[0].getAsDouble(0)) << "\n";
      return fail("step " + llvm::Twine(step) + ": the ranks return different losses");
    }
    llvm::outs() << "step " << step << ": loss " << llvm::format("%.9g", loss0.getAsDouble(0)) << " on all " << n
                 << " rank(s)";
    // fp16's loss scaler (docs/MixedPrecision.md): rank 0's scaler state after the step, as Megatron-LM logs the
    // loss scale.
    auto scaler = executor.getStates(0).find("loss_scaler");
    if (scaler != executor.getStates(0).end() && scaler->second.getNumElements() == 3)
      llvm::outs() << ", loss scale " << llvm::format("%.9g", scaler->second.getAsDouble(0)) << " (growth tracker "
                   << scaler->second.getAsDouble(1) << ", hysteresis tracker " << scaler->second.getAsDouble(2) << ")";
    llvm::outs() << "\n";
  }
  if (probe) {
    std::vector<interp::CodecErrorSiteResult> results = probe->results();
    std::string weights = module->getAttrOfType<StringAttr>("ptrain.onnx_file")
                              ? module->getAttrOfType<StringAttr>("ptrain.onnx_file").getValue().str()
                              : weightsFile.getValue();
    std::string date(32, '\0');
    std::time_t now = std::time(nullptr);
    date.resize(std::strftime(date.data(), date.size(), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now)));
    std::string data = !tokensFile.empty() ? "tokens-file " + tokensFile
                       : randomTokens >= 0 ? "random-tokens " + std::to_string(randomTokens)
                                           : "input " + argumentFiles[0];
    llvm::json::Object provenance{{"model", llvm::sys::path::filename(weights).str()},
                                  {"model_path", weightsFile.empty() ? weights : weightsFile.getValue()},
                                  {"plan", inputFile.getValue()},
                                  {"steps", numSteps.getValue()},
                                  {"data", data},
                                  {"date", date},
                                  {"command", commandLine}};
    llvm::json::Value file = codecErrorsToJSON(results, std::move(provenance));
    if (llvm::Error error = llvm::writeToOutput(codecErrorsFile, [&](llvm::raw_ostream &os) {
          os << llvm::formatv("{0:2}", file) << "\n";
          return llvm::Error::success();
        }))
      return fail("--codec-errors: cannot write '" + codecErrorsFile + "': " + llvm::toString(std::move(error)));
    size_t figures = 0;
    for (const interp::CodecErrorSiteResult &r : results)
      figures += r.figures.size();
    llvm::outs() << "codec errors: " << results.size() << " site(s), " << figures << " figure(s) over " << numSteps
                 << " step(s) -> " << codecErrorsFile << "\n";
  }
  if (printStates)
    for (int64_t r = 0; r < n; ++r) {
      std::vector<std::string> keys;
      for (auto &entry : executor.getStates(r))
        keys.push_back(entry.getKey().str());
      llvm::sort(keys);
      for (const std::string &key : keys) {
        const interp::Tensor &t = executor.getStates(r).find(key)->second;
        llvm::outs() << "rank " << r << " '" << key << "' " << t.getTypeString()
                     << llvm::format(" max|x| = %.6e fnv1a = %016llx", t.maxAbs(),
                                     static_cast<unsigned long long>(fingerprint(t)))
                     << "\n";
      }
    }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  for (int i = 0; i < argc; ++i)
    commandLine += (i ? " " : "") + std::string(argv[i]);
  llvm::cl::HideUnrelatedOptions(interpretOptions);
  llvm::cl::ParseCommandLineOptions(argc, argv, "ptrain reference interpreter\n");
  // A negative or NaN tolerance made every comparison a MISMATCH blamed on the results (an --expect-rtol's on
  // --atol); --steps below 1 ran nothing and exited 0.
  for (const llvm::cl::opt<double> *tolerance : {&absoluteTolerance, &expectRelativeTolerance, &relativeTolerance})
    if (!(tolerance->getValue() >= 0.0) || !std::isfinite(tolerance->getValue())) {
      std::string value;
      llvm::raw_string_ostream(value) << llvm::format("%g", tolerance->getValue());
      return fail("--" + tolerance->ArgStr + " " + value + ": a tolerance must be a finite number >= 0");
    }
  if (!codecErrorsFile.empty() && !multiRank)
    return fail("--codec-errors needs --multi-rank (it measures the sends of a plan's ranks)");
  if (numSteps < 1)
    return fail("--steps " + llvm::Twine(numSteps.getValue()) + ": must be at least 1");

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
  if (!initializers) {
    // The importer records the path it was given: a relative one only resolves from the import's folder.
    std::string hint = weightsFile.empty() ? " (the model of the module's ptrain.onnx_file, relative to the current "
                                             "directory; run from the import's folder or pass --weights MODEL.onnx)"
                                           : "";
    return fail(llvm::toString(initializers.takeError()) + hint);
  }

  std::vector<interp::Tensor> arguments;
  for (const std::string &path : argumentFiles) {
    llvm::Expected<interp::Tensor> tensor = onnx_data::readTensorProtoFile(path);
    if (!tensor)
      return fail(llvm::toString(tensor.takeError()));
    arguments.push_back(std::move(*tensor));
  }

  interp::StateProvider provider = [&](llvm::StringRef key, RankedTensorType) { return initializers->read(key); };
  if (multiRank)
    return runMultiRank(*module, provider, std::move(arguments));
  interp::Interpreter interpreter(*module, provider);
  llvm::Expected<std::vector<interp::Tensor>> results = std::vector<interp::Tensor>();
  if (runPipeline) {
    PipelineAttr pipeline = getPipeline(*module);
    if (!pipeline)
      return fail("--pipeline: the module has no ptrain.pipeline attribute with stages (run "
                  "--ptrain-split-stages first)");
    ArrayRef<FlatSymbolRefAttr> stages = pipeline.getStages();
    std::vector<interp::Tensor> values = std::move(arguments);
    for (FlatSymbolRefAttr stage : stages) {
      std::string name = stage.getValue().str();
      results = interpreter.run(name, values);
      if (!results)
        return fail(llvm::toString(results.takeError()));
      values = *results;
      llvm::outs() << "stage @" << name << ": " << values.size() << " result(s)\n";
    }
    entryName = stages.back().getValue().str();
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
