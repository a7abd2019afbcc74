//===- EmbeddedWeights.cpp - leave embedded weights in the model file -----===//
//
// The wire-format scanner is shared with the runtime's initial-state loader (include/ptrain/Runtime/
// OnnxWire.h, plain C++); this file rewrites the model with it. StringStringEntryProto key = 1, value = 2.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Import/ONNX/EmbeddedWeights.h"
#include "ptrain/Runtime/OnnxWire.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

using namespace mlir::ptrain::onnx_data;
namespace wire = ptrain::onnx_wire;

namespace {

void appendSlice(std::string &out, std::string_view slice) { out.append(slice.data(), slice.size()); }

/// A StringStringEntryProto {key, value}.
void putEntry(std::string &out, llvm::StringRef key, llvm::StringRef value) {
  std::string entry;
  wire::putBytes(entry, 1, key);
  wire::putBytes(entry, 2, value);
  wire::putBytes(out, wire::field::kTensorExternalData, entry);
}

bool isFloatDataType(uint64_t dataType) {
  // onnx.proto TensorProto.DataType: FLOAT = 1, FLOAT16 = 10, DOUBLE = 11, BFLOAT16 = 16.
  return dataType == 1 || dataType == 10 || dataType == 11 || dataType == 16;
}

class Rewriter {
public:
  Rewriter(const wire::ByteSource &bytes, llvm::StringRef selfLocation)
      : bytes(bytes), scanner(bytes), selfLocation(selfLocation) {}

  llvm::Error model(size_t begin, size_t end, std::string &out) {
    for (size_t pos = begin; pos < end;) {
      wire::Field field;
      if (!scanner.next(pos, end, field, "ModelProto", scanError))
        return llvm::createStringError(scanError);
      if (field.number == wire::field::kModelGraph && field.wireType == wire::LengthDelimited) {
        std::string graphBytes;
        if (llvm::Error error = graph(field.payload, field.end, graphBytes))
          return error;
        wire::putBytes(out, wire::field::kModelGraph, graphBytes);
        continue;
      }
      appendSlice(out, scanner.slice(field.begin, field.end));
    }
    return llvm::Error::success();
  }

  ExternalizedWeights result;

private:
  llvm::Error graph(size_t begin, size_t end, std::string &out) {
    for (size_t pos = begin; pos < end;) {
      wire::Field field;
      if (!scanner.next(pos, end, field, "GraphProto", scanError))
        return llvm::createStringError(scanError);
      if (field.number == wire::field::kGraphInitializer && field.wireType == wire::LengthDelimited) {
        wire::InitializerRecord record;
        if (!wire::scanInitializer(bytes, field.payload, field.end, record, scanError))
          return llvm::createStringError(scanError);
        if (movable(record)) {
          wire::putBytes(out, wire::field::kGraphInitializer, moved(record));
          continue;
        }
      }
      appendSlice(out, scanner.slice(field.begin, field.end));
    }
    return llvm::Error::success();
  }

  /// A float tensor with enough raw_data, not already external.
  static bool movable(const wire::InitializerRecord &r) {
    return r.hasRawData && !r.external && isFloatDataType(r.dataType) &&
           r.rawEnd - r.rawPayload >= kMinExternalizedBytes;
  }

  /// The initializer without its raw_data, pointing at those bytes of the model file instead.
  std::string moved(const wire::InitializerRecord &r) {
    std::string out = wire::withoutRawData(bytes, r);
    uint64_t length = r.rawEnd - r.rawPayload;
    putEntry(out, "location", selfLocation);
    putEntry(out, "offset", std::to_string(r.rawPayload));
    putEntry(out, "length", std::to_string(length));
    wire::putTag(out, wire::field::kTensorDataLocation, wire::Varint);
    wire::putVarint(out, 1); // DataLocation EXTERNAL
    ++result.tensors;
    result.bytes += length;
    return out;
  }

  const wire::ByteSource &bytes;
  wire::Scanner scanner;
  llvm::StringRef selfLocation;
  std::string scanError;
};

} // namespace

static llvm::Expected<ExternalizedWeights> externalize(const wire::ByteSource &bytes, llvm::StringRef selfLocation) {
  Rewriter rewriter(bytes, selfLocation);
  if (llvm::Error error = rewriter.model(0, bytes.size(), rewriter.result.model))
    return std::move(error);
  return std::move(rewriter.result);
}

llvm::Expected<ExternalizedWeights> mlir::ptrain::onnx_data::externalizeEmbeddedWeights(llvm::StringRef bytes,
                                                                                        llvm::StringRef selfLocation) {
  return externalize(wire::ByteSource::memory(bytes), selfLocation);
}

llvm::Expected<ExternalizedWeights> mlir::ptrain::onnx_data::externalizeEmbeddedWeightsFromFile(llvm::StringRef path) {
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::openFileForRead(path, fd))
    return llvm::createStringError(ec, "cannot open '" + path + "': " + ec.message());
  uint64_t size = 0;
  std::error_code ec = llvm::sys::fs::file_size(path, size);
  wire::ByteSource source = wire::ByteSource::file(fd, static_cast<size_t>(size));
  llvm::Expected<ExternalizedWeights> result =
      ec ? llvm::Expected<ExternalizedWeights>(llvm::createStringError(ec, "cannot size '" + path + "'"))
         : externalize(source, llvm::sys::path::filename(path));
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  if (result && source.failed())
    return llvm::createStringError("cannot read '" + path + "'");
  return result;
}
