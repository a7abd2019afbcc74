//===- CompressTensorParallel.cpp - mcbench's TP site: codecs on TP all-reduces -*- C++ -*-===//
//
// See include/ptrain/Plan/CompressTensorParallel.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Plan/CompressTensorParallel.h"
#include "ptrain/Transforms/MixedPrecision.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Plan/CompressionPlan.h"
#include "ptrain/Plan/TensorParallelAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::ptrain;

namespace {
/// `ptrain.linear`'s {layer, role} of `op`, if it is a marked matmul.
std::optional<std::pair<int64_t, StringRef>> linearOf(Operation *op) {
  auto mm = dyn_cast_or_null<MatmulOp>(op);
  auto attr = mm ? mm->getAttrOfType<DictionaryAttr>(kLinearAttr) : DictionaryAttr();
  auto layer = attr ? attr.getAs<IntegerAttr>("layer") : IntegerAttr();
  auto role = attr ? attr.getAs<StringAttr>("role") : StringAttr();
  if (!layer || !role)
    return std::nullopt;
  return std::make_pair(layer.getInt(), role.getValue());
}

/// The backward site name of an f whose users include a column-parallel linear of `role`.
StringRef backwardRoleOf(StringRef columnRole) {
  if (columnRole == "qkv" || columnRole == "q" || columnRole == "k" || columnRole == "v")
    return "attn_in";
  if (columnRole == "mlp_up" || columnRole == "mlp_gate")
    return "mlp_in";
  return "";
}

bool isForwardRole(StringRef role) { return role == "attn_out" || role == "mlp_down"; }
} // namespace

std::vector<TensorParallelSite> mlir::ptrain::collectTensorParallelSites(ModuleOp module) {
  std::vector<TensorParallelSite> sites;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto stage = getStage(fn);
    if (!stage || fn.isExternal())
      continue;
    // The weights of the column-parallel linears (their rhs values) of this function's forward. f's
    // gradient is the sum over the linears f feeds of dy W^T (Autodiff: the matmul rule), so the weights
    // behind a tp all-reduce's input name the f it belongs to.
    // A bf16 or fp16 step's GEMMs read casts of their operands (MixedPrecision.h): the weights are keyed and
    // traced through them.
    auto uncast = [](Value v) -> Value {
      if (auto c = v.getDefiningOp<CastOp>())
        return c.getInput();
      return v;
    };
    llvm::DenseMap<Value, std::pair<int64_t, StringRef>> columnWeights;
    fn.walk([&](MatmulOp mm) {
      if (auto linear = linearOf(mm); linear && !backwardRoleOf(linear->second).empty())
        columnWeights[uncast(mm.getRhs())] = {linear->first, backwardRoleOf(linear->second)};
    });
    auto backwardSiteOf = [&](Value input) -> std::optional<std::pair<int64_t, StringRef>> {
      SmallVector<Value> work = {input};
      for (int64_t steps = 0; !work.empty() && steps < 64; ++steps) {
        Value v = work.pop_back_val();
        if (auto it = columnWeights.find(v); it != columnWeights.end())
          return it->second;
        Operation *def = v.getDefiningOp();
        if (auto add = dyn_cast_or_null<BinaryOp>(def); add && add.getKind() == BinaryKind::Add)
          work.append({add.getLhs(), add.getRhs()});
        else if (auto mm = dyn_cast_or_null<MatmulOp>(def))
          work.push_back(mm.getRhs());
        else if (isa_and_nonnull<TransposeOp, ReshapeOp, CastOp>(def))
          work.push_back(def->getOperand(0));
      }
      return std::nullopt;
    };
    fn.walk([&](TPAllReduceOp op) {
      TensorParallelSite site;
      site.op = op;
      site.stage = stage.getIndex();
      // A 16-bit sum of a lowered bf16 or fp16 step reads the cast of the site's fp32 value (MixedPrecision.h).
      Value input = op.getInput();
      if (auto narrow = input.getDefiningOp<CastOp>(); narrow && op.getAccumulate())
        input = narrow.getInput();
      if (auto linear = linearOf(input.getDefiningOp()); linear && isForwardRole(linear->second)) {
        site.layer = linear->first;
        site.role = linear->second.str();
        site.forward = true;
      } else if (auto column = backwardSiteOf(input)) {
        site.layer = column->first;
        site.role = column->second.str();
        site.forward = false;
      } else {
        return; // the vocabulary-parallel embedding or loss
      }
      sites.push_back(site);
    });
  }
  return sites;
}

std::vector<TensorParallelSite> mlir::ptrain::uniqueTensorParallelSites(ModuleOp module) {
  std::vector<TensorParallelSite> unique;
  std::set<std::tuple<int64_t, std::string, bool>> seen;
  for (const TensorParallelSite &site : collectTensorParallelSites(module))
    if (seen.insert({site.layer, site.role, site.forward}).second)
      unique.push_back(site);
  // By layer, each layer's sites in forward order (attn_out, mlp_down, attn_in, mlp_in).
  auto rank = [](const TensorParallelSite &s) {
    return std::make_tuple(s.layer, !s.forward, s.role.rfind("mlp", 0) == 0);
  };
  llvm::stable_sort(unique, [&](const auto &a, const auto &b) { return rank(a) < rank(b); });
  return unique;
}

std::string mlir::ptrain::tensorParallelSiteName(const TensorParallelSite &site) {
  return std::string(site.forward ? "forward" : "backward") + " tp all-reduce " + site.role + " of layer " +
         std::to_string(site.layer);
}

std::string mlir::ptrain::forwardSiteRefusal(CodecAttrInterface codec, RankedTensorType type) {
  if (codec.getEncoderStateTypes(type).empty())
    return "";
  return "keeps codec state (rand-k's counter, PowerSGD's warm-start Q), but the stage's backward recomputes the "
         "forward and must decode the same value: use a stateless codec (quant, topk, fp16, bf16, powersgd with "
         "warm-start=false)";
}

FailureOr<std::vector<TensorParallelCodec>> mlir::ptrain::planTensorParallelCompression(
    ModuleOp module, CodecAttrInterface forwardCodec, CodecAttrInterface backwardCodec, int64_t skipLayers,
    bool backwardErrorFeedback, llvm::function_ref<InFlightDiagnostic()> emitError) {
  std::vector<TensorParallelSite> sites = uniqueTensorParallelSites(module);
  if (sites.empty())
    return emitError() << "tp-fwd-codec/tp-bwd-codec: the module has no tensor-parallel all-reduce of a "
                          "row-parallel linear or of f's gradient (run --ptrain-raise and --ptrain-shard-tp with "
                          "tp > 1 before --ptrain-split-stages)",
           failure();
  int64_t layers = 0;
  for (const TensorParallelSite &site : sites)
    layers = std::max(layers, site.layer + 1);
  if (skipLayers >= layers)
    return emitError() << "tp-skip-layers = " << skipLayers << " skips every layer with a tp all-reduce (there are "
                       << layers << ")",
           failure();
  std::vector<TensorParallelCodec> codecs;
  for (const TensorParallelSite &site : sites) {
    CodecAttrInterface codec = site.forward ? forwardCodec : backwardCodec;
    if (!codec || site.layer < skipLayers)
      continue;
    auto type = cast<RankedTensorType>(site.op->getResult(0).getType());
    std::string edge = "the " + tensorParallelSiteName(site);
    if (isa<LinearAEAttr>(codec))
      return emitError() << "codec " << Attribute(codec) << " on " << edge
                         << ": the linear autoencoder needs trainable parameters, which --ptrain-compress does not "
                            "add on tensor-parallel all-reduces",
             failure();
    if (failed(codec.verifyForType(
            [&] {
              InFlightDiagnostic diag = emitError();
              diag << "codec " << Attribute(codec) << " cannot serve " << edge << ": ";
              return diag;
            },
            type)))
      return failure();
    if (std::string why = site.forward ? forwardSiteRefusal(codec, type) : ""; !why.empty())
      return emitError() << "tp-fwd-codec " << Attribute(codec) << " on " << edge << " " << why, failure();
    codecs.push_back({site.layer, site.role, site.forward, codec, !site.forward && backwardErrorFeedback});
  }
  return codecs;
}

ArrayAttr mlir::ptrain::tensorParallelRecord(MLIRContext *context, ArrayRef<TensorParallelCodec> codecs) {
  SmallVector<Attribute> entries;
  for (const TensorParallelCodec &c : codecs)
    entries.push_back(
        TPSiteAttr::get(context, c.layer, c.role, c.forward ? "forward" : "backward", c.codec, c.errorFeedback));
  return ArrayAttr::get(context, entries);
}

std::vector<TensorParallelCodec> mlir::ptrain::readTensorParallelRecord(ModuleOp module) {
  std::vector<TensorParallelCodec> codecs;
  CompressionAttr record = getCompression(module);
  if (!record || !record.getTpAllReduces())
    return codecs;
  // Each entry a #ptrain.tp_site (#ptrain.compression C7) with a role of its direction and error feedback
  // on backward sites only (#ptrain.tp_site C1-C4).
  for (auto site : record.getTpAllReduces().getAsRange<TPSiteAttr>())
    codecs.push_back(
        {site.getLayer(), site.getRole().str(), site.isForward(), site.getCodec(), site.getErrorFeedback()});
  return codecs;
}

std::string mlir::ptrain::tensorParallelStateKey(int64_t layer, StringRef role, StringRef what) {
  return "tp/layer" + std::to_string(layer) + "/" + role.str() + "/" + what.str();
}

LogicalResult mlir::ptrain::compressTensorParallelAllReduces(ModuleOp module, ArrayRef<TensorParallelCodec> codecs,
                                                             int64_t *numCompressed) {
  if (codecs.empty())
    return success();
  std::vector<TensorParallelSite> sites = collectTensorParallelSites(module);
  llvm::StringSet<> matched;
  for (TensorParallelSite &site : sites) {
    const TensorParallelCodec *entry = llvm::find_if(codecs, [&](const TensorParallelCodec &c) {
      return c.layer == site.layer && c.role == site.role && c.forward == site.forward;
    });
    if (entry == codecs.end())
      continue;
    matched.insert(tensorParallelStateKey(entry->layer, entry->role, ""));
    TPAllReduceOp op = site.op;
    auto type = cast<RankedTensorType>(op.getType());
    // A bf16 / fp16 step codes the 16-bit value (docs/Compression.md, "Codecs on 16-bit traffic"); a cast codec
    // there is the 16-bit all-reduce itself: the site stays a tp_all_reduce, which placeHalfTensorParallelSums
    // then moves in 16 bits.
    const FloatType half = getMessageHalfType(module);
    const RankedTensorType wire = half && type.getElementType().isF32() ? type.clone(half) : type;
    if (wire != type && isa<CastAttr>(entry->codec))
      continue;
    auto fn = op->getParentOfType<func::FuncOp>();
    SmallVector<StateOp> stateOps;
    if (entry->errorFeedback) {
      // The residual of this site and rank (each tp rank holds its own partial sum's residual).
      FailureOr<StateOp> s =
          getOrAddCodecState(module, fn, "tp_residual", tensorParallelStateKey(site.layer, site.role, "residual"),
                             StateKind::CodecResidual, type);
      if (failed(s))
        return failure();
      if (!site.forward) // a gradient's partial sum (forward sites carry no residual)
        markGradientResidual(module, *s);
      stateOps.push_back(*s);
    }
    auto [stateName, stateKind] = codecStateNameAndKind(entry->codec);
    for (Type t : entry->codec.getEncoderStateTypes(wire)) {
      FailureOr<StateOp> s = getOrAddCodecState(module, fn, ("tp_" + stateName).str(),
                                                tensorParallelStateKey(site.layer, site.role, stateName), stateKind,
                                                cast<RankedTensorType>(t));
      if (failed(s))
        return failure();
      stateOps.push_back(*s);
    }
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<Value> state;
    for (StateOp s : stateOps)
      state.push_back(StateReadOp::create(b, loc, s.getTensorType(), s.getSymName()));
    Value input = op.getInput();
    if (wire != type)
      input = CastOp::create(b, loc, wire, input);
    auto start = CompressedAllReduceStartOp::create(b, loc, input, state, ValueRange(), op.getGrid(), {op.getAxis()},
                                                    ReductionKind::Sum, entry->codec, entry->errorFeedback);
    for (auto [s, value] : llvm::zip(stateOps, start.getNewState()))
      StateWriteOp::create(b, loc, value, s.getSymName());
    Value reduced = WaitOp::create(b, loc, start.getRequest()).getResult();
    if (wire != type)
      reduced = CastOp::create(b, loc, type, reduced);
    op.getResult().replaceAllUsesWith(reduced);
    op.erase();
    if (numCompressed)
      ++*numCompressed;
  }
  for (const TensorParallelCodec &c : codecs)
    if (!matched.contains(tensorParallelStateKey(c.layer, c.role, "")))
      return emitError(module.getLoc()) << "--ptrain-lower-to-runtime: ptrain.compression names the "
                                        << (c.forward ? "forward" : "backward") << " tp all-reduce " << c.role
                                        << " of layer " << c.layer << ", which the module does not have";
  return success();
}
