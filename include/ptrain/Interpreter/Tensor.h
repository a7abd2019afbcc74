//===- Tensor.h - dense host tensors for the reference interpreter -*- C++ -*-===//
//
// The value type of the reference interpreter: a static shape, an element type and row-major storage.
// Float tensors keep their elements as doubles; an f32 tensor holds only values representable in f32 (every
// kernel rounds its result once, after computing in double), so the interpreter is an f32 model with exact
// accumulation. Integer tensors (ids, labels) keep int64 elements.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_TENSOR_H
#define PTRAIN_INTERPRETER_TENSOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::ptrain::interp {

/// The element types the interpreter evaluates. Floats (f32, f64, f16, bf16) are computed in double and
/// rounded to the element type (round to nearest even); i8, i32 and i64 are kept as int64 (i8 and i32 values
/// are range-checked on creation); i1 (masks, ONNX BOOL) is kept as int64 0 or 1. i8 holds packed codec bytes
/// (quantization codes), as signed values.
enum class DType { F32, F64, I32, I64, F16, BF16, I1, I8 };

/// Returns "f32", "f64", "i32", "i64", "f16", "bf16", "i1" or "i8".
llvm::StringRef stringifyDType(DType dtype);
/// Whether `dtype` is a float type (f32, f64, f16, bf16).
inline bool isFloatDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::F16 || dtype == DType::BF16;
}
/// Rounds `value` to the nearest value of the float `dtype` (ties to even); unchanged for f64.
double roundToFloatDType(DType dtype, double value);
/// The DType of an MLIR element type, or an error naming the unsupported type.
llvm::Expected<DType> dtypeFromMLIR(Type elementType);
/// The MLIR element type of `dtype`.
Type dtypeToMLIR(DType dtype, MLIRContext *ctx);

/// Number of elements of `shape` (1 for rank 0).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// Row-major strides of `shape`, in elements.
llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);
/// Formats a shape as `4x64x256` (`scalar` for rank 0).
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// A dense, row-major host tensor. Copyable; moves are cheap.
class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor of `shape` and `dtype`.
  Tensor(DType dtype, llvm::ArrayRef<int64_t> shape);

  /// A float tensor from values; each value is rounded to `dtype` (F32 or F64).
  static Tensor fromFloats(DType dtype, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values);
  /// An integer tensor from values (I8, I32, I64 or I1); an I8 or I32 value out of range, or an I1 value
  /// other than 0 and 1, is an error.
  static llvm::Expected<Tensor> fromInts(DType dtype, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> values);

  DType getDType() const { return dtype; }
  bool isFloat() const { return isFloatDType(dtype); }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
  int64_t getNumElements() const { return numElements(shape); }
  /// `tensor<4x64xf32>`: the MLIR spelling of the type, for diagnostics.
  std::string getTypeString() const;
  /// Whether this tensor's shape and element type are those of `type`.
  bool hasType(RankedTensorType type) const;

  /// Float storage (float tensors only).
  llvm::ArrayRef<double> floats() const { return floatData; }
  llvm::MutableArrayRef<double> floats() { return floatData; }
  /// Integer storage (integer tensors only).
  llvm::ArrayRef<int64_t> ints() const { return intData; }
  llvm::MutableArrayRef<int64_t> ints() { return intData; }

  /// Element `i` in row-major order as a double, whatever the element type.
  double getAsDouble(int64_t i) const { return isFloat() ? floatData[i] : static_cast<double>(intData[i]); }
  /// Rounds every float element to the element type (a no-op for f64 and integers).
  void roundToDType();

  /// The tensor with the same elements and another shape of the same element count.
  Tensor reshaped(llvm::ArrayRef<int64_t> newShape) const;
  /// A tensor of `newShape` whose element j is this tensor's element `sourceIndex[j]`.
  Tensor gather(llvm::ArrayRef<int64_t> newShape, llvm::ArrayRef<int64_t> sourceIndex) const;

  /// max |x| over the elements (0 for an empty tensor; NaN if an element is NaN).
  double maxAbs() const;

private:
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<double> floatData;
  std::vector<int64_t> intData;
};

/// The value of a dense elements attribute (splats included, `-inf` and NaN kept): its shape must be static
/// and its element type one of the DTypes.
llvm::Expected<Tensor> tensorFromDenseElements(DenseElementsAttr attr);

/// The dense elements attribute holding `tensor`'s values (the inverse of tensorFromDenseElements); its type is
/// the tensor's shape and element type.
DenseElementsAttr denseElementsFromTensor(const Tensor &tensor, MLIRContext *ctx);

/// Makes an llvm::StringError with `message` (the interpreter's error category is inconvertibleErrorCode).
llvm::Error makeError(const llvm::Twine &message);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_TENSOR_H
