//===- SoftmaxArith.h - The runtime's row softmax as scf + arith ---*- C++ -*-===//
//
// The rows of a generated kernel that ends in a softmax over the last axis
// (issue 26, docs/GeneratedKernels.md, "Softmax"): the runtime's
// ptrain_softmax_fwd_f32 (lib/Runtime/cpu/Softmax.cpp, without its causal
// flag) written op for op, per row of C columns:
//   1. x[c] = the chain's prologue at (row, c) (scale, mask: `element`),
//      stored into y;
//   2. m = x[0], then m = x[c] > m ? x[c] : m for c = 1 .. C-1;
//   3. y[c] = (float) exp((double) (x[c] - m)) with the runtime's fp64 exp
//      (GeluArith.h's buildExpNonPositiveF64, cpu/VectorMath.h), 0 where
//      m = -inf (a fully masked row);
//   4. s = sum of (double) y[c], one fp64 chain in column order;
//   5. y[c] *= s > 0 ? (float) (1.0 / s) : 0.
// Max-subtracted softmax: Bridle 1990 for the function, the subtraction of
// the maximum for range (Goodfellow, Bengio, Courville 2016, "Deep
// Learning", sec. 4.1). Each step is a correctly rounded IEEE 754 operation,
// a comparison with a select, or an integer operation on the bits; no
// `contract` or `fast` flag and the sum's order is the loop's, so the kernel
// rounds exactly like the runtime on every ISA path. The row loops are scf
// loops rather than a linalg reduction: the order of the sum is part of the
// result, and the loops state it.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_SOFTMAXARITH_H
#define PTRAIN_TRANSFORMS_SOFTMAXARITH_H

#include "mlir/IR/Builders.h"

namespace mlir::ptrain {

/// Builds, at `b`'s insertion point, the softmax over the last dimension of `shape` (rank >= 1, static) into
/// the f32 memref `y` of that shape: loops over the leading dimensions (row-major), then the five steps of
/// the file comment per row. `element(b, loc, indices)` builds the f32 softmax input at `indices` (one index
/// value per dimension of `shape`); it is called once per element, in step 1, before y at that index is
/// written, so it may read memory that y aliases at the same index and store other results there.
void buildSoftmaxRowsF32(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value y,
                         function_ref<Value(OpBuilder &, Location, ValueRange)> element);

/// Builds, at `b`'s insertion point, the softmax gradient over the last dimension of `shape` from the f32 memrefs
/// `dy` (the incoming gradient) and `y` (the softmax's output), both of that shape: per row the runtime's
/// ptrain_softmax_bwd_f32 (lib/Runtime/cpu/Softmax.cpp), d = sum of (double) dy[c] * (double) y[c] (one fp64
/// chain in column order, one row at a time: four in one loop are packed with gathers by LLVM's SLP vectorizer,
/// 0.43x the runtime's speed), then per element
/// dx = (float) ((double) y[c] * ((double) dy[c] - d)), handed to `epilogue(b, loc, indices, dx)`, which builds
/// the rest of the chain and stores its outputs (it may write where dy or y are, at the same index: both are read
/// there first). The gradient of y = softmax(x): dx = y (dy - <dy, y>) (the Jacobian diag(y) - y y^T).
void buildSoftmaxGradRowsF32(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value dy, Value y,
                             function_ref<void(OpBuilder &, Location, ValueRange, Value)> epilogue);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_SOFTMAXARITH_H
