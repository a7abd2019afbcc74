//===- VocabParallel.cpp - kernels of the vocabulary-parallel ops --------===//
//
// Megatron-LM's VocabParallelEmbedding and _VocabParallelCrossEntropy, the rank-local parts
// (VocabParallelKernels.h). The collectives between them are separate ops that the executor runs.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/VocabParallelKernels.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

/// The id at flat position `p`, checked against the padded vocabulary [0, rows * parts).
static llvm::Expected<int64_t> checkedId(llvm::StringRef op, const Tensor &ids, int64_t p, int64_t rows,
                                         int64_t parts) {
  int64_t id = ids.ints()[p];
  if (id < 0 || id >= rows * parts)
    return makeError(op + " id " + llvm::Twine(id) + " at flat position " + llvm::Twine(p) + " is out of range [0, " +
                     llvm::Twine(rows * parts) + ")");
  return id;
}

static llvm::Error checkPart(llvm::StringRef op, int64_t part, int64_t parts) {
  if (parts < 1 || part < 0 || part >= parts)
    return makeError(op + " part " + llvm::Twine(part) + " of " + llvm::Twine(parts) + " is not a rank of the axis");
  return llvm::Error::success();
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalVocabParallelEmbedding(const Tensor &table, const Tensor &ids,
                                                                        int64_t part, int64_t parts) {
  const llvm::StringRef op = "vocab_parallel_embedding";
  if (!table.isFloat() || table.getRank() != 2 || ids.isFloat())
    return makeError(op + " needs a 2-D float table and integer ids, got " + table.getTypeString() + " and " +
                     ids.getTypeString());
  if (llvm::Error error = checkPart(op, part, parts))
    return std::move(error);
  const int64_t rows = table.getShape()[0], hidden = table.getShape()[1], first = part * rows;
  llvm::SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(hidden);
  Tensor out(table.getDType(), shape);
  for (int64_t p = 0, e = ids.getNumElements(); p < e; ++p) {
    llvm::Expected<int64_t> id = checkedId(op, ids, p, rows, parts);
    if (!id)
      return id.takeError();
    if (*id >= first && *id < first + rows)
      std::copy_n(table.floats().begin() + (*id - first) * hidden, hidden, out.floats().begin() + p * hidden);
  }
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalVocabParallelEmbeddingGrad(const Tensor &grad, const Tensor &ids,
                                                                            int64_t rows, int64_t part, int64_t parts) {
  const llvm::StringRef op = "vocab_parallel_embedding_grad";
  if (ids.isFloat() || !grad.isFloat() || grad.getRank() != ids.getRank() + 1 ||
      grad.getShape().drop_back() != ids.getShape() || rows < 0)
    return makeError(op + " gradient " + grad.getTypeString() + " must be a float tensor of shape ids x H for ids " +
                     ids.getTypeString());
  if (llvm::Error error = checkPart(op, part, parts))
    return std::move(error);
  const int64_t hidden = grad.getShape().back(), first = part * rows;
  Tensor out(grad.getDType(), {rows, hidden});
  llvm::MutableArrayRef<double> o = out.floats();
  for (int64_t p = 0, e = ids.getNumElements(); p < e; ++p) {
    llvm::Expected<int64_t> id = checkedId(op, ids, p, rows, parts);
    if (!id)
      return id.takeError();
    if (*id < first || *id >= first + rows)
      continue;
    const double *row = grad.floats().data() + p * hidden;
    for (int64_t h = 0; h < hidden; ++h)
      o[(*id - first) * hidden + h] += row[h];
  }
  out.roundToDType();
  return out;
}

/// Checks the operands both cross-entropy kernels share: logits [N..., Vl], labels and max [N...].
static llvm::Error checkParts(llvm::StringRef op, const Tensor &logits, const Tensor &labels, const Tensor &max,
                              int64_t vocab, int64_t part, int64_t parts) {
  if (!logits.isFloat() || logits.getRank() < 1 || labels.isFloat() ||
      labels.getShape() != logits.getShape().drop_back() || !max.isFloat() || max.getShape() != labels.getShape())
    return makeError(op + " needs float logits [..., Vl], integer labels and a float max of the leading shape, got " +
                     logits.getTypeString() + ", " + labels.getTypeString() + ", " + max.getTypeString());
  if (vocab < 1 || vocab > logits.getShape().back() * parts)
    return makeError(op + " vocab " + llvm::Twine(vocab) + " is not in [1, " +
                     llvm::Twine(logits.getShape().back() * parts) + "]");
  return checkPart(op, part, parts);
}

/// The label at `p` against the real vocabulary [0, vocab).
static llvm::Expected<int64_t> checkedLabel(llvm::StringRef op, const Tensor &labels, int64_t p, int64_t vocab) {
  int64_t label = labels.ints()[p];
  if (label < 0 || label >= vocab)
    return makeError(op + " label " + llvm::Twine(label) + " at flat position " + llvm::Twine(p) +
                     " is out of range [0, " + llvm::Twine(vocab) + ")");
  return label;
}

llvm::Expected<std::pair<Tensor, Tensor>>
mlir::ptrain::interp::evalVocabParallelCrossEntropyParts(const Tensor &logits, const Tensor &labels, const Tensor &max,
                                                         int64_t vocab, int64_t part, int64_t parts) {
  const llvm::StringRef op = "vocab_parallel_cross_entropy_parts";
  if (llvm::Error error = checkParts(op, logits, labels, max, vocab, part, parts))
    return std::move(error);
  const int64_t cols = logits.getShape().back(), first = part * cols;
  // The rank's columns that are real vocabulary entries (the padded ones are masked to -inf).
  const int64_t valid = std::clamp<int64_t>(vocab - first, 0, cols);
  Tensor sum(max.getDType(), max.getShape()), target(max.getDType(), max.getShape());
  for (int64_t p = 0, n = labels.getNumElements(); p < n; ++p) {
    llvm::Expected<int64_t> label = checkedLabel(op, labels, p, vocab);
    if (!label)
      return label.takeError();
    const double *row = logits.floats().data() + p * cols;
    const double m = max.floats()[p];
    double s = 0;
    for (int64_t c = 0; c < valid; ++c)
      s += std::exp(row[c] - m);
    sum.floats()[p] = s;
    target.floats()[p] = *label >= first && *label < first + cols ? row[*label - first] - m : 0.0;
  }
  sum.roundToDType();
  target.roundToDType();
  return std::make_pair(std::move(sum), std::move(target));
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalVocabParallelCrossEntropyPartsGrad(
    const Tensor &dSumExp, const Tensor &dTarget, const Tensor &logits, const Tensor &labels, const Tensor &max,
    int64_t vocab, int64_t part, int64_t parts) {
  const llvm::StringRef op = "vocab_parallel_cross_entropy_parts_grad";
  if (llvm::Error error = checkParts(op, logits, labels, max, vocab, part, parts))
    return std::move(error);
  if (!dSumExp.isFloat() || dSumExp.getShape() != labels.getShape() || !dTarget.isFloat() ||
      dTarget.getShape() != labels.getShape())
    return makeError(op + " gradients " + dSumExp.getTypeString() + ", " + dTarget.getTypeString() +
                     " must have the labels' shape " + labels.getTypeString());
  const int64_t cols = logits.getShape().back(), first = part * cols;
  const int64_t valid = std::clamp<int64_t>(vocab - first, 0, cols);
  Tensor out(logits.getDType(), logits.getShape());
  for (int64_t p = 0, n = labels.getNumElements(); p < n; ++p) {
    llvm::Expected<int64_t> label = checkedLabel(op, labels, p, vocab);
    if (!label)
      return label.takeError();
    const double *row = logits.floats().data() + p * cols;
    double *o = out.floats().data() + p * cols;
    const double m = max.floats()[p], ds = dSumExp.floats()[p];
    for (int64_t c = 0; c < valid; ++c)
      o[c] = ds * std::exp(row[c] - m);
    if (*label >= first && *label < first + cols)
      o[*label - first] += dTarget.floats()[p];
  }
  out.roundToDType();
  return out;
}

std::optional<llvm::Expected<std::vector<Tensor>>>
mlir::ptrain::interp::evaluateVocabParallelOp(Operation *op, llvm::function_ref<const Tensor &(Value)> get,
                                              AxisCoordinate coordinate) {
  using Result = llvm::Expected<std::vector<Tensor>>;
  if (!isa<VocabParallelEmbeddingOp, VocabParallelEmbeddingGradOp, VocabParallelCrossEntropyPartsOp,
           VocabParallelCrossEntropyPartsGradOp>(op))
    return std::nullopt;
  auto axis = op->getAttrOfType<StringAttr>("axis");
  std::optional<std::pair<int64_t, int64_t>> at = axis ? coordinate(axis.getValue()) : std::nullopt;
  if (!at)
    return Result(makeError("the grid has no axis '" + (axis ? axis.getValue() : StringRef()) + "'"));
  // Not a structured binding: the lambdas below capture these (C++20; clang rejects it in C++17 under -Werror).
  const int64_t part = at->first, parts = at->second;
  auto one = [](llvm::Expected<Tensor> t) -> Result {
    if (!t)
      return t.takeError();
    std::vector<Tensor> results;
    results.push_back(std::move(*t));
    return results;
  };
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([&](VocabParallelEmbeddingOp e) {
        return one(evalVocabParallelEmbedding(get(e.getTable()), get(e.getIds()), part, parts));
      })
      .Case([&](VocabParallelEmbeddingGradOp e) {
        return one(evalVocabParallelEmbeddingGrad(get(e.getGrad()), get(e.getIds()),
                                                  e.getResult().getType().getDimSize(0), part, parts));
      })
      .Case([&](VocabParallelCrossEntropyPartsOp c) -> Result {
        auto parts2 = evalVocabParallelCrossEntropyParts(get(c.getLogits()), get(c.getLabels()), get(c.getMax()),
                                                         c.getVocabAttr().getInt(), part, parts);
        if (!parts2)
          return parts2.takeError();
        std::vector<Tensor> results;
        results.push_back(std::move(parts2->first));
        results.push_back(std::move(parts2->second));
        return results;
      })
      .Case([&](VocabParallelCrossEntropyPartsGradOp c) {
        return one(evalVocabParallelCrossEntropyPartsGrad(get(c.getDSumExp()), get(c.getDTarget()), get(c.getLogits()),
                                                          get(c.getLabels()), get(c.getMax()),
                                                          c.getVocabAttr().getInt(), part, parts));
      });
}
