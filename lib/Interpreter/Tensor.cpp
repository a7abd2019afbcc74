//===- Tensor.cpp - dense host tensors for the reference interpreter ------===//

#include "ptrain/Interpreter/Tensor.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::ptrain::interp;

llvm::Error mlir::ptrain::interp::makeError(const llvm::Twine &message) {
  return llvm::make_error<llvm::StringError>(message, llvm::inconvertibleErrorCode());
}

llvm::StringRef mlir::ptrain::interp::stringifyDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

llvm::Expected<DType> mlir::ptrain::interp::dtypeFromMLIR(Type elementType) {
  if (elementType.isF32())
    return DType::F32;
  if (elementType.isF64())
    return DType::F64;
  if (elementType.isSignlessInteger(64) || elementType.isSignedInteger(64))
    return DType::I64;
  if (elementType.isSignlessInteger(32) || elementType.isSignedInteger(32))
    return DType::I32;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "unsupported element type " << elementType << " (the interpreter evaluates f32, f64, i32 and i64)";
  return makeError(text);
}

Type mlir::ptrain::interp::dtypeToMLIR(DType dtype, MLIRContext *ctx) {
  switch (dtype) {
  case DType::F32:
    return Float32Type::get(ctx);
  case DType::F64:
    return Float64Type::get(ctx);
  case DType::I32:
    return IntegerType::get(ctx, 32);
  case DType::I64:
    return IntegerType::get(ctx, 64);
  }
  return {};
}

int64_t mlir::ptrain::interp::numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

llvm::SmallVector<int64_t> mlir::ptrain::interp::rowMajorStrides(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::string mlir::ptrain::interp::formatShape(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(shape, os, "x");
  return text;
}

Tensor::Tensor(DType dtype, llvm::ArrayRef<int64_t> shape) : dtype(dtype), shape(shape) {
  if (isFloat())
    floatData.assign(numElements(shape), 0.0);
  else
    intData.assign(numElements(shape), 0);
}

Tensor Tensor::fromFloats(DType dtype, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values) {
  Tensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  t.floatData.assign(values.begin(), values.end());
  t.roundToDType();
  return t;
}

llvm::Expected<Tensor> Tensor::fromInts(DType dtype, llvm::ArrayRef<int64_t> shape,
                                        llvm::ArrayRef<int64_t> values) {
  if (dtype == DType::I32) {
    for (int64_t v : values)
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        return makeError("value " + llvm::Twine(v) + " does not fit in i32");
  }
  Tensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  t.intData.assign(values.begin(), values.end());
  return t;
}

std::string Tensor::getTypeString() const {
  std::string text = "tensor<";
  for (int64_t d : shape)
    text += std::to_string(d) + "x";
  text += stringifyDType(dtype).str() + ">";
  return text;
}

bool Tensor::hasType(RankedTensorType type) const {
  if (!type.hasStaticShape() || type.getShape() != llvm::ArrayRef<int64_t>(shape))
    return false;
  llvm::Expected<DType> expected = dtypeFromMLIR(type.getElementType());
  if (!expected) {
    llvm::consumeError(expected.takeError());
    return false;
  }
  return *expected == dtype;
}

void Tensor::roundToDType() {
  if (dtype != DType::F32)
    return;
  for (double &v : floatData)
    v = static_cast<double>(static_cast<float>(v));
}

Tensor Tensor::reshaped(llvm::ArrayRef<int64_t> newShape) const {
  Tensor t = *this;
  t.shape.assign(newShape.begin(), newShape.end());
  return t;
}

Tensor Tensor::gather(llvm::ArrayRef<int64_t> newShape, llvm::ArrayRef<int64_t> sourceIndex) const {
  Tensor t;
  t.dtype = dtype;
  t.shape.assign(newShape.begin(), newShape.end());
  if (isFloat()) {
    t.floatData.reserve(sourceIndex.size());
    for (int64_t i : sourceIndex)
      t.floatData.push_back(floatData[i]);
  } else {
    t.intData.reserve(sourceIndex.size());
    for (int64_t i : sourceIndex)
      t.intData.push_back(intData[i]);
  }
  return t;
}

double Tensor::maxAbs() const {
  double m = 0.0;
  for (int64_t i = 0, e = getNumElements(); i < e; ++i) {
    double a = std::fabs(getAsDouble(i));
    if (std::isnan(a))
      return a;
    m = std::max(m, a);
  }
  return m;
}

llvm::Expected<Tensor> mlir::ptrain::interp::tensorFromDenseElements(DenseElementsAttr attr) {
  auto type = llvm::dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape())
    return makeError("a constant needs a static tensor type");
  llvm::Expected<DType> dtype = dtypeFromMLIR(type.getElementType());
  if (!dtype)
    return dtype.takeError();
  int64_t n = type.getNumElements();
  if (isFloatDType(*dtype)) {
    std::vector<double> values;
    values.reserve(n);
    if (attr.isSplat()) {
      values.assign(n, attr.getSplatValue<APFloat>().convertToDouble());
    } else {
      for (const APFloat &v : attr.getValues<APFloat>())
        values.push_back(v.convertToDouble());
    }
    return Tensor::fromFloats(*dtype, type.getShape(), values);
  }
  std::vector<int64_t> values;
  values.reserve(n);
  if (attr.isSplat()) {
    values.assign(n, attr.getSplatValue<APInt>().getSExtValue());
  } else {
    for (const APInt &v : attr.getValues<APInt>())
      values.push_back(v.getSExtValue());
  }
  return Tensor::fromInts(*dtype, type.getShape(), values);
}
