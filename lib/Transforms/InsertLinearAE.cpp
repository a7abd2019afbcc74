//===- InsertLinearAE.cpp - MCBench's linear autoencoder on pipeline edges ---*- C++ -*-===//
//
// --ptrain-insert-linear-ae: see the pass description in Passes.td and docs/Compression.md ("The linear
// autoencoder"). The encoder W_e (H x dim) ends the sending stage's forward, the decoder W_d (dim x H) starts
// the receiving stage's; both are new `ptrain.state` parameters, so --ptrain-build-training-step
// differentiates them with the model, gives them gradient accumulators, moments and the dp all-reduce, and
// the pipeline sends the code (B x S x dim) forward and its gradient backward. Both get the default
// `ptrain.init = {kind = "orthogonal" / "orthogonal_transposed", seed = c}` (one seed per boundary c): a
// model file does not hold them, and the one seed makes W_d = W_e^T with orthonormal columns on every rank
// (ptrain/Dialect/PTrain/IR/PTrainStateInit.h).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStateInit.h"
#include "ptrain/Plan/CompressionPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::ptrain {
#define GEN_PASS_DEF_INSERTLINEARAEPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

/// The key of the autoencoder weight `part` (encoder, decoder) on the boundary `from` -> `to`.
static std::string linearAEKey(int64_t from, int64_t to, StringRef part);

namespace {
struct InsertLinearAEPass : public ptrain::impl::InsertLinearAEPassBase<InsertLinearAEPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  InFlightDiagnostic error(const Twine &message) {
    return emitError(getOperation().getLoc()) << "--ptrain-insert-linear-ae: " << message;
  }
};
} // namespace

static std::string linearAEKey(int64_t from, int64_t to, StringRef part) {
  return "ae/" + std::to_string(from) + "->" + std::to_string(to) + "/" + part.str();
}

void InsertLinearAEPass::runOnOperation() {
  ModuleOp module = getOperation();
  PipelineAttr pipeline = getPipeline(module);
  if (!pipeline) { // (C1)
    error("no ptrain.pipeline with stages; run --ptrain-split-stages first");
    return signalPassFailure();
  }
  ArrayRef<FlatSymbolRefAttr> stages = pipeline.getStages();
  const int64_t chunks = stages.size();
  for (int64_t c = 0; c < chunks; ++c)
    for (StringRef suffix : {"_backward", "_forward_backward"})
      if (module.lookupSymbol("stage" + std::to_string(c) + suffix.str())) { // (C2)
        error("the training step is already built (@stage")
            << c << suffix << "): the autoencoder's weights must be parameters before autodiff, so run "
            << "--ptrain-insert-linear-ae between --ptrain-split-stages and --ptrain-build-training-step";
        return signalPassFailure();
      }
  // A second run put a second encoder on the code of the first (the verifier's duplicate-key error at best).
  for (auto state : module.getOps<StateOp>())
    if (state.getKey().starts_with("ae/")) { // (C6)
      error("the module already has a linear autoencoder (state '")
          << state.getKey() << "'): insert it once, with one dim for every boundary";
      return signalPassFailure();
    }
  if (dim < 1) { // (C3)
    error("dim must be >= 1, got ") << dim.getValue();
    return signalPassFailure();
  }
  if (skipStages < 0 || skipStages >= chunks - 1) { // (C4)
    error("skip-stages must be in [0, ") << chunks - 2 << "] (a boundary must remain), got " << skipStages.getValue();
    return signalPassFailure();
  }
  OpBuilder b(&getContext());
  for (int64_t c = skipStages; c + 1 < chunks; ++c) {
    auto sender = module.lookupSymbol<func::FuncOp>(stages[c].getValue());
    auto receiver = module.lookupSymbol<func::FuncOp>(stages[c + 1].getValue());
    if (!sender || !receiver || sender.getNumResults() != 1 || receiver.getNumArguments() != 1) {
      error("stage ") << c << " -> " << c + 1 << ": needs stage functions of one result and one argument";
      return signalPassFailure();
    }
    auto type = dyn_cast<RankedTensorType>(sender.getResultTypes()[0]);
    if (!type || !type.hasStaticShape() || type.getRank() < 2 || !isa<FloatType>(type.getElementType()) ||
        type != receiver.getArgumentTypes()[0]) { // (C5)
      error("stage ") << c << " -> " << c + 1 << ": the boundary tensor must be a static float tensor of rank >= 2 "
                      << "that the next stage takes, got " << sender.getResultTypes()[0];
      return signalPassFailure();
    }
    const int64_t hidden = type.getShape().back();
    if (dim > hidden) { // (C3)
      error("dim ") << dim.getValue() << " exceeds the hidden size " << hidden << " of the boundary " << c << " -> "
                    << c + 1 << " (" << type << "): the code would be larger than the activation";
      return signalPassFailure();
    }
    Type elt = type.getElementType();
    SmallVector<int64_t> codeShape(type.getShape());
    codeShape.back() = dim;
    auto codeType = RankedTensorType::get(codeShape, elt);
    b.setInsertionPoint(sender);
    // One seed for the pair (the boundary's index): the encoder (H x dim) and the decoder (dim x H) start as
    // exact transposes.
    auto addParam = [&](StringRef part, ArrayRef<int64_t> shape, bool transposed) {
      std::string name = uniqueSymbolName(module, ("ae_" + part + "_" + Twine(c)).str());
      StateOp state = StateOp::create(b, sender.getLoc(), name, linearAEKey(c, c + 1, part), StateKind::Parameter,
                                      RankedTensorType::get(shape, elt));
      setOrthogonalInit(state, c, transposed);
      return state;
    };
    StateOp encoder = addParam("encoder", {hidden, dim}, /*transposed=*/false);
    StateOp decoder = addParam("decoder", {dim, hidden}, /*transposed=*/true);
    // The sender returns code = x W_e.
    auto ret = cast<func::ReturnOp>(sender.getBody().front().getTerminator());
    b.setInsertionPoint(ret);
    Value we = StateReadOp::create(b, ret.getLoc(), encoder.getTensorType(), encoder.getSymName());
    Value code = MatmulOp::create(b, ret.getLoc(), ret.getOperand(0), we);
    ret->setOperand(0, code);
    sender.setFunctionType(b.getFunctionType(sender.getArgumentTypes(), {codeType}));
    // The receiver takes the code and starts with x' = code W_d.
    BlockArgument arg = receiver.getArgument(0);
    arg.setType(codeType);
    b.setInsertionPointToStart(&receiver.getBody().front());
    Value wd = StateReadOp::create(b, receiver.getLoc(), decoder.getTensorType(), decoder.getSymName());
    auto decoded = MatmulOp::create(b, receiver.getLoc(), arg, wd);
    arg.replaceAllUsesExcept(decoded.getResult(), decoded);
    receiver.setFunctionType(b.getFunctionType({codeType}, receiver.getResultTypes()));
    ++numAutoencoders;
  }
}
