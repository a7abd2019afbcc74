//===- SharedOps.cpp - The op emitters both targets share ----------------===//
//
// See KernelTarget.h. These cases were written twice, once in each target's
// op switch, differing only in the kernels' names (issue 23: one generator).
//
//===----------------------------------------------------------------------===//

#include "Common/KernelTarget.h"

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"
#include "Common/OpGeometry.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <tuple>
#include <type_traits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

bool mlir::ptrain::target::isSharedOp(Operation *op) {
  return isa<BinaryOp, UnaryOp, SoftmaxOp, SoftmaxGradOp, GeluOp, GeluGradOp, LayerNormOp, LayerNormGradOp, EmbeddingOp,
             EmbeddingGradOp, TransposeOp, SliceOp, SplitOp, ConcatOp, PadOp, SumToOp, TPSplitOp, LossScaleOp,
             GradUnscaleOp, GradScalerUpdateOp>(op);
}

LogicalResult mlir::ptrain::target::emitSharedOp(Operation *op, KernelTarget &t) {
  auto ptr = [&](Value v) { return t.valuePtr(v); };
  auto n = [](Value v) { return std::to_string(countOf(v)); };
  auto bytes = [](Value v) { return std::to_string(bytesOf(v)); };
  auto rank = [](Value v) { return std::to_string(shapeOf(v).size()); };
  auto elemBytes = [](Value v) { return std::to_string(elementBytes(tensorOf(v).getElementType())); };
  auto isF32 = [](Value v) { return tensorOf(v).getElementType().isF32(); };
  /// `ids` (i64) cast to int32 into scratch of the op, as the embedding kernels take them.
  auto ids32 = [&](Value ids) -> FailureOr<std::string> {
    std::string out = t.scratchPtr(4 * countOf(ids), "int32_t");
    if (failed(t.callKernel(Kernel::cast_i64_i32, {ptr(ids), n(ids), out})))
      return failure();
    return out;
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<EmbeddingOp>([&](EmbeddingOp e) -> LogicalResult {
        if (isF32(e.getIds()))
          return e.emitError(t.flag()) << ": embedding ids must be i64";
        ArrayRef<int64_t> table = shapeOf(e.getTable());
        FailureOr<std::string> ids = ids32(e.getIds());
        if (failed(ids))
          return failure();
        return t.callKernel(Kernel::embedding_fwd_f32, {ptr(e.getTable()), *ids, n(e.getIds()),
                                                        std::to_string(table[0]), std::to_string(table[1]),
                                                        ptr(e.getResult())});
      })
      .Case<EmbeddingGradOp>([&](EmbeddingGradOp e) -> LogicalResult {
        ArrayRef<int64_t> table = shapeOf(e.getResult());
        FailureOr<std::string> ids = ids32(e.getIds());
        if (failed(ids) || failed(t.callKernel(Kernel::zero_bytes, {ptr(e.getResult()), bytes(e.getResult())})))
          return failure();
        return t.callKernel(Kernel::embedding_bwd_f32, {ptr(e.getGrad()), *ids, n(e.getIds()),
                                                        std::to_string(table[0]), std::to_string(table[1]),
                                                        ptr(e.getResult())});
      })
      .Case<BinaryOp>([&](BinaryOp b) -> LogicalResult {
        Value lhs = b.getLhs(), rhs = b.getRhs(), out = b.getResult();
        if (!isF32(out)) {
          if (b.getKind() != BinaryKind::Add || shapeOf(lhs) != shapeOf(rhs))
            return b.emitError(t.flag()) << ": i64 'ptrain.binary' supports only add of equal shapes";
          return t.callKernel(Kernel::add_i64, {ptr(lhs), ptr(rhs), n(out), ptr(out)});
        }
        std::string ad = t.hostArray(shapeOf(lhs), "a_dims"), bd = t.hostArray(shapeOf(rhs), "b_dims"),
                    od = t.hostArray(shapeOf(out), "out_dims");
        return t.callKernel(Kernel::binary_f32, {binaryKindEnum(b.getKind()), ptr(lhs), rank(lhs), ad, ptr(rhs),
                                                 rank(rhs), bd, rank(out), od, ptr(out)});
      })
      .Case<UnaryOp>([&](UnaryOp u) {
        return t.callKernel(Kernel::unary_f32,
                            {unaryKindEnum(u.getKind()), ptr(u.getInput()), n(u.getInput()), ptr(u.getResult())});
      })
      .Case<LayerNormOp>([&](LayerNormOp ln) -> LogicalResult {
        ArrayRef<int64_t> x = shapeOf(ln.getInput());
        int64_t axis = ln.getNormalizedAxis();
        int64_t rows = numElements(x.take_front(axis)), cols = numElements(x.drop_front(axis));
        std::string beta;
        if (ln.getBias()) {
          beta = ptr(ln.getBias());
        } else {
          beta = t.scratchPtr(4 * cols, "float");
          if (failed(t.callKernel(Kernel::zero_bytes, {beta, std::to_string(4 * cols)})))
            return failure();
        }
        std::string mean = t.scratchPtr(4 * rows, "float"), rstd = t.scratchPtr(4 * rows, "float");
        return t.callKernel(Kernel::layer_norm_fwd_f32,
                            {ptr(ln.getInput()), ptr(ln.getScale()), beta, std::to_string(rows), std::to_string(cols),
                             floatLiteral(ln.getEpsilonAttr().getValueAsDouble()), ptr(ln.getResult()), mean, rstd});
      })
      .Case<LayerNormGradOp>([&](LayerNormGradOp g) -> LogicalResult {
        auto [rows, cols] = rowsCols(shapeOf(g.getInput()), g.getAxisAttr().getInt());
        // The mean and rstd the forward saved (BufferLiveness::savedStatsOf: the same kernel on the same input,
        // the same bits), else recomputed by a forward into scratch (the op recomputes them by definition).
        std::string mean, rstd;
        if (auto stats = t.savedLayerNormStats(g)) {
          t.note("the mean and rstd its forward saved (BufferLiveness::savedStatsOf)");
          std::tie(mean, rstd) = *stats;
        } else {
          std::string zeros = t.scratchPtr(4 * cols, "float");
          std::string y = t.scratchPtr(4 * rows * cols, "float");
          mean = t.scratchPtr(4 * rows, "float"), rstd = t.scratchPtr(4 * rows, "float");
          if (failed(t.callKernel(Kernel::zero_bytes, {zeros, std::to_string(4 * cols)})) ||
              failed(t.callKernel(Kernel::layer_norm_fwd_f32,
                                  {ptr(g.getInput()), ptr(g.getScale()), zeros, std::to_string(rows),
                                   std::to_string(cols), floatLiteral(g.getEpsilonAttr().getValueAsDouble()), y,
                                   mean, rstd})))
            return failure();
        }
        std::string dbeta = g.getBiasGrad() ? ptr(g.getBiasGrad()) : t.scratchPtr(4 * cols, "float");
        return t.callKernel(Kernel::layer_norm_bwd_f32,
                            {ptr(g.getGrad()), ptr(g.getInput()), ptr(g.getScale()), mean, rstd, std::to_string(rows),
                             std::to_string(cols), ptr(g.getInputGrad()), ptr(g.getScaleGrad()), dbeta});
      })
      .Case<SoftmaxOp, SoftmaxGradOp>([&](auto s) -> LogicalResult {
        Value x = s->getOperand(0);
        int64_t r = shapeOf(x).size(), axis = s.getAxisAttr().getInt();
        if (axis != -1 && axis != r - 1)
          return s.emitError(t.flag()) << ": softmax is supported over the last axis only, got axis " << axis;
        int64_t cols = shapeOf(x).back(), rows = countOf(x) / std::max<int64_t>(cols, 1);
        if constexpr (std::is_same_v<decltype(s), SoftmaxOp>)
          return t.callKernel(Kernel::softmax_fwd_f32,
                              {ptr(x), std::to_string(rows), std::to_string(cols), "0", ptr(s.getResult())});
        else
          return t.callKernel(Kernel::softmax_bwd_f32, {ptr(s.getGrad()), ptr(s.getOutput()), std::to_string(rows),
                                                        std::to_string(cols), ptr(s.getResult())});
      })
      .Case<GeluOp>([&](GeluOp g) {
        bool tanh = g.getApproximate() == GeluApproximation::Tanh;
        return t.callKernel(tanh ? Kernel::gelu_tanh_fwd_f32 : Kernel::gelu_fwd_f32,
                            {ptr(g.getInput()), n(g.getInput()), ptr(g.getResult())});
      })
      .Case<GeluGradOp>([&](GeluGradOp g) {
        bool tanh = g.getApproximate() == GeluApproximation::Tanh;
        return t.callKernel(tanh ? Kernel::gelu_tanh_bwd_f32 : Kernel::gelu_bwd_f32,
                            {ptr(g.getGrad()), ptr(g.getInput()), n(g.getInput()), ptr(g.getResult())});
      })
      .Case<TransposeOp>([&](TransposeOp tr) -> LogicalResult {
        ArrayRef<int64_t> x = shapeOf(tr.getInput());
        if (x.size() <= 1)
          return t.callKernel(Kernel::copy_bytes, {ptr(tr.getInput()), bytes(tr.getInput()), ptr(tr.getResult())});
        if (!isF32(tr.getInput()))
          return tr.emitError(t.flag()) << ": transpose supports f32 tensors of rank >= 2";
        std::string d = t.hostArray(x, "dims"), p = t.hostArray(tr.getPerm(), "perm", "int32_t");
        return t.callKernel(Kernel::permute_f32,
                            {ptr(tr.getInput()), std::to_string(x.size()), d, p, ptr(tr.getResult())});
      })
      .Case<SliceOp>([&](SliceOp s) {
        Value x = s.getInput();
        std::string d = t.hostArray(shapeOf(x), "dims"), o = t.hostArray(s.getOffsets(), "offsets"),
                    od = t.hostArray(shapeOf(s.getResult()), "out_dims");
        return t.callKernel(Kernel::slice, {ptr(x), elemBytes(x), rank(x), d, o, od, ptr(s.getResult())});
      })
      .Case<TPSplitOp>([&](TPSplitOp s) -> LogicalResult {
        // The rank's block: a slice at the rank's offsets (known at run time, from its grid coordinate).
        Value x = s.getInput();
        FailureOr<std::string> o = t.rankOffsetsArray(s, "offsets");
        if (failed(o))
          return failure();
        std::string d = t.hostArray(shapeOf(x), "dims"), od = t.hostArray(shapeOf(s.getResult()), "out_dims");
        return t.callKernel(Kernel::slice, {ptr(x), elemBytes(x), rank(x), d, *o, od, ptr(s.getResult())});
      })
      .Case<SplitOp>([&](SplitOp s) -> LogicalResult {
        Value x = s.getInput();
        int64_t r = shapeOf(x).size();
        std::string d = t.hostArray(shapeOf(x), "dims");
        SmallVector<SmallVector<int64_t>> offsets = pieceOffsets(r, s.getAxisAttr().getInt(), s.getResults());
        for (auto [i, piece] : llvm::enumerate(s.getResults())) {
          std::string o = t.hostArray(offsets[i], "offsets_" + std::to_string(i)),
                      od = t.hostArray(shapeOf(piece), "out_dims_" + std::to_string(i));
          if (failed(t.callKernel(Kernel::slice, {ptr(x), elemBytes(x), std::to_string(r), d, o, od, ptr(piece)})))
            return failure();
        }
        return success();
      })
      .Case<ConcatOp>([&](ConcatOp c) -> LogicalResult {
        Value out = c.getResult();
        int64_t r = shapeOf(out).size();
        std::string od = t.hostArray(shapeOf(out), "out_dims");
        SmallVector<SmallVector<int64_t>> offsets = pieceOffsets(r, c.getAxisAttr().getInt(), c.getInputs());
        for (auto [i, in] : llvm::enumerate(c.getInputs())) {
          std::string o = t.hostArray(offsets[i], "offsets_" + std::to_string(i)),
                      xd = t.hostArray(shapeOf(in), "x_dims_" + std::to_string(i));
          if (failed(
                  t.callKernel(Kernel::insert_slice, {ptr(in), elemBytes(in), std::to_string(r), xd, o, od, ptr(out)})))
            return failure();
        }
        return success();
      })
      .Case<PadOp>([&](PadOp p) -> LogicalResult {
        Value x = p.getInput(), out = p.getResult();
        std::string xd = t.hostArray(shapeOf(x), "x_dims"), o = t.hostArray(p.getLow(), "offsets"),
                    od = t.hostArray(shapeOf(out), "out_dims");
        if (failed(t.callKernel(Kernel::zero_bytes, {ptr(out), bytes(out)})))
          return failure();
        return t.callKernel(Kernel::insert_slice, {ptr(x), elemBytes(x), rank(x), xd, o, od, ptr(out)});
      })
      // fp16's loss scaler (PTrainStepOps.td): the state, scale and flag stay in the target's memory.
      .Case<LossScaleOp>([&](LossScaleOp l) {
        return t.callKernel(Kernel::loss_scale_f32, {ptr(l.getScaler()),
                                                     floatLiteral(l.getInitialScale().convertToDouble()),
                                                     ptr(l.getScale())});
      })
      .Case<GradUnscaleOp>([&](GradUnscaleOp u) {
        return t.callKernel(Kernel::grad_unscale_f32,
                            {ptr(u.getGrad()), n(u.getGrad()), ptr(u.getScale()), ptr(u.getResult()),
                             ptr(u.getFoundInf())});
      })
      .Case<GradScalerUpdateOp>([&](GradScalerUpdateOp u) {
        return t.callKernel(Kernel::grad_scaler_update_f32,
                            {ptr(u.getScaler()), ptr(u.getFoundInf()),
                             floatLiteral(u.getInitialScale().convertToDouble()),
                             floatLiteral(u.getGrowthFactor().convertToDouble()),
                             floatLiteral(u.getBackoffFactor().convertToDouble()), std::to_string(u.getGrowthInterval()),
                             std::to_string(u.getHysteresis()), floatLiteral(u.getMinScale().convertToDouble()),
                             ptr(u.getNewScaler())});
      })
      .Case<SumToOp>([&](SumToOp s) {
        Value x = s.getInput(), out = s.getResult();
        std::string xd = t.hostArray(shapeOf(x), "dims"), od = t.hostArray(shapeOf(out), "out_dims");
        return t.callKernel(Kernel::sum_to_f32, {ptr(x), rank(x), xd, rank(out), od, ptr(out)});
      })
      .Default([&](Operation *other) {
        return other->emitError(t.flag()) << " internal error: '" << other->getName() << "' is not a shared op";
      });
}
