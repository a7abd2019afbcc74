//===- GemmOps.cpp - The GEMMs both targets emit, with their fusion ------===//
//
// See GemmOps.h. These cases were written twice, in each target's op switch,
// differing only in the GEMM call's name.
//
//===----------------------------------------------------------------------===//

#include "Common/GemmOps.h"

#include "Common/CppTypes.h"
#include "Common/OpGeometry.h"

#include "ptrain/Analysis/GemmFusion.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

namespace {
/// {leading dimension, outer batch stride, inner batch stride} (elements) of a GEMM operand or product over a
/// [B, H] batch: `v` stored as [B, H, rows, cols], or with `heads` as [B, rows, H, cols] (its {0, 2, 1, 3}
/// permute read or written in place).
SmallVector<int64_t, 3> headsLayout(Value v, bool heads) {
  ArrayRef<int64_t> s = shapeOf(v);
  if (heads) // [B, rows, H, cols]
    return {s[2] * s[3], s[1] * s[2] * s[3], s[3]};
  return {s[3], s[1] * s[2] * s[3], s[2] * s[3]};
}

/// ptrain_gemm_strided_f32 for `m` (GemmFusion::isStrided): C = op(A) op(B) + (beta = 1 ? C : 0) over the
/// product's [B, H] batch, each operand read and the product written in the layout the analysis chose.
LogicalResult emitStridedGemm(MatmulOp m, const GemmFusion &gemms, bool addToC, KernelTarget &t) {
  FailureOr<GemmGeometry> g = gemmGeometry(m, t.flag());
  if (failed(g))
    return failure();
  GemmOperand a = gemms.operand(m, 0), b = gemms.operand(m, 1);
  ArrayRef<int64_t> product = shapeOf(m.getResult());
  const bool headsOut = gemms.writesHeads(m);
  // The product written in place as its {0, 2, 1, 3} transpose: [B, rows, H, cols].
  SmallVector<int64_t, 3> c = headsOut ? SmallVector<int64_t, 3>{product[1] * product[3],
                                                                 product[1] * product[2] * product[3], product[3]}
                                       : headsLayout(m.getResult(), false);
  t.note(std::string("the heads read") + (headsOut ? " and written" : "") +
         " in place: leading dimensions and a [B, H] batch (GemmFusion.h, head permutes)");
  auto str = [](int64_t v) { return std::to_string(v); };
  if (failed(t.callStridedGemm(
          {a.transposed ? "1" : "0", b.transposed ? "1" : "0", str(product[0]), str(product[1]), str(g->rows),
           str(g->cols), str(g->k), "1.0f", t.valuePtr(a.source), t.hostArray(headsLayout(a.source, a.heads), "a_layout"),
           t.valuePtr(b.source), t.hostArray(headsLayout(b.source, b.heads), "b_layout"), addToC ? "1.0f" : "0.0f",
           t.valuePtr(m.getResult()), t.hostArray(c, "c_layout")})))
    return m.emitError(t.flag()) << " internal error: a strided GEMM on a target without ptrain_gemm_strided_f32";
  return success();
}
} // namespace

bool mlir::ptrain::target::isGemmOp(Operation *op, const GemmFusion &gemms) {
  if (isa<MatmulOp>(op))
    return true;
  if (auto sum = dyn_cast<SumToOp>(op))
    return static_cast<bool>(gemms.summedMatmul(sum));
  if (isa<TransposeOp>(op))
    return gemms.isFolded(op) || gemms.aliasOf(op);
  if (isa<StateReadOp, StateWriteOp>(op))
    return gemms.isFolded(op); // of a gradient a GEMM accumulated into its state
  return isa<BinaryOp>(op) && gemms.aliasOf(op);
}

LogicalResult mlir::ptrain::target::emitGemmOp(Operation *op, const GemmFusion &gemms, KernelTarget &t) {
  auto ptr = [&](Value v) { return t.valuePtr(v); };
  auto str = [](int64_t v) { return std::to_string(v); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<MatmulOp>([&](MatmulOp m) -> LogicalResult {
        FailureOr<GemmGeometry> g = gemmGeometry(m, t.flag());
        if (failed(g))
          return failure();
        if (gemms.isFolded(m))
          return success(); // computed by the sum_to of its result
        GemmOperand a = gemms.operand(m, 0), b = gemms.operand(m, 1);
        Value bias = gemms.biasOf(m);
        // Accumulated into its gradient state: C is the state, beta = 1 (GemmFusion.h).
        const bool accumulate = static_cast<bool>(gemms.accumulatedState(m));
        if (accumulate)
          t.note("accumulated into its gradient state: C = the state, beta = 1 (GemmFusion.h)");
        if (bias) { // C = the bias rows, then C = A B + C (the add of its only user, GemmFusion.h)
          ArrayRef<int64_t> in = shapeOf(bias), out = shapeOf(m.getResult());
          if (failed(t.callKernel(Kernel::broadcast_to,
                                  {ptr(bias), "4", str(in.size()), t.hostArray(in, "bias_dims"), str(out.size()),
                                   t.hostArray(out, "out_dims"), ptr(m.getResult())})))
            return failure();
        }
        if (gemms.isStrided(m)) // the attention's heads read or written in place (GemmFusion.h, head permutes)
          return emitStridedGemm(m, gemms, bias || accumulate, t);
        // bf16 or f16 operands, fp32 accumulation and result (docs/MixedPrecision.md): the same arguments.
        Kernel gemm = Kernel::gemm_f32;
        if (m.getAccumulate())
          gemm = m.getLhs().getType().getElementType().isBF16() ? Kernel::gemm_bf16 : Kernel::gemm_f16;
        return t.callKernel(gemm, {a.transposed ? "1" : "0", b.transposed ? "1" : "0", str(g->batch), str(g->rows),
                                   str(g->cols), str(g->k), "1.0f", ptr(a.source), str(g->strideA), ptr(b.source),
                                   str(g->strideB), bias || accumulate ? "1.0f" : "0.0f", ptr(m.getResult()),
                                   str(g->rows * g->cols)});
      })
      .Case<SumToOp>([&](SumToOp s) -> LogicalResult {
        // sum_b A_b B_b as one GEMM over the batch-long contraction (A stored transposed, GemmFusion.h).
        MatmulOp m = gemms.summedMatmul(s);
        FailureOr<GemmGeometry> g = gemmGeometry(m, t.flag());
        if (failed(g))
          return failure();
        Value a = gemms.operand(m, 0).source, b = gemms.operand(m, 1).source;
        const bool transposed = gemms.writesTransposed(s); // its only user transposes it: (A^T B)^T = B^T A
        // A weight gradient accumulated into its state: C is the state, beta = 1 (GemmFusion.h).
        const bool accumulate = static_cast<bool>(gemms.accumulatedState(s));
        if (accumulate)
          t.note("accumulated into its gradient state: C = the state, beta = 1 (GemmFusion.h)");
        // Written transposed: on the CPU through scratch in the unfolded GEMM's operand roles, whose bits the
        // swapped-operand GEMM does not give on OpenBLAS's Haswell kernels (ptrain_gemm_transposed_f32, GemmTest).
        if (transposed && t.hasTransposedGemm()) {
          t.note("the transpose of the product: the GEMM in its own operand roles, transposed through scratch "
                 "(GemmFusion.h)");
          return t.callTransposedGemm({"1", "0", str(g->rows), str(g->cols), str(g->batch * g->k), "1.0f", ptr(a),
                                       ptr(b), accumulate ? "1.0f" : "0.0f", ptr(s.getResult())});
        }
        return t.callKernel(Kernel::gemm_f32,
                            {"1", "0", "1", str(transposed ? g->cols : g->rows), str(transposed ? g->rows : g->cols),
                             str(g->batch * g->k), "1.0f", ptr(transposed ? b : a), "0", ptr(transposed ? a : b), "0",
                             accumulate ? "1.0f" : "0.0f", ptr(s.getResult()), "0"});
      })
      .Case<TransposeOp>([&](TransposeOp tr) {
        // Folded: every user reads the input with the BLAS transpose flag. An alias: the GEMM of its input wrote
        // the transposed matrix (GemmFusion.h). No code either way (a target may declare it where it is read).
        if (gemms.isFolded(tr))
          return success();
        auto m = tr.getInput().getDefiningOp<MatmulOp>();
        t.note(m && gemms.writesHeads(m)
                   ? "an alias: the GEMM of its input wrote the heads merged in place (GemmFusion.h)"
                   : "an alias: the GEMM of its input wrote the transposed matrix (GemmFusion.h)");
        return success();
      })
      .Case<BinaryOp>([&](BinaryOp add) {
        Operation *user = add->hasOneUse() ? *add->user_begin() : nullptr;
        t.note(user && isa<StateWriteOp>(user) && gemms.isFolded(user)
                   ? "an alias: the GEMM of its gradient accumulated into the state (GemmFusion.h)"
                   : "an alias: the GEMM of its product started from the bias rows (GemmFusion.h)");
        return success();
      })
      .Case<StateReadOp>([&](StateReadOp) { return success(); }) // the old value, in the state the GEMM reads
      .Case<StateWriteOp>([&](StateWriteOp) {
        t.note("in place: the GEMM of its value accumulated into the state (GemmFusion.h)");
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitError(t.flag()) << " internal error: '" << other->getName() << "' is not a GEMM op";
      });
}
