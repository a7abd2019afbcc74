//===- GemmFusion.h - Transposes and batch sums folded into GEMMs -*- C++ -*-===//
//
// What --emit-cpp hands to one ptrain_gemm_f32 call instead of materializing
// (docs/CodegenCpu.md, "GEMM operands"); an analysis so that the memory plan
// (MemoryPlan.h) plans exactly the buffers the generated code allocates:
//   - a matmul operand made by ptrain.transpose ops that swap only the last
//     two dims (ONNX's Gemm/Linear weights, autodiff's x^T and W^T) is read
//     from the transposes' input with BLAS's transpose flag; a transpose whose
//     every use is read that way is not emitted;
//   - ptrain.sum_to over the batch of a batched matmul whose only use it is
//     (a weight gradient sum_b x_b^T dy_b) is one GEMM over the batch-long
//     contraction, sum_b A_b B_b = [A_0 ... A_{n-1}] [B_0; ...; B_{n-1}], when
//     A is stored transposed and B as is (both stacks are then plain
//     row-major matrices); the matmul is not emitted. This changes the
//     summation order (fp32 over n k terms instead of n fp32 partial products
//     summed in fp64), within fp32 rounding;
//   - the transpose of such a batch sum, its only use (the weight gradient of
//     `x W^T`: autodiff sums dW^T = x^T dy and transposes it), is written
//     straight into the sum's buffer by the sum's GEMM; the transpose is an
//     alias of that buffer. The CPU target runs the GEMM in its own operand
//     roles into scratch and transposes it (ptrain_gemm_transposed_f32: the
//     same bits as the unfolded GEMM and transpose on every kernel path); the
//     CUDA target swaps the operands, (A^T B)^T = B^T A, which on OpenBLAS's
//     Haswell kernels gives other last bits (GemmTest, kern11).
//   - a bias added to a GEMM's product, `x W^T + b` with b of the product's
//     last dim (its only use): C starts as b broadcast over the rows and the
//     GEMM runs with beta = 1, C = A B + C; the add is an alias of the
//     product. The bits are those of the separate add when BLAS sums K in one
//     pass (OpenBLAS: K <= 256 here); beyond that the bias joins the first
//     partial sum instead of the last (an fp32 rounding difference).
//   - a gradient accumulated into its state, `state_write S (add (state_read
//     S) g)` with g a GEMM's product (a weight gradient: the batch sum, its
//     transpose, or a plain matmul), each value's only use the next: with
//     `accumulateIntoStates` (the CPU target) the GEMM runs with C = S's
//     storage and beta = 1, C = A B + C; the product lives in the state, the
//     add is an alias of it, and the read and the write are folded (no add,
//     no copy, no buffer: 6 passes over the gradient become 2). Only for a
//     contraction of at most 256 (batch x k of the sum), which OpenBLAS sums
//     in one pass on both kernel families: the same bits as the separate add
//     (a longer one would add the old value to the first partial sum). Only
//     where nothing between the GEMM (or the read, if earlier) and the write
//     reads or writes S or calls a function.
//   - the attention's head split and merge (Vaswani et al. 2017, sec. 3.2.2:
//     [B, T, H, D] <-> [B, H, T, D]), with `headPermutes` (the CPU target):
//     a rank-4 matmul over a [B, H] batch (f32, both operands carrying it)
//     reads an operand made by ptrain.transpose {0, 2, 1, 3} (or {0, 2, 3, 1},
//     the same read transposed) in place from the transpose's [B, T, H, D]
//     input, matrix rows H*D apart and heads D apart; a transpose whose every
//     use is read that way is not emitted. A product whose only use is its
//     {0, 2, 1, 3} transpose (the heads merged back) is written in place in
//     that layout; the transpose is an alias of it. The same products summed
//     in the same order (BLAS packs its operands: the leading dimension
//     cannot change a sum): the same bits (GemmTest's GemmStrided, both
//     OpenBLAS kernel families). Not folded: the {0, 3, 1, 2} merge of a
//     transposed product (dK^T), which would need C^T = B^T A^T, operands
//     swapped, and OpenBLAS's Haswell kernels sum those in another order.
// Dead ops (DeadOps.h) are decided here as well, so that both consumers skip
// the same ops.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_GEMMFUSION_H
#define PTRAIN_ANALYSIS_GEMMFUSION_H

#include "ptrain/Analysis/DeadOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::ptrain {

/// A GEMM operand: the buffer read and whether it holds the operand's
/// transpose (last two dims swapped).
struct GemmOperand {
  Value source;
  bool transposed = false;
  /// Read in place through a head permute: `source` is [B, rows, H, cols] (the stored matrices' rows H*cols
  /// apart, the heads cols apart), the operand's [B, H] batch entry (b, h) at b*rows*H*cols + h*cols.
  bool heads = false;
};

/// Which folds GemmFusion makes besides the transposes, batch sums and bias adds every target takes.
struct GemmFusionOptions {
  /// GEMMs may accumulate into a gradient state (the CPU target's rule; the CUDA target keeps the add and copy).
  bool accumulateIntoStates = false;
  /// The attention's head permutes are read and written in place by strided GEMMs (the CPU target's
  /// ptrain_gemm_strided_f32; the CUDA target materializes them).
  bool headPermutes = false;
};

class GemmFusion {
public:
  /// Analyzes the ops of one function body, in order, making the folds `options` allows.
  explicit GemmFusion(ArrayRef<Operation *> ops, GemmFusionOptions options = {});

  /// Operand `index` (0 lhs, 1 rhs) of `m` as the GEMM reads it.
  GemmOperand operand(MatmulOp m, unsigned index) const;
  /// The matmul `s` sums over its batch in one GEMM, or null.
  MatmulOp summedMatmul(SumToOp s) const { return summed.lookup(s.getOperation()); }
  /// An op whose result only fused consumers read, or the state read and write of a GEMM accumulated into its
  /// state (accumulatedState): nothing is emitted for it.
  bool isFolded(Operation *op) const { return folded.contains(op); }
  /// The batch sum `s` is emitted as the transpose of its result (its only user reads it as an alias).
  bool writesTransposed(SumToOp s) const { return transposedSums.contains(s.getOperation()); }
  /// The value `op`'s result is an alias of, or null: a transpose whose input's producer wrote it transposed,
  /// a bias add whose product's GEMM added the bias. Nothing is emitted for `op`.
  Value aliasOf(Operation *op) const { return aliases.lookup(op); }
  /// The bias the GEMM of `m` adds to its product (C = bias rows, beta = 1), or null.
  Value biasOf(MatmulOp m) const { return biases.lookup(m.getOperation()); }
  /// The state whose storage the GEMM of `op` (a matmul or a batch sum) accumulates its product into
  /// (C = that storage, beta = 1), or null. The product's storage is that state.
  StringAttr accumulatedState(Operation *op) const { return accumulated.lookup(op); }
  /// The GEMM of `m` writes its product in place as its only user, a {0, 2, 1, 3} transpose, lays it out
  /// ([B, T, H, D] for a [B, H, T, D] product); that transpose is an alias of the product.
  bool writesHeads(MatmulOp m) const { return headsResults.contains(m.getOperation()); }
  /// Whether `m` is one GEMM over a two-level [B, H] batch with leading dimensions (ptrain_gemm_strided_f32):
  /// an operand read through a head permute or a product written as one.
  bool isStrided(MatmulOp m) const;
  /// Nothing reads `op`'s results (DeadOps.h): nothing is emitted for it and its results get no buffer.
  bool isDead(Operation *op) const { return deadOps.isDead(op); }
  /// Buffers `op`'s emitted code reads besides its operands (they must stay live until `op`).
  ArrayRef<Value> extraReads(Operation *op) const;

private:
  /// The gradients accumulated into their states (accumulatedState), after the other folds.
  void findAccumulations(ArrayRef<Operation *> ops);
  /// Whether `m` may read and write head permutes in place: headPermutes on, a rank-4 f32 product over the same
  /// [B, H] batch as both operands, fp32 operands.
  bool takesHeads(MatmulOp m) const;

  GemmFusionOptions options;

  llvm::DenseMap<Operation *, MatmulOp> summed;
  llvm::DenseSet<Operation *> folded;
  llvm::DenseSet<Operation *> transposedSums;
  llvm::DenseSet<Operation *> headsResults;
  llvm::DenseMap<Operation *, Value> aliases, biases;
  llvm::DenseMap<Operation *, StringAttr> accumulated;
  DeadOps deadOps;
  llvm::DenseMap<Operation *, SmallVector<Value, 2>> reads;
};

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_GEMMFUSION_H
