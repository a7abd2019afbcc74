//===- PTrainPlanAttrs.cpp - the plan attributes' verifiers --------------===//
//
// The plan attributes' own constraints (#ptrain.pipeline C1-C5, #ptrain.stage C1, #ptrain.schedule C1-C5,
// #ptrain.compression C1-C7, #ptrain.tp_site C1-C4, #ptrain.zero_bucket C1-C3, #ptrain.dropout_layout C1-C3,
// #ptrain.tp_slice C1-C5) and the dialect's check of them where they sit (pipeline C6-C8, stage C2-C4, schedule
// C6-C8, compression C8-C11, zero_bucket C4-C6, tp_slice C6-C9; the dropout layout's is ptrain.dropout's own,
// C4-C6 in PTrainSelectionOps.cpp); PTrainAttrs.td and PTrainPlanAttrs.h.
// Negative tests, one per error: test/Dialect/PTrain/plan-attrs-invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include <tuple>

using namespace mlir;
using namespace mlir::ptrain;

LogicalResult PipelineAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t pp, int64_t virtualStages,
                                   ArrayRef<FlatSymbolRefAttr> stages, std::optional<int64_t> microBatches,
                                   bool labels, bool deterministicDp) {
  // (C1)
  if (pp < 1)
    return emitError() << "pipeline pp must be >= 1, got " << pp;
  // (C2)
  if (virtualStages < 1 || (virtualStages > 1 && pp == 1))
    return emitError() << "pipeline virtual_stages must be >= 1, and 1 when pp is 1, got " << virtualStages;
  // (C3)
  if (static_cast<int64_t>(stages.size()) != pp * virtualStages)
    return emitError() << "pipeline lists " << stages.size()
                       << " stage functions, pp x virtual_stages = " << pp * virtualStages;
  // (C4)
  if (microBatches && *microBatches < 1)
    return emitError() << "pipeline micro_batches must be >= 1, got " << *microBatches;
  // (C5)
  if (labels && !microBatches)
    return emitError() << "pipeline labels needs micro_batches (a training step)";
  if (deterministicDp && !microBatches)
    return emitError() << "pipeline deterministic_dp needs micro_batches (a training step)";
  return success();
}

LogicalResult StageAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t index) {
  // (C1)
  if (index < 0)
    return emitError() << "stage index must be >= 0, got " << index;
  return success();
}

/// Whether `attr` is an array of rows with the row lengths of `table`, of floats (`floats`) or bools.
static bool hasTableShape(ArrayAttr attr, ArrayAttr table, bool floats) {
  if (attr.size() != table.size())
    return false;
  for (auto [row, tableRow] : llvm::zip(attr, table)) {
    auto entries = dyn_cast<ArrayAttr>(row);
    if (!entries || entries.size() != cast<ArrayAttr>(tableRow).size() ||
        !llvm::all_of(entries, [&](Attribute a) { return floats ? isa<FloatAttr>(a) : isa<BoolAttr>(a); }))
      return false;
  }
  return true;
}

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef kind, int64_t microBatches,
                                   int64_t virtualStages, ArrayAttr table, ArrayAttr slack, ArrayAttr critical,
                                   ArrayAttr sendSlack, ArrayAttr sendCritical, ArrayAttr dpAllReduceSlack,
                                   ArrayAttr dpAllReduceCritical, FloatAttr iterationTime, FloatAttr bubble) {
  // (C1)
  if (kind != "gpipe" && kind != "1f1b" && kind != "interleaved")
    return emitError() << "schedule kind must be gpipe, 1f1b or interleaved, got '" << kind << "'";
  // (C2)
  if (microBatches < 1 || virtualStages < 1)
    return emitError() << "schedule micro_batches and virtual_stages must be >= 1, got " << microBatches << " and "
                       << virtualStages;
  // (C3)
  if (!table || table.empty() || llvm::any_of(table, [](Attribute row) {
        auto steps = dyn_cast<ArrayAttr>(row);
        return !steps || !llvm::all_of(steps, [](Attribute step) { return isa<StringAttr>(step); });
      }))
    return emitError() << "schedule table must be a non-empty list of rows of step strings";
  // (C4)
  for (auto [name, attr, floats] : {std::tuple<StringRef, ArrayAttr, bool>{"slack", slack, true},
                                    {"critical", critical, false},
                                    {"send_slack", sendSlack, true},
                                    {"send_critical", sendCritical, false}})
    if (attr && !hasTableShape(attr, table, floats))
      return emitError() << "schedule " << name << " must have the shape of the table, of "
                         << (floats ? "floats" : "bools");
  // (C5)
  for (auto [name, attr, floats] :
       {std::tuple<StringRef, ArrayAttr, bool>{"dp_all_reduce_slack", dpAllReduceSlack, true},
        {"dp_all_reduce_critical", dpAllReduceCritical, false}})
    if (attr && (attr.size() != table.size() ||
                 !llvm::all_of(attr, [&](Attribute a) { return floats ? isa<FloatAttr>(a) : isa<BoolAttr>(a); })))
      return emitError() << "schedule " << name << " must have one " << (floats ? "float" : "bool")
                         << " per row of the table (" << table.size() << ")";
  return success();
}

LogicalResult CompressionAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef policy,
                                      ArrayAttr backwardSends, CodecAttrInterface backwardCodec, bool,
                                      ArrayAttr forwardSends, CodecAttrInterface forwardCodec, bool,
                                      ArrayAttr dpAllReduce, int64_t scRank, bool, DictionaryAttr dpCodecs, bool,
                                      int64_t skipStages, ArrayAttr tpAllReduces, int64_t tpSkipLayers) {
  // (C1)
  if (policy != "optimus-cc" && policy != "mcbench" && policy != "none" && policy != "auto")
    return emitError() << "compression policy must be optimus-cc, mcbench, none or auto, got '" << policy << "'";
  // (C2), (C3)
  auto checkSends = [&](StringRef name, ArrayAttr sends, CodecAttrInterface codec) -> LogicalResult {
    auto firstRow = sends.empty() ? ArrayAttr() : dyn_cast<ArrayAttr>(sends[0]);
    if (!firstRow || llvm::any_of(sends, [&](Attribute rowAttr) {
          auto row = dyn_cast<ArrayAttr>(rowAttr);
          return !row || row.size() != firstRow.size() ||
                 !llvm::all_of(row, [](Attribute e) { return isa<BoolAttr, CodecAttrInterface>(e); });
        }))
      return emitError() << "compression " << name
                         << " must be a non-empty list of rows of one length, of true, false or codecs";
    const bool backward = name == "backward_sends";
    if (!backward &&
        (sends.size() != backwardSends.size() || firstRow.size() != cast<ArrayAttr>(backwardSends[0]).size()))
      return emitError() << "compression forward_sends must have the shape of backward_sends";
    if (!codec)
      for (Attribute row : sends)
        if (llvm::any_of(cast<ArrayAttr>(row), [](Attribute e) {
              auto flag = dyn_cast<BoolAttr>(e);
              return flag && flag.getValue();
            }))
          return emitError() << "compression " << name << " marks a send true but there is no "
                             << (backward ? "backward_codec" : "forward_codec");
    return success();
  };
  if (!backwardSends || failed(checkSends("backward_sends", backwardSends, backwardCodec)) ||
      (forwardSends && failed(checkSends("forward_sends", forwardSends, forwardCodec))))
    return failure();
  // (C4)
  if (!dpAllReduce || dpAllReduce.size() != backwardSends.size() ||
      !llvm::all_of(dpAllReduce, [](Attribute a) { return isa<BoolAttr>(a); }))
    return emitError() << "compression dp_all_reduce must have one bool per row of backward_sends ("
                       << backwardSends.size() << ")";
  // (C5)
  if (scRank < 1 || skipStages < 0 || tpSkipLayers < 0)
    return emitError() << "compression sc_rank must be >= 1 and skip_stages, tp_skip_layers >= 0, got " << scRank
                       << ", " << skipStages << ", " << tpSkipLayers;
  // (C6)
  if (dpCodecs)
    for (NamedAttribute entry : dpCodecs) {
      auto off = dyn_cast<BoolAttr>(entry.getValue());
      if (!isa<CodecAttrInterface>(entry.getValue()) && !(off && !off.getValue()))
        return emitError() << "compression dp_codecs entry '" << entry.getName().getValue()
                           << "' must be a codec or false";
    }
  // (C7)
  if (tpAllReduces && !llvm::all_of(tpAllReduces, [](Attribute a) { return isa<TPSiteAttr>(a); }))
    return emitError() << "compression tp_all_reduces must be a list of #ptrain.tp_site";
  return success();
}

LogicalResult TPSiteAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t layer, StringRef role,
                                 StringRef direction, CodecAttrInterface codec, bool errorFeedback) {
  // (C1)
  if (layer < 0)
    return emitError() << "tp_site layer must be >= 0, got " << layer;
  // (C2)
  if (direction != "forward" && direction != "backward")
    return emitError() << "tp_site direction must be forward or backward, got '" << direction << "'";
  // (C3)
  const bool forward = direction == "forward";
  if (forward ? (role != "attn_out" && role != "mlp_down") : (role != "attn_in" && role != "mlp_in"))
    return emitError() << "tp_site role '" << role << "' is not a " << direction
                       << " site (forward: attn_out, mlp_down; backward: attn_in, mlp_in)";
  // (C4)
  if (forward && errorFeedback)
    return emitError() << "tp_site: the forward site " << role
                       << " cannot have error feedback (the backward recomputes the forward, which must decode "
                          "the same value: forward sites are stateless)";
  return success();
}

LogicalResult ZeroBucketAttr::verify(function_ref<InFlightDiagnostic()> emitError, ArrayAttr params, int64_t elements,
                                     int64_t padded, StringRef axis) {
  // (C1)
  if (axis.empty())
    return emitError() << "zero_bucket needs a grid axis";
  // (C2)
  if (elements < 1 || padded < elements)
    return emitError() << "zero_bucket elements must be >= 1 and padded >= elements, got " << elements << " and "
                       << padded;
  // (C3)
  if (!params || params.empty() || !llvm::all_of(params, [](Attribute a) { return isa<StringAttr>(a); }))
    return emitError() << "zero_bucket params must be a non-empty list of parameter keys (strings)";
  return success();
}

LogicalResult TPSliceAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef axis, int64_t dim,
                                  int64_t groups, ArrayRef<int64_t> shape, int64_t padded) {
  // (C1)
  if (axis.empty())
    return emitError() << "tp_slice needs a grid axis";
  // (C2)
  if (shape.empty() || llvm::any_of(shape, [](int64_t d) { return d < 1; }))
    return emitError() << "tp_slice shape must be a non-empty list of sizes >= 1";
  // (C3)
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return emitError() << "tp_slice dim " << dim << " is not a dimension of the rank-" << shape.size()
                       << " shape";
  // (C4)
  if (groups < 1 || shape[dim] % groups != 0)
    return emitError() << "tp_slice groups " << groups << " must be >= 1 and divide shape[" << dim
                       << "] = " << shape[dim];
  // (C5)
  if (padded != 0 && (padded < shape[dim] || groups != 1))
    return emitError() << "tp_slice padded " << padded << " must be >= shape[" << dim << "] = " << shape[dim]
                       << ", with groups 1";
  return success();
}

/// The module `op` is, or null after reporting that `name` belongs on one.
static ModuleOp moduleOrError(Operation *op, StringRef name) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    op->emitError() << "'" << name << "' belongs on a builtin.module";
  return module;
}

/// The pipeline of the module `op` is, or null after reporting that `name` belongs on a module (C7 / C9) that
/// has one.
static PipelineAttr modulePipelineOrError(Operation *op, StringRef name) {
  ModuleOp module = moduleOrError(op, name);
  if (!module)
    return {};
  PipelineAttr pipeline = getPipeline(module);
  if (!pipeline)
    op->emitError() << "'" << name << "' needs a #ptrain.pipeline on the module";
  return pipeline;
}

/// Pipeline (C6-C8).
static LogicalResult verifyPipelineAttr(Operation *op, Attribute value) {
  // (C6)
  auto pipeline = dyn_cast<PipelineAttr>(value);
  if (!pipeline)
    return op->emitError() << "'" << kPipelineAttr << "' must be a #ptrain.pipeline, got " << value;
  // (C7)
  ModuleOp module = moduleOrError(op, kPipelineAttr);
  if (!module)
    return failure();
  // (C8)
  for (FlatSymbolRefAttr stage : pipeline.getStages())
    if (!isa_and_nonnull<func::FuncOp>(SymbolTable::lookupSymbolIn(module, stage.getAttr())))
      return op->emitError() << "'" << kPipelineAttr << "' stage " << stage << " is not a func.func of the module";
  return success();
}

/// Stage (C2-C4).
static LogicalResult verifyStageAttr(Operation *op, Attribute value) {
  // (C2)
  auto stage = dyn_cast<StageAttr>(value);
  if (!stage)
    return op->emitError() << "'" << kStageAttr << "' must be a #ptrain.stage, got " << value;
  // (C3)
  if (!isa<func::FuncOp>(op))
    return op->emitError() << "'" << kStageAttr << "' belongs on a func.func";
  // (C4)
  auto module = op->getParentOfType<ModuleOp>();
  if (PipelineAttr pipeline = module ? getPipeline(module) : PipelineAttr())
    if (stage.getIndex() >= pipeline.getPp())
      return op->emitError() << "'" << kStageAttr << "' index " << stage.getIndex()
                             << " is not a rank of the module's pipeline (pp = " << pipeline.getPp() << ")";
  return success();
}

/// Schedule (C6-C8).
static LogicalResult verifyScheduleAttr(Operation *op, Attribute value) {
  // (C6)
  auto schedule = dyn_cast<ScheduleAttr>(value);
  if (!schedule)
    return op->emitError() << "'" << kScheduleAttr << "' must be a #ptrain.schedule, got " << value;
  // (C7)
  PipelineAttr pipeline = modulePipelineOrError(op, kScheduleAttr);
  if (!pipeline)
    return failure();
  // (C8)
  if (static_cast<int64_t>(schedule.getTable().size()) != pipeline.getPp() ||
      schedule.getVirtualStages() != pipeline.getVirtualStages() ||
      (pipeline.getMicroBatches() && *pipeline.getMicroBatches() != schedule.getMicroBatches()))
    return op->emitError() << "'" << kScheduleAttr << "' (" << schedule.getTable().size() << " rows, virtual_stages "
                           << schedule.getVirtualStages() << ", micro_batches " << schedule.getMicroBatches()
                           << ") does not fit the pipeline (pp " << pipeline.getPp() << ", virtual_stages "
                           << pipeline.getVirtualStages() << ", micro_batches "
                           << pipeline.getMicroBatches().value_or(0) << ")";
  return success();
}

/// Compression (C8-C11).
static LogicalResult verifyCompressionAttr(Operation *op, Attribute value) {
  // (C8)
  auto compression = dyn_cast<CompressionAttr>(value);
  if (!compression)
    return op->emitError() << "'" << kCompressionAttr << "' must be a #ptrain.compression, got " << value;
  // (C9)
  PipelineAttr pipeline = modulePipelineOrError(op, kCompressionAttr);
  if (!pipeline)
    return failure();
  // (C10)
  const int64_t pp = pipeline.getPp(), v = pipeline.getVirtualStages();
  ArrayAttr backward = compression.getBackwardSends(), forward = compression.getForwardSends();
  const int64_t entries = cast<ArrayAttr>(backward[0]).size(); // C2
  std::optional<int64_t> m = pipeline.getMicroBatches();
  if (static_cast<int64_t>(backward.size()) != pp || (m ? entries != v * *m : entries % v != 0))
    return op->emitError() << "'" << kCompressionAttr << "' has " << backward.size() << " rows of " << entries
                           << " sends, the pipeline needs " << pp << " rows of "
                           << (m ? std::to_string(v * *m) : "a multiple of " + std::to_string(v))
                           << " (virtual_stages x micro_batches)";
  // (C11) Virtual stage 0 is chunk 0 of rank 0 (entries [0, M) of row 0); the last is chunk V - 1 of rank
  // pp - 1 (entries [(V - 1) M, V M) of row pp - 1).
  const int64_t perChunk = entries / v;
  auto compressed = [](Attribute e) {
    auto flag = dyn_cast<BoolAttr>(e);
    return !flag || flag.getValue();
  };
  auto first = cast<ArrayAttr>(backward[0]).getValue().take_front(perChunk);
  if (llvm::any_of(first, compressed))
    return op->emitError() << "'" << kCompressionAttr << "' compresses a gradient out of "
                           << (v > 1 ? "virtual stage 0" : "stage 0") << ", which sends none backward";
  if (forward) {
    auto last = cast<ArrayAttr>(forward[pp - 1]).getValue().take_back(perChunk);
    if (llvm::any_of(last, compressed))
      return op->emitError() << "'" << kCompressionAttr << "' compresses an activation out of the last "
                             << (v > 1 ? "virtual stage" : "stage") << ", which sends none forward";
  }
  return success();
}

LogicalResult DropoutLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError, std::optional<int64_t> batchRows,
                                        StringRef replicaAxis, std::optional<int64_t> replicaRows, StringRef shardAxis,
                                        std::optional<int64_t> shardDim) {
  // (C1)
  for (auto [name, value] : {std::pair<StringRef, std::optional<int64_t>>{"batch_rows", batchRows},
                             {"replica_rows", replicaRows},
                             {"shard_dim", shardDim}})
    if (value && *value < 1)
      return emitError() << "dropout_layout " << name << " must be >= 1, got " << *value;
  // (C2)
  if (shardAxis.empty() != !shardDim)
    return emitError() << "dropout_layout: shard_axis and shard_dim come together";
  // (C3)
  if (replicaAxis.empty() != !replicaRows)
    return emitError() << "dropout_layout: replica_axis and replica_rows come together";
  if (replicaRows && !batchRows)
    return emitError() << "dropout_layout: replica_rows needs batch_rows (the row packed into the counter)";
  return success();
}

/// ZeRO bucket (C4-C6).
static LogicalResult verifyZeroBucketAttr(Operation *op, Attribute value) {
  // (C4)
  auto bucket = dyn_cast<ZeroBucketAttr>(value);
  if (!bucket)
    return op->emitError() << "'" << kZeroBucketAttr << "' must be a #ptrain.zero_bucket, got " << value;
  // (C5)
  auto state = dyn_cast<StateOp>(op);
  if (!state || state.getKind() != StateKind::OptimizerMoment)
    return op->emitError() << "'" << kZeroBucketAttr << "' belongs on a ptrain.state of kind optimizer_moment";
  // (C6)
  RankedTensorType type = state.getTensorType();
  if (type.getRank() != 1 || type.getDimSize(0) < 1 || bucket.getPadded() % type.getDimSize(0) != 0)
    return op->emitError() << "'" << kZeroBucketAttr << "' the state's type " << type
                           << " must be rank 1 with a size that divides padded (" << bucket.getPadded() << ")";
  return success();
}

/// Precision (C1-C2; PTrainBase.td).
static LogicalResult verifyPrecisionAttr(Operation *op, Attribute value) {
  // (C1)
  if (!isa<PrecisionAttr>(value))
    return op->emitError() << "'" << kPrecisionAttr << "' must be a #ptrain.precision, got " << value;
  // (C2)
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << kPrecisionAttr << "' belongs on a builtin.module";
  return success();
}

LogicalResult PTrainDialect::verifyOperationAttribute(Operation *op, NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == kPrecisionAttr)
    return verifyPrecisionAttr(op, attribute.getValue());
  if (name == kPipelineAttr)
    return verifyPipelineAttr(op, attribute.getValue());
  if (name == kStageAttr)
    return verifyStageAttr(op, attribute.getValue());
  if (name == kScheduleAttr)
    return verifyScheduleAttr(op, attribute.getValue());
  if (name == kCompressionAttr)
    return verifyCompressionAttr(op, attribute.getValue());
  if (name == kZeroBucketAttr)
    return verifyZeroBucketAttr(op, attribute.getValue());
  if (name != kTPSliceAttr)
    return success(); // the passes' own
  // (C6)
  auto slice = dyn_cast<TPSliceAttr>(attribute.getValue());
  if (!slice)
    return op->emitError() << "'" << kTPSliceAttr << "' must be a #ptrain.tp_slice, got " << attribute.getValue();
  // (C7)
  auto state = dyn_cast<StateOp>(op);
  if (!state)
    return op->emitError() << "'" << kTPSliceAttr << "' belongs on a ptrain.state";
  // (C8)
  RankedTensorType local = state.getTensorType();
  ArrayRef<int64_t> global = slice.getShape();
  const int64_t dim = slice.getDim();
  if (local.getRank() != static_cast<int64_t>(global.size()))
    return op->emitError() << "'" << kTPSliceAttr << "' shape has rank " << global.size() << ", the state "
                           << local.getRank();
  for (int64_t d = 0; d < local.getRank(); ++d)
    if (d != dim && local.getDimSize(d) != global[d])
      return op->emitError() << "'" << kTPSliceAttr << "' dimension " << d << " of the state (" << local.getDimSize(d)
                             << ") differs from the sliced tensor's (" << global[d] << ")";
  // (C9)
  const int64_t part = local.getDimSize(dim);
  if (part % slice.getGroups() != 0 || slice.getPaddedSize() % part != 0)
    return op->emitError() << "'" << kTPSliceAttr << "' the state's size " << part << " in dimension " << dim
                           << " must be a multiple of groups (" << slice.getGroups() << ") and divide "
                           << slice.getPaddedSize();
  return success();
}
