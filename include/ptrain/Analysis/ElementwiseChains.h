//===- ElementwiseChains.h - Elementwise chains the compiler fuses -*- C++ -*-===//
//
// The elementwise chains of a lowered step that --ptrain-outline-elementwise
// outlines into generated kernels (issue 26; docs/GeneratedKernels.md), and
// the description of one chain that the pass and the CPU code generator share
// (the kernel's parameters: its inputs, then its outputs, in this order).
//
// A chain is a run of consecutive f32 elementwise ops with one result shape,
// each after the first reading a result of an earlier one: the greedy
// producer-consumer grouping of MLIR's linalg elementwise fusion
// (mlir/Dialect/Linalg/Transforms/ElementwiseOpFusion.cpp), restricted to ops
// next to each other so that every input is still live and unchanged where
// the fused kernel runs. The ops: `ptrain.binary` of kind add, sub, mul or
// div, exact in fp32 (IEEE 754 rounds each once), and the exact (erf)
// `ptrain.gelu` and `ptrain.gelu_grad`, whose kernel body is the runtime's
// own fp64 definition op for op (include/ptrain/Transforms/GeluArith.h). The
// fused kernel computes the same bits as the runtime's ptrain_binary_f32 /
// ptrain_gelu_fwd_f32 / ptrain_gelu_bwd_f32 calls because it performs the
// same operations in the same order (one loop nest, one op after the other
// per element).
//
// A chain may end in a row softmax (`ptrain.softmax` over the last axis):
// the elementwise ops before it are its prologue (the attention scores'
// scale and mask), and the kernel walks the rows once, in the runtime's
// order (lib/Runtime/cpu/Softmax.cpp: max, fp64 exp, fp64 sum in column
// order, scale by the fp32 reciprocal), so the bits are those of the
// unfused calls. A chain may start with a row softmax gradient
// (`ptrain.softmax_grad` over the last axis) followed by elementwise ops
// (the attention scores' scale gradient): per row the runtime's fp64 dot
// of dy and y, then dx and the epilogue element by element.
//
// Ops nothing live reads (DeadOps.h: the gradients of constants, such as
// the causal mask's `sum_to`) are transparent: they neither join nor break
// a chain, since nothing is emitted for them.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_ELEMENTWISECHAINS_H
#define PTRAIN_ANALYSIS_ELEMENTWISECHAINS_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::ptrain {

/// The discardable attribute on every op of an outlined chain: the kernel that computes the chain
/// (`@ptrain_kernels::@<name>`, a SymbolRefAttr into the module's kernel module).
inline constexpr llvm::StringLiteral kKernelAttr = "ptrain.kernel";
/// The op's position in its chain (i64, 0 for the first op).
inline constexpr llvm::StringLiteral kKernelOpAttr = "ptrain.kernel_op";
/// The name of the nested module of generated kernels.
inline constexpr llvm::StringLiteral kKernelModuleName = "ptrain_kernels";

/// One chain and its kernel's interface.
struct ElementwiseChain {
  SmallVector<Operation *> ops;
  /// Values defined outside the chain that its ops read, in the order of first use (operand order).
  SmallVector<Value> inputs;
  /// Results of the chain's ops read outside it (always the last op's), in op order.
  SmallVector<Value> outputs;

  /// The iteration space: the shape every op of the chain computes.
  ArrayRef<int64_t> shape() const;
  /// The indexing map of `input` over the iteration space (numpy broadcasting: trailing dimensions aligned,
  /// size-1 dimensions read at 0).
  AffineMap inputMap(Value input) const;
  /// Bytes the fused kernel moves: each input read once, each output written once (its element type's size
  /// times its elements). The timing model prices a fused chain by these (ModuleCosts.h).
  int64_t fusedBytes() const;
  /// Bytes the ops move one runtime call each: every op reads its operands and writes its result.
  int64_t unfusedBytes() const;
  /// Whether the last op is a row softmax (isRowSoftmax): the kernel is then a loop over the rows, not one
  /// elementwise loop nest.
  bool endsInSoftmax() const;
  /// Whether the first op is a row softmax gradient (isRowSoftmaxGrad): the kernel is then a loop over the
  /// rows, the dot product first.
  bool startsWithSoftmaxGrad() const;
  /// A text naming the chain's computation up to its values (kinds, shapes, wiring): chains with equal
  /// signatures share one kernel.
  std::string signature() const;
};

/// Whether `op` may be part of a chain: an f32 ptrain.binary of kind add, sub, mul or div, or an f32
/// ptrain.gelu / ptrain.gelu_grad of the exact (erf) form; static shapes.
bool isFusibleElementwise(Operation *op);

/// Whether `op` may end a chain: an f32 ptrain.softmax over the last axis, static shape, rank >= 1 (the
/// runtime's ptrain_softmax_fwd_f32 without its causal flag, as the CPU step calls it).
bool isRowSoftmax(Operation *op);

/// Whether `op` may start a chain: an f32 ptrain.softmax_grad over the last axis, static shape, rank >= 1 (the
/// runtime's ptrain_softmax_bwd_f32).
bool isRowSoftmaxGrad(Operation *op);

/// Which ops a chain looks through (ops that are not emitted: DeadOps.h), or nullptr for none.
using TransparentOps = function_ref<bool(Operation *)>;

/// The chain of `ops` (consecutive but for `transparent` ops, as findElementwiseChains grouped them): its inputs
/// and outputs (a result only `transparent` ops read outside the chain is no output).
ElementwiseChain describeChain(ArrayRef<Operation *> ops, TransparentOps transparent = nullptr);

/// The chain that starts at `ops[i]`, an op marked as the first of an outlined chain (kKernelOpAttr 0): the
/// consecutive ops with the same kKernelAttr at positions 0, 1, 2, ..., `transparent` ops between them passed
/// over (empty if `ops[i]` is not such an op).
SmallVector<Operation *> markedChainAt(ArrayRef<Operation *> ops, size_t i, TransparentOps transparent = nullptr);

/// The chains of two or more ops among `ops` (a function body's top-level ops, in order); `skip(op)` breaks a
/// chain at `op` (an op another fusion already consumes, e.g. a bias add folded into its GEMM); `transparent`
/// ops are passed over.
SmallVector<ElementwiseChain> findElementwiseChains(ArrayRef<Operation *> ops, function_ref<bool(Operation *)> skip,
                                                   TransparentOps transparent = nullptr);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_ELEMENTWISECHAINS_H
