//===- CppTypes.h - Tensor types as C buffers in the CPU code generator -*- C++ -*-===//
//
// How --emit-cpp stores a tensor: a dense row-major buffer of one C element
// type per MLIR element type. Model tensors are f32 or i64 (inside a function
// also i1 masks, stored as uint8_t 0 or 1); codec codes add
// i32 (top-k indices), i8 (packed quantization codes, stored as uint8_t) and
// f16 / bf16 (cast codes, stored as uint16_t bit patterns, as the runtime's
// ptrain_cast_* calls take them).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_CPPTYPES_H
#define PTRAIN_TARGET_COMMON_CPPTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTypes.h"

#include "Common/EmitHelpers.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace mlir::ptrain::target {

/// Element types of model tensors (arguments, states, model ops).
inline bool isModelElementType(Type t) { return t.isF32() || t.isInteger(64); }

/// Element types of codec codes, beside the model's.
inline bool isCodeElementType(Type t) { return t.isInteger(32) || t.isInteger(8) || t.isF16() || t.isBF16(); }

/// Element type of masks (ptrain.compare, ptrain.select's condition): one uint8_t, 0 or 1, per element.
inline bool isMaskElementType(Type t) { return t.isInteger(1); }

/// Bytes of one element of a supported element type.
inline int64_t elementBytes(Type t) {
  if (t.isInteger(64))
    return 8;
  if (t.isInteger(8) || t.isInteger(1))
    return 1;
  if (t.isF16() || t.isBF16())
    return 2;
  return 4; // f32, i32
}

/// The C type of one element of a supported element type.
inline const char *elementCType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isInteger(64))
    return "int64_t";
  if (t.isInteger(32))
    return "int32_t";
  if (t.isInteger(8) || t.isInteger(1))
    return "uint8_t";
  return "uint16_t"; // f16, bf16: bit patterns
}

/// The tensor a value holds: its own type, or the value a request yields (the receive/reduce buffer).
inline RankedTensorType tensorOf(Value v) {
  Type t = v.getType();
  if (auto request = dyn_cast<RequestType>(t))
    t = request.getValueType();
  return cast<RankedTensorType>(t);
}

/// The static shape of the tensor a value holds (tensorOf).
inline ArrayRef<int64_t> shapeOf(Value v) { return tensorOf(v).getShape(); }

inline int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline int64_t countOf(Value v) { return numElements(tensorOf(v).getShape()); }
inline int64_t bytesOf(Value v) { return countOf(v) * elementBytes(tensorOf(v).getElementType()); }

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_CPPTYPES_H
