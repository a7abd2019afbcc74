//===- EmbeddedWeights.cpp - leave embedded weights in the model file -----===//
//
// A hand-written scanner of protobuf's wire format (https://protobuf.dev/programming-guides/encoding/): a
// message is a sequence of fields, each a varint tag (field number << 3 | wire type) followed by a varint
// (type 0), 8 bytes (1), a varint length and that many bytes (2, sub-messages, strings, bytes) or 4 bytes (5).
// Field numbers are onnx.proto's: ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.data_type = 2,
// raw_data = 9, external_data = 13, data_location = 14; StringStringEntryProto key = 1, value = 2.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Import/ONNX/EmbeddedWeights.h"

#include "llvm/ADT/Twine.h"

#include <optional>

using namespace mlir::ptrain::onnx_data;

namespace {

enum WireType : unsigned { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

/// One field of a message: its tag starts at `begin`, its payload at `payload`, the next field at `end`.
struct Field {
  uint64_t number = 0;
  unsigned wireType = 0;
  size_t begin = 0, payload = 0, end = 0;
  uint64_t value = 0; // the varint of wire type 0
};

/// Reads fields of the messages inside `bytes`; positions are offsets into `bytes`.
class WireScanner {
public:
  explicit WireScanner(llvm::StringRef bytes) : bytes(bytes) {}

  /// Reads the field at `pos` of a message ending at `limit` and moves `pos` past it.
  llvm::Error next(size_t &pos, size_t limit, Field &field, llvm::StringRef what) const {
    field.begin = pos;
    uint64_t tag;
    if (!varint(pos, limit, tag))
      return malformed(field.begin, what, "a truncated field tag");
    field.number = tag >> 3;
    field.wireType = tag & 7;
    if (field.number == 0)
      return malformed(field.begin, what, "field number 0");
    switch (field.wireType) {
    case Varint:
      field.payload = pos;
      if (!varint(pos, limit, field.value))
        return malformed(field.begin, what, "a truncated varint");
      break;
    case Fixed64:
    case Fixed32: {
      size_t size = field.wireType == Fixed64 ? 8 : 4;
      field.payload = pos;
      if (limit - pos < size)
        return malformed(field.begin, what, "a truncated fixed-size field");
      pos += size;
      break;
    }
    case LengthDelimited: {
      uint64_t length;
      if (!varint(pos, limit, length))
        return malformed(field.begin, what, "a truncated length");
      field.payload = pos;
      if (length > limit - pos)
        return malformed(field.begin, what,
                         "field " + llvm::Twine(field.number) + " of " + llvm::Twine(length) +
                             " bytes past the end of the message (" + llvm::Twine(limit - pos) + " bytes left)");
      pos += length;
      break;
    }
    default:
      return malformed(field.begin, what,
                       "wire type " + llvm::Twine(field.wireType) + " (groups are not used by ONNX)");
    }
    field.end = pos;
    return llvm::Error::success();
  }

  llvm::StringRef slice(size_t begin, size_t end) const { return bytes.substr(begin, end - begin); }

private:
  bool varint(size_t &pos, size_t limit, uint64_t &value) const {
    value = 0;
    for (unsigned shift = 0; shift < 64 && pos < limit; shift += 7) {
      uint8_t byte = static_cast<uint8_t>(bytes[pos++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false;
  }

  static llvm::Error malformed(size_t offset, llvm::StringRef what, const llvm::Twine &problem) {
    return llvm::createStringError("not a valid ONNX model: the " + what + " at byte " + llvm::Twine(offset) + " has " +
                                   problem);
  }

  llvm::StringRef bytes;
};

void appendSlice(std::string &out, llvm::StringRef slice) { out.append(slice.data(), slice.size()); }

void putVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void putTag(std::string &out, uint64_t number, WireType type) { putVarint(out, number << 3 | type); }

void putBytes(std::string &out, uint64_t number, llvm::StringRef payload) {
  putTag(out, number, LengthDelimited);
  putVarint(out, payload.size());
  out.append(payload.data(), payload.size());
}

/// A StringStringEntryProto {key, value}.
void putEntry(std::string &out, llvm::StringRef key, llvm::StringRef value) {
  std::string entry;
  putBytes(entry, 1, key);
  putBytes(entry, 2, value);
  putBytes(out, 13, entry);
}

bool isFloatDataType(uint64_t dataType) {
  // onnx.proto TensorProto.DataType: FLOAT = 1, FLOAT16 = 10, DOUBLE = 11, BFLOAT16 = 16.
  return dataType == 1 || dataType == 10 || dataType == 11 || dataType == 16;
}

class Rewriter {
public:
  Rewriter(llvm::StringRef bytes, llvm::StringRef selfLocation) : scanner(bytes), selfLocation(selfLocation) {}

  llvm::Error model(size_t begin, size_t end, std::string &out) {
    for (size_t pos = begin; pos < end;) {
      Field field;
      if (llvm::Error error = scanner.next(pos, end, field, "ModelProto"))
        return error;
      if (field.number == 7 && field.wireType == LengthDelimited) {
        std::string graphBytes;
        if (llvm::Error error = graph(field.payload, field.end, graphBytes))
          return error;
        putBytes(out, 7, graphBytes);
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
      Field field;
      if (llvm::Error error = scanner.next(pos, end, field, "GraphProto"))
        return error;
      if (field.number == 5 && field.wireType == LengthDelimited) {
        std::optional<std::string> moved;
        if (llvm::Error error = tensor(field.payload, field.end, moved))
          return error;
        if (moved) {
          putBytes(out, 5, *moved);
          continue;
        }
      }
      appendSlice(out, scanner.slice(field.begin, field.end));
    }
    return llvm::Error::success();
  }

  /// Sets `moved` to the initializer without its raw_data when it is a float tensor with enough raw_data.
  llvm::Error tensor(size_t begin, size_t end, std::optional<std::string> &moved) {
    uint64_t dataType = 0;
    std::optional<Field> raw;
    for (size_t pos = begin; pos < end;) {
      Field field;
      if (llvm::Error error = scanner.next(pos, end, field, "initializer (TensorProto)"))
        return error;
      if (field.number == 2 && field.wireType == Varint)
        dataType = field.value;
      else if (field.number == 9 && field.wireType == LengthDelimited)
        raw = field;
      else if (field.number == 14 && field.wireType == Varint && field.value != 0)
        return llvm::Error::success(); // already external
    }
    if (!raw || !isFloatDataType(dataType) || raw->end - raw->payload < kMinExternalizedBytes)
      return llvm::Error::success();
    std::string out;
    for (size_t pos = begin; pos < end;) {
      Field field;
      cantFail(scanner.next(pos, end, field, "initializer (TensorProto)"));
      if (field.begin != raw->begin)
        appendSlice(out, scanner.slice(field.begin, field.end));
    }
    uint64_t length = raw->end - raw->payload;
    putEntry(out, "location", selfLocation);
    putEntry(out, "offset", std::to_string(raw->payload));
    putEntry(out, "length", std::to_string(length));
    putTag(out, 14, Varint);
    putVarint(out, 1); // DataLocation EXTERNAL
    ++result.tensors;
    result.bytes += length;
    moved = std::move(out);
    return llvm::Error::success();
  }

  WireScanner scanner;
  llvm::StringRef selfLocation;
};

} // namespace

llvm::Expected<ExternalizedWeights> mlir::ptrain::onnx_data::externalizeEmbeddedWeights(llvm::StringRef bytes,
                                                                                        llvm::StringRef selfLocation) {
  Rewriter rewriter(bytes, selfLocation);
  if (llvm::Error error = rewriter.model(0, bytes.size(), rewriter.result.model))
    return std::move(error);
  return std::move(rewriter.result);
}
