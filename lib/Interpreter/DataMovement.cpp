//===- DataMovement.cpp - reshape, transpose, split, slice, concat, pad ---===//
//
// Kernels that move elements without arithmetic; they work on float and integer tensors alike. `ptrain.pad`,
// the adjoint of `ptrain.slice`, is here too: it only places elements and fills zeros.
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

/// For each element of a box of `boxShape` (row-major), the flat index of the element of a tensor of
/// `fullShape` it occupies when the box starts at `offsets`. Precondition: the box fits in the tensor.
static std::vector<int64_t> boxIndexMap(llvm::ArrayRef<int64_t> boxShape, llvm::ArrayRef<int64_t> offsets,
                                        llvm::ArrayRef<int64_t> fullShape) {
  int64_t rank = static_cast<int64_t>(boxShape.size());
  llvm::SmallVector<int64_t> strides = rowMajorStrides(fullShape);
  int64_t n = numElements(boxShape);
  std::vector<int64_t> map(n);
  if (n == 0)
    return map;
  int64_t index = 0;
  for (int64_t d = 0; d < rank; ++d)
    index += offsets[d] * strides[d];
  llvm::SmallVector<int64_t> position(rank, 0);
  for (int64_t j = 0; j < n; ++j) {
    map[j] = index;
    for (int64_t d = rank - 1; d >= 0; --d) {
      index += strides[d];
      if (++position[d] < boxShape[d])
        break;
      index -= strides[d] * boxShape[d];
      position[d] = 0;
    }
  }
  return map;
}

/// Copies element j of `source` to element map[j] of `target` (same element type).
static void scatterInto(Tensor &target, const Tensor &source, llvm::ArrayRef<int64_t> map) {
  if (source.isFloat()) {
    for (size_t j = 0; j < map.size(); ++j)
      target.floats()[map[j]] = source.floats()[j];
  } else {
    for (size_t j = 0; j < map.size(); ++j)
      target.ints()[map[j]] = source.ints()[j];
  }
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalSlice(const Tensor &input, llvm::ArrayRef<int64_t> offsets,
                                                       llvm::ArrayRef<int64_t> sizes) {
  int64_t rank = input.getRank();
  // (C1) one offset and one size per dimension.
  if (static_cast<int64_t>(offsets.size()) != rank || static_cast<int64_t>(sizes.size()) != rank)
    return makeError("slice needs one offset and one size per dimension of " + input.getTypeString() + ", got " +
                     llvm::Twine(offsets.size()) + " and " + llvm::Twine(sizes.size()));
  // (C2) 0 <= offset, 0 <= size and offset + size <= dimension.
  llvm::ArrayRef<int64_t> shape = input.getShape();
  for (int64_t d = 0; d < rank; ++d)
    if (offsets[d] < 0 || sizes[d] < 0 || offsets[d] > shape[d] - sizes[d])
      return makeError("slice of dimension " + llvm::Twine(d) + " at offset " + llvm::Twine(offsets[d]) +
                       " with size " + llvm::Twine(sizes[d]) + " does not fit in " + input.getTypeString());
  return input.gather(sizes, boxIndexMap(sizes, offsets, shape));
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalConcat(llvm::ArrayRef<const Tensor *> inputs, int64_t axis) {
  // (C1) at least one input; one rank and one element type.
  if (inputs.empty())
    return makeError("concat needs at least one input");
  const Tensor &first = *inputs.front();
  int64_t rank = first.getRank();
  // (C2) -rank <= axis < rank.
  if (axis < -rank || axis >= rank)
    return makeError("concat axis " + llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
  int64_t dim = axis < 0 ? axis + rank : axis;
  // (C3) equal dimensions but `axis`; the result's `axis` is their sum.
  llvm::SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (const Tensor *t : inputs) {
    bool matches = t->getRank() == rank && t->getDType() == first.getDType();
    for (int64_t d = 0; matches && d < rank; ++d)
      matches = d == dim || t->getShape()[d] == first.getShape()[d];
    if (!matches)
      return makeError("concat inputs " + first.getTypeString() + " and " + t->getTypeString() +
                       " differ in rank, element type or a dimension other than " + llvm::Twine(dim));
    shape[dim] += t->getShape()[dim];
  }
  Tensor out(first.getDType(), shape);
  llvm::SmallVector<int64_t> offsets(rank, 0);
  for (const Tensor *t : inputs) {
    scatterInto(out, *t, boxIndexMap(t->getShape(), offsets, shape));
    offsets[dim] += t->getShape()[dim];
  }
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalPad(const Tensor &input, llvm::ArrayRef<int64_t> low,
                                                     llvm::ArrayRef<int64_t> high) {
  int64_t rank = input.getRank();
  // (C1) one non-negative low and high entry per dimension.
  if (static_cast<int64_t>(low.size()) != rank || static_cast<int64_t>(high.size()) != rank)
    return makeError("pad needs one low and one high entry per dimension of " + input.getTypeString() +
                     ", got " + llvm::Twine(low.size()) + " and " + llvm::Twine(high.size()));
  // (C2) the result shape is low + input + high.
  llvm::SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (low[d] < 0 || high[d] < 0)
      return makeError("padding of dimension " + llvm::Twine(d) + " must be >= 0, got low " + llvm::Twine(low[d]) +
                       " and high " + llvm::Twine(high[d]));
    shape.push_back(low[d] + input.getShape()[d] + high[d]);
  }
  Tensor out(input.getDType(), shape);
  scatterInto(out, input, boxIndexMap(input.getShape(), low, shape));
  return out;
}
