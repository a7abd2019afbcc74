//===- ConstantForm.cpp - How a code generator materializes a constant ----===//
//
// See ConstantForm.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/ConstantForm.h"

#include "llvm/ADT/bit.h"

#include <cstring>
#include <vector>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// Bytes of one element (i1: one byte, 0 or 1).
int64_t elementBytes(Type t) { return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8; }

/// The bits of every element (f32 as its IEEE bits, i64 as is, i1 as 0/1).
std::vector<uint64_t> elementBits(DenseElementsAttr attr) {
  Type elem = attr.getElementType();
  const int64_t n = attr.getNumElements();
  std::vector<uint64_t> bits(n);
  if (elem.isF32()) {
    auto vals = attr.getValues<float>();
    for (int64_t i = 0; i < n; ++i)
      bits[i] = llvm::bit_cast<uint32_t>(vals[attr.isSplat() ? 0 : i]);
  } else if (elem.isInteger(1)) {
    auto vals = attr.getValues<bool>();
    for (int64_t i = 0; i < n; ++i)
      bits[i] = vals[attr.isSplat() ? 0 : i] ? 1 : 0;
  } else {
    auto vals = attr.getValues<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      bits[i] = static_cast<uint64_t>(vals[attr.isSplat() ? 0 : i]);
  }
  return bits;
}

uint64_t splatBits(DenseElementsAttr attr) {
  Type elem = attr.getElementType();
  if (elem.isF32())
    return llvm::bit_cast<uint32_t>(attr.getSplatValue<float>());
  if (elem.isInteger(1))
    return attr.getSplatValue<bool>() ? 1 : 0;
  return static_cast<uint64_t>(attr.getSplatValue<int64_t>());
}

} // namespace

ConstantForm mlir::ptrain::classifyConstant(DenseElementsAttr attr) {
  ConstantForm form;
  auto type = cast<ShapedType>(attr.getType());
  Type elem = type.getElementType();
  form.count = type.getNumElements();
  form.elemBytes = elementBytes(elem);
  if (form.count <= kLiteralElements)
    return form;
  if (attr.isSplat()) {
    form.kind = ConstantForm::Splat;
    form.value = splatBits(attr);
    return form;
  }
  std::vector<uint64_t> bits = elementBits(attr);
  ArrayRef<int64_t> shape = type.getShape();
  // A causal mask: row 0 keeps its first diagonal + 1 entries, and (i, j) is kept exactly when j - i <= diagonal.
  if (shape.size() >= 2 && shape.back() > 1) {
    const int64_t rows = shape[shape.size() - 2], cols = shape.back();
    int64_t kept = 0;
    while (kept < cols && bits[kept] == bits[0])
      ++kept;
    if (kept >= 1 && kept < cols) {
      const uint64_t keep = bits[0], masked = bits[kept];
      const int64_t diagonal = kept - 1;
      bool causal = true;
      for (int64_t k = 0; causal && k < form.count; ++k) {
        int64_t i = (k / cols) % rows, j = k % cols;
        causal = bits[k] == (j - i <= diagonal ? keep : masked);
      }
      if (causal) {
        form.kind = ConstantForm::CausalMask;
        form.keep = keep;
        form.masked = masked;
        form.batch = form.count / (rows * cols);
        form.rows = rows;
        form.cols = cols;
        form.diagonal = diagonal;
        return form;
      }
    }
  }
  // An iota along the last dimension, repeated over the others.
  if (elem.isInteger(64) && shape.back() >= 2) {
    const int64_t period = shape.back();
    const int64_t start = static_cast<int64_t>(bits[0]), step = static_cast<int64_t>(bits[1] - bits[0]);
    bool iota = true;
    for (int64_t k = 0; iota && k < form.count; ++k)
      iota = static_cast<int64_t>(bits[k]) == start + (k % period) * step;
    if (iota) {
      form.kind = ConstantForm::Iota;
      form.period = period;
      form.start = start;
      form.step = step;
      return form;
    }
  }
  form.kind = ConstantForm::File;
  return form;
}

std::string mlir::ptrain::constantBytes(DenseElementsAttr attr) {
  std::vector<uint64_t> bits = elementBits(attr);
  const int64_t elemBytes = elementBytes(attr.getElementType());
  std::string out(bits.size() * elemBytes, '\0');
  for (size_t i = 0; i < bits.size(); ++i) {
    // Little-endian hosts only (x86-64, AArch64), as the runtime's checkpoints.
    std::memcpy(&out[i * elemBytes], &bits[i], static_cast<size_t>(elemBytes));
  }
  return out;
}
