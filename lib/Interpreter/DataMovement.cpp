//===- DataMovement.cpp - reshape, transpose and split kernels -----------===//
//
// Kernels that move elements without arithmetic; they work on float and integer tensors alike.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

llvm::Expected<Tensor> mlir::ptrain::interp::evalReshape(const Tensor &input, llvm::ArrayRef<int64_t> shape) {
  // (C1) the same number of elements; row-major order is kept.
  for (int64_t d : shape)
    if (d < 0)
      return makeError("reshape target shape " + formatShape(shape) + " is not static");
  if (numElements(shape) != input.getNumElements())
    return makeError("cannot reshape " + input.getTypeString() + " (" + llvm::Twine(input.getNumElements()) +
                     " elements) to " + formatShape(shape));
  return input.reshaped(shape);
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalTranspose(const Tensor &input, llvm::ArrayRef<int64_t> perm) {
  // (C1) perm is a permutation of [0, rank).
  int64_t rank = input.getRank();
  llvm::SmallBitVector seen(rank);
  if (static_cast<int64_t>(perm.size()) != rank)
    return makeError("transpose perm has " + llvm::Twine(perm.size()) + " entries for rank " + llvm::Twine(rank));
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return makeError("transpose perm is not a permutation of [0, " + llvm::Twine(rank) + ")");
    seen.set(p);
  }
  llvm::ArrayRef<int64_t> inShape = input.getShape();
  llvm::SmallVector<int64_t> inStrides = rowMajorStrides(inShape);
  llvm::SmallVector<int64_t> outShape, strides;
  for (int64_t p : perm) {
    outShape.push_back(inShape[p]);
    strides.push_back(inStrides[p]);
  }
  int64_t n = input.getNumElements();
  std::vector<int64_t> source(n);
  llvm::SmallVector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t j = 0; j < n; ++j) {
    source[j] = offset;
    for (int64_t d = rank - 1; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < outShape[d])
        break;
      offset -= strides[d] * outShape[d];
      index[d] = 0;
    }
  }
  return input.gather(outShape, source);
}

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evalSplit(const Tensor &input, int64_t axis,
                                                                    llvm::ArrayRef<int64_t> sizes) {
  int64_t rank = input.getRank();
  // (C1) -rank <= axis < rank.
  if (axis < -rank || axis >= rank)
    return makeError("split axis " + llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
  int64_t dim = axis < 0 ? axis + rank : axis;
  llvm::ArrayRef<int64_t> shape = input.getShape();
  // (C2) sizes >= 0 adding up to the dimension.
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return makeError("split size " + llvm::Twine(s) + " is negative");
    total += s;
  }
  if (total != shape[dim])
    return makeError("split sizes add up to " + llvm::Twine(total) + ", dimension " + llvm::Twine(dim) +
                     " of " + input.getTypeString() + " is " + llvm::Twine(shape[dim]));
  int64_t outer = numElements(shape.take_front(dim));
  int64_t inner = numElements(shape.drop_front(dim + 1));
  std::vector<Tensor> pieces;
  int64_t start = 0;
  for (int64_t s : sizes) {
    llvm::SmallVector<int64_t> pieceShape(shape);
    pieceShape[dim] = s;
    std::vector<int64_t> source;
    source.reserve(outer * s * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = start * inner, e = (start + s) * inner; j < e; ++j)
        source.push_back(o * shape[dim] * inner + j);
    pieces.push_back(input.gather(pieceShape, source));
    start += s;
  }
  return pieces;
}
