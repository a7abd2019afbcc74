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
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
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
  if (elementType.isF16())
    return DType::F16;
  if (elementType.isBF16())
    return DType::BF16;
  if (elementType.isInteger(1))
    return DType::I1;
  if (elementType.isSignlessInteger(8) || elementType.isSignedInteger(8))
    return DType::I8;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "unsupported element type " << elementType
     << " (the interpreter evaluates f32, f64, f16, bf16, i8, i32, i64 and i1)";
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
  case DType::F16:
    return Float16Type::get(ctx);
  case DType::BF16:
    return BFloat16Type::get(ctx);
  case DType::I1:
    return IntegerType::get(ctx, 1);
  case DType::I8:
    return IntegerType::get(ctx, 8);
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

llvm::Expected<Tensor> Tensor::fromInts(DType dtype, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> values) {
  if (dtype == DType::I32) {
    for (int64_t v : values)
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        return makeError("value " + llvm::Twine(v) + " does not fit in i32");
  }
  if (dtype == DType::I8) {
    for (int64_t v : values)
      if (v < std::numeric_limits<int8_t>::min() || v > std::numeric_limits<int8_t>::max())
        return makeError("value " + llvm::Twine(v) + " does not fit in i8");
  }
  if (dtype == DType::I1) {
    for (int64_t v : values)
      if (v != 0 && v != 1)
        return makeError("value " + llvm::Twine(v) + " is not an i1 (0 or 1)");
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

double mlir::ptrain::interp::roundToFloatDType(DType dtype, double value) {
  switch (dtype) {
  case DType::F32:
    return static_cast<double>(static_cast<float>(value));
  case DType::F16:
  case DType::BF16: {
    APFloat f(value);
    bool lostInfo;
    f.convert(dtype == DType::F16 ? APFloat::IEEEhalf() : APFloat::BFloat(), APFloat::rmNearestTiesToEven, &lostInfo);
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lostInfo);
    return f.convertToDouble();
  }
  default:
    return value;
  }
}

void Tensor::roundToDType() {
  if (!isFloat() || dtype == DType::F64)
    return;
  for (double &v : floatData)
    v = roundToFloatDType(dtype, v);
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
  // i1 is read unsigned (1, not -1).
  auto toInt = [&](const APInt &v) {
    return *dtype == DType::I1 ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue();
  };
  if (attr.isSplat()) {
    values.assign(n, toInt(attr.getSplatValue<APInt>()));
  } else {
    for (const APInt &v : attr.getValues<APInt>())
      values.push_back(toInt(v));
  }
  return Tensor::fromInts(*dtype, type.getShape(), values);
}

DenseElementsAttr mlir::ptrain::interp::denseElementsFromTensor(const Tensor &tensor, MLIRContext *ctx) {
  Type elt = dtypeToMLIR(tensor.getDType(), ctx);
  auto type = RankedTensorType::get(tensor.getShape(), elt);
  if (tensor.getDType() == DType::I1) {
    llvm::SmallVector<bool> values(llvm::map_range(tensor.ints(), [](int64_t v) { return v != 0; }));
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
  }
  if (tensor.isFloat()) {
    auto floatType = llvm::cast<FloatType>(elt);
    llvm::SmallVector<APFloat> values;
    values.reserve(tensor.getNumElements());
    for (double v : tensor.floats()) {
      APFloat f(v);
      bool lostInfo;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lostInfo);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = elt.getIntOrFloatBitWidth();
  llvm::SmallVector<APInt> values;
  values.reserve(tensor.getNumElements());
  for (int64_t v : tensor.ints())
    values.push_back(APInt(width, static_cast<uint64_t>(v), /*isSigned=*/true, /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, values);
}
