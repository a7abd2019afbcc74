//===- VocabParallelKernels.h - kernels of the vocabulary-parallel ops -*- C++ -*-===//
//
// Reference kernels of the rank-dependent vocabulary-parallel ops (PTrainVocabParallelOps.td;
// lib/Interpreter/VocabParallel.cpp), in double, rounded once to the element type. `part` is the executing
// rank's coordinate on the op's axis and `parts` the axis' size: the rank holds rows (or logit columns)
// [part Vl, (part + 1) Vl) of the padded vocabulary. The multi-rank executor calls them with the rank's
// coordinate; errors name the op and the shapes.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_VOCABPARALLELKERNELS_H
#define PTRAIN_INTERPRETER_VOCABPARALLELKERNELS_H

#include "ptrain/Interpreter/Tensor.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <utility>
#include <vector>

namespace mlir::ptrain::interp {

/// `ptrain.vocab_parallel_embedding`: the rank's rows of the lookup, 0 for ids of other ranks.
llvm::Expected<Tensor> evalVocabParallelEmbedding(const Tensor &table, const Tensor &ids, int64_t part, int64_t parts);
/// `ptrain.vocab_parallel_embedding_grad`: a rows x H table of the rank's ids' scatter-added gradients.
llvm::Expected<Tensor> evalVocabParallelEmbeddingGrad(const Tensor &grad, const Tensor &ids, int64_t rows, int64_t part,
                                                      int64_t parts);
/// `ptrain.vocab_parallel_cross_entropy_parts`: (sum_exp, target) per position.
llvm::Expected<std::pair<Tensor, Tensor>> evalVocabParallelCrossEntropyParts(const Tensor &logits, const Tensor &labels,
                                                                             const Tensor &max, int64_t vocab,
                                                                             int64_t part, int64_t parts);
/// `ptrain.vocab_parallel_cross_entropy_parts_grad`: the rank's d logits.
llvm::Expected<Tensor> evalVocabParallelCrossEntropyPartsGrad(const Tensor &dSumExp, const Tensor &dTarget,
                                                              const Tensor &logits, const Tensor &labels,
                                                              const Tensor &max, int64_t vocab, int64_t part,
                                                              int64_t parts);

/// The rank's coordinate on a grid axis and the axis' size; nullopt when the grid has no such axis.
using AxisCoordinate = llvm::function_ref<std::optional<std::pair<int64_t, int64_t>>(llvm::StringRef axis)>;

/// Evaluates `op` when it is one of the rank-dependent vocabulary-parallel ops (nullopt otherwise), on the
/// rank that `coordinate` describes; `get` returns an operand's value.
std::optional<llvm::Expected<std::vector<Tensor>>>
evaluateVocabParallelOp(Operation *op, llvm::function_ref<const Tensor &(Value)> get, AxisCoordinate coordinate);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_VOCABPARALLELKERNELS_H
