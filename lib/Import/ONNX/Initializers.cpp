//===- Initializers.cpp - ONNX tensor data: .pb files and initializers ---===//
//
// TensorProto decoding (inline and external data) with protobuf's bool-returning parser; no exceptions.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Import/ONNX/Initializers.h"

#include "ptrain/Import/ONNX/EmbeddedWeights.h"
#include "ptrain/Interpreter/StateDefaults.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_data;
using interp::DType;
using interp::makeError;
using interp::Tensor;

/// The interpreter element type of an ONNX TensorProto data type.
static llvm::Expected<DType> dtypeFromONNX(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  case onnx::TensorProto::BOOL:
    return DType::I1;
  default:
    return makeError("unsupported data type " + llvm::Twine(dataType) + " (" +
                     onnx::TensorProto::DataType_Name(dataType) +
                     "); supported: FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT32, INT64, BOOL");
  }
}

static size_t elementBytes(DType dtype) {
  switch (dtype) {
  case DType::I1:
  case DType::I8:
    return 1;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  return 8;
}

/// The value of the 16-bit float `bits` (IEEE half or bfloat16).
static double halfBitsToDouble(DType dtype, uint16_t bits) {
  llvm::APFloat f(dtype == DType::F16 ? llvm::APFloat::IEEEhalf() : llvm::APFloat::BFloat(), llvm::APInt(16, bits));
  bool lostInfo;
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lostInfo);
  return f.convertToDouble();
}

/// Decodes little-endian bytes (raw_data or external data) into a tensor.
static llvm::Expected<Tensor> fromBytes(DType dtype, llvm::ArrayRef<int64_t> shape, llvm::StringRef bytes) {
  int64_t n = interp::numElements(shape);
  if (bytes.size() != static_cast<size_t>(n) * elementBytes(dtype))
    return makeError("holds " + llvm::Twine(bytes.size()) + " bytes, the shape " + interp::formatShape(shape) + " of " +
                     interp::stringifyDType(dtype) + " needs " +
                     llvm::Twine(static_cast<size_t>(n) * elementBytes(dtype)));
  const char *p = bytes.data();
  using namespace llvm::support;
  switch (dtype) {
  case DType::F32: {
    std::vector<double> values(n);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits = endian::read32le(p + 4 * i);
      float f;
      std::memcpy(&f, &bits, 4);
      values[i] = f;
    }
    return Tensor::fromFloats(dtype, shape, values);
  }
  case DType::F64: {
    std::vector<double> values(n);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t bits = endian::read64le(p + 8 * i);
      std::memcpy(&values[i], &bits, 8);
    }
    return Tensor::fromFloats(dtype, shape, values);
  }
  case DType::I32: {
    std::vector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = static_cast<int32_t>(endian::read32le(p + 4 * i));
    return Tensor::fromInts(dtype, shape, values);
  }
  case DType::I64: {
    std::vector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = static_cast<int64_t>(endian::read64le(p + 8 * i));
    return Tensor::fromInts(dtype, shape, values);
  }
  case DType::F16:
  case DType::BF16: {
    std::vector<double> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = halfBitsToDouble(dtype, endian::read16le(p + 2 * i));
    return Tensor::fromFloats(dtype, shape, values);
  }
  case DType::I1: {
    std::vector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = p[i] != 0;
    return Tensor::fromInts(dtype, shape, values);
  }
  case DType::I8: // no ONNX data type maps to it (codec codes only)
    break;
  }
  return makeError("unknown element type");
}

/// Decodes the typed repeated fields (float_data, double_data, int32_data, int64_data).
template <typename Field>
static llvm::Expected<Tensor> fromField(DType dtype, llvm::ArrayRef<int64_t> shape, const Field &field) {
  int64_t n = interp::numElements(shape);
  if (field.size() != n)
    return makeError("holds " + llvm::Twine(field.size()) + " values, the shape " + interp::formatShape(shape) +
                     " needs " + llvm::Twine(n));
  if (interp::isFloatDType(dtype))
    return Tensor::fromFloats(dtype, shape, std::vector<double>(field.begin(), field.end()));
  return Tensor::fromInts(dtype, shape, std::vector<int64_t>(field.begin(), field.end()));
}

/// Decodes a TensorProto whose data is inline; `external` supplies the bytes of EXTERNAL data.
static llvm::Expected<Tensor>
decodeTensor(const onnx::TensorProto &proto,
             llvm::function_ref<llvm::Expected<llvm::StringRef>(const onnx::TensorProto &)> external) {
  llvm::Expected<DType> dtype = dtypeFromONNX(proto.data_type());
  if (!dtype)
    return dtype.takeError();
  llvm::SmallVector<int64_t> shape;
  for (int64_t d : proto.dims()) {
    if (d < 0)
      return makeError("has a negative dimension " + llvm::Twine(d));
    shape.push_back(d);
  }
  if (proto.has_segment())
    return makeError("is segmented, which is not supported");
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    llvm::Expected<llvm::StringRef> bytes = external(proto);
    if (!bytes)
      return bytes.takeError();
    return fromBytes(*dtype, shape, *bytes);
  }
  if (proto.has_raw_data())
    return fromBytes(*dtype, shape, proto.raw_data());
  switch (*dtype) {
  case DType::F32:
    return fromField(*dtype, shape, proto.float_data());
  case DType::F64:
    return fromField(*dtype, shape, proto.double_data());
  case DType::I32:
    return fromField(*dtype, shape, proto.int32_data());
  case DType::I64:
    return fromField(*dtype, shape, proto.int64_data());
  case DType::I1:
    return fromField(*dtype, shape, proto.int32_data());
  case DType::F16:
  case DType::BF16: {
    // int32_data holds the 16-bit patterns (onnx.proto, TensorProto.int32_data).
    if (proto.int32_data_size() != interp::numElements(shape))
      return makeError("holds " + llvm::Twine(proto.int32_data_size()) + " values, the shape " +
                       interp::formatShape(shape) + " needs " + llvm::Twine(interp::numElements(shape)));
    std::vector<double> values;
    for (int32_t bits : proto.int32_data())
      values.push_back(halfBitsToDouble(*dtype, static_cast<uint16_t>(bits)));
    return Tensor::fromFloats(*dtype, shape, values);
  }
  case DType::I8: // no ONNX data type maps to it (codec codes only)
    break;
  }
  return makeError("unknown element type");
}

template <typename Message> static llvm::Error parseFile(llvm::StringRef path, Message &message, llvm::StringRef what) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(path + ": cannot read: " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return makeError(path + ": file of " + llvm::Twine(bytes.size()) + " bytes is too large to parse");
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return makeError(path + ": not a valid ONNX " + what + " (protobuf parse failed)");
  return llvm::Error::success();
}

llvm::Expected<Tensor> mlir::ptrain::onnx_data::readTensorProtoFile(llvm::StringRef path) {
  onnx::TensorProto proto;
  if (llvm::Error error = parseFile(path, proto, "TensorProto"))
    return std::move(error);
  auto noExternal = [&](const onnx::TensorProto &) -> llvm::Expected<llvm::StringRef> {
    return makeError("uses external data, which a standalone TensorProto file cannot resolve");
  };
  llvm::Expected<Tensor> tensor = decodeTensor(proto, noExternal);
  if (!tensor)
    return makeError(path + ": tensor '" + proto.name() + "' " + llvm::toString(tensor.takeError()));
  return tensor;
}

ONNXInitializers::ONNXInitializers() : model(std::make_unique<onnx::ModelProto>()) {}
ONNXInitializers::~ONNXInitializers() = default;
ONNXInitializers::ONNXInitializers(ONNXInitializers &&) = default;
ONNXInitializers &ONNXInitializers::operator=(ONNXInitializers &&) = default;

/// The path external data at `location` (relative to the model's folder) has.
static llvm::SmallString<256> externalPath(llvm::StringRef modelPath, llvm::StringRef location) {
  llvm::SmallString<256> path(llvm::sys::path::parent_path(modelPath));
  llvm::sys::path::append(path, location);
  return path;
}

llvm::Expected<ONNXInitializers> ONNXInitializers::open(llvm::StringRef modelPath) {
  ONNXInitializers result;
  result.modelPath = modelPath.str();
  // The model file is memory-mapped and its embedded float weights are not parsed (copied) but become
  // external data in the file itself (EmbeddedWeights.h): read() decodes them from the mapping. The scan
  // reads the file with pread, so only the weights read() decodes become resident.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(modelPath, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(modelPath + ": cannot read: " + buffer.getError().message());
  llvm::StringRef self = llvm::sys::path::filename(modelPath);
  llvm::Expected<ExternalizedWeights> stripped = externalizeEmbeddedWeightsFromFile(modelPath);
  if (!stripped)
    return makeError(modelPath + ": " + llvm::toString(stripped.takeError()));
  if (stripped->model.size() > static_cast<size_t>(INT32_MAX))
    return makeError(modelPath + ": a model of " + llvm::Twine(stripped->model.size()) +
                     " bytes without its embedded weights is too large to parse");
  if (!result.model->ParseFromString(stripped->model))
    return makeError(modelPath + ": not a valid ONNX model (protobuf parse failed)");
  result.externalFiles.try_emplace(externalPath(modelPath, self), std::move(*buffer));
  for (const onnx::TensorProto &init : result.model->graph().initializer())
    if (!result.byName.try_emplace(init.name(), &init).second)
      return makeError(modelPath + ": initializer '" + init.name() + "' appears twice");
  return std::move(result);
}

bool ONNXInitializers::contains(llvm::StringRef name) const { return byName.count(name); }

std::vector<std::string> ONNXInitializers::getNames() const {
  std::vector<std::string> names;
  for (const onnx::TensorProto &init : model->graph().initializer())
    names.push_back(init.name());
  return names;
}

/// The bytes of `t`'s EXTERNAL data (location, offset, length relative to the model's folder), the file mapped
/// and cached; an error for a bad entry, a location outside the folder, a missing file or a range past its end.
llvm::Expected<llvm::StringRef> ONNXInitializers::externalBytes(const onnx::TensorProto &t, std::string *out_path,
                                                                uint64_t *out_offset) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto &entry : t.external_data()) {
    llvm::StringRef key = entry.key(), value = entry.value();
    if (key == "location") {
      location = value.str();
    } else if (key == "offset" || key == "length") {
      uint64_t number;
      if (value.getAsInteger(10, number))
        return makeError("has a bad external data " + key + " '" + value + "'");
      if (key == "offset")
        offset = number;
      else
        length = number;
    }
  }
  if (location.empty())
    return makeError("has external data without a location");
  if (llvm::sys::path::is_absolute(location))
    return makeError("has an absolute external data location '" + location + "'");
  // Locations are relative to the model's folder and stay inside it (onnx::checker refuses them too).
  if (llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location), llvm::sys::path::end(location)), ".."))
    return makeError("has the external data location '" + location +
                     "', outside the model's folder (a '..' component)");
  llvm::SmallString<256> path = externalPath(modelPath, location);
  if (out_path)
    *out_path = path.str().str();
  if (out_offset)
    *out_offset = offset;
  auto cached = externalFiles.find(path);
  if (cached == externalFiles.end()) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buffer)
      return makeError("has external data in '" + path + "', which cannot be read: " + buffer.getError().message());
    cached = externalFiles.try_emplace(path, std::move(*buffer)).first;
  }
  llvm::StringRef data = cached->second->getBuffer();
  uint64_t size = length ? *length : (offset <= data.size() ? data.size() - offset : 0);
  if (offset > data.size() || size > data.size() - offset)
    return makeError("has external data [" + llvm::Twine(offset) + ", " + llvm::Twine(offset + size) +
                     ") past the end of '" + path + "' (" + llvm::Twine(data.size()) + " bytes)");
  return data.substr(offset, size);
}

llvm::Error ONNXInitializers::checkExternalData() {
  for (const onnx::TensorProto &init : model->graph().initializer()) {
    if (init.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    auto fail = [&](const llvm::Twine &why) {
      return makeError(modelPath + ": initializer '" + init.name() + "' " + why);
    };
    std::string path;
    uint64_t offset = 0;
    llvm::Expected<llvm::StringRef> bytes = externalBytes(init, &path, &offset);
    if (!bytes)
      return fail(llvm::toString(bytes.takeError()));
    llvm::Expected<DType> dtype = dtypeFromONNX(init.data_type());
    if (!dtype)
      return fail(llvm::toString(dtype.takeError()));
    llvm::SmallVector<int64_t> shape;
    for (int64_t d : init.dims()) {
      if (d < 0)
        return fail("has a negative dimension " + llvm::Twine(d));
      shape.push_back(d);
    }
    size_t need = static_cast<size_t>(interp::numElements(shape)) * elementBytes(*dtype);
    if (bytes->size() != need)
      return fail("has " + llvm::Twine(bytes->size()) + " bytes of external data at [" + llvm::Twine(offset) + ", " +
                  llvm::Twine(offset + bytes->size()) + ") of '" + path + "'; the shape " + interp::formatShape(shape) + " of " +
                  interp::stringifyDType(*dtype) + " needs " + llvm::Twine(need));
  }
  return llvm::Error::success();
}

llvm::Expected<Tensor> ONNXInitializers::read(llvm::StringRef name) {
  auto it = byName.find(name);
  if (it == byName.end())
    return llvm::make_error<interp::MissingStateError>(modelPath + ": no initializer named '" + name.str() + "'");
  const onnx::TensorProto &proto = *it->second;

  auto external = [&](const onnx::TensorProto &t) { return externalBytes(t); };
  llvm::Expected<Tensor> tensor = decodeTensor(proto, external);
  if (!tensor)
    return makeError(modelPath + ": initializer '" + name + "' " + llvm::toString(tensor.takeError()));
  return tensor;
}
