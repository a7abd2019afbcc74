//===- OnnxWire.h - initializers located in a serialized ONNX model -*- C++ -*-===//
//
// protobuf parses a message whole, copying every `raw_data` into a string: for a model with embedded weights
// (a GPT-2 124M export is ~500 MB) that is the whole file, copied twice. This scanner reads protobuf's wire
// format (https://protobuf.dev/programming-guides/encoding/) instead: it walks ModelProto.graph ->
// GraphProto.initializer and records where each TensorProto and its raw_data lie in the serialized bytes
// (a memory-mapped file), touching only the pages that hold field headers; nodes and everything else are
// skipped unparsed. Plain C++ (no LLVM, no protobuf): shared by the importer (lib/Import/ONNX/
// EmbeddedWeights.cpp) and the runtime's initial-state loader (lib/Runtime/common/OnnxInit.cpp).
//
// Field numbers are onnx.proto's: ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.name = 8,
// data_type = 2, raw_data = 9, external_data = 13, data_location = 14.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_ONNXWIRE_H
#define PTRAIN_RUNTIME_ONNXWIRE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptrain::onnx_wire {

enum WireType : unsigned { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

/// onnx.proto field numbers used by the scanners.
namespace field {
constexpr uint64_t kModelGraph = 7;
constexpr uint64_t kGraphInitializer = 5;
constexpr uint64_t kTensorDataType = 2;
constexpr uint64_t kTensorName = 8;
constexpr uint64_t kTensorRawData = 9;
constexpr uint64_t kTensorExternalData = 13;
constexpr uint64_t kTensorDataLocation = 14;
} // namespace field

/// One field of a message: its tag starts at `begin`, its payload at `payload`, the next field at `end`.
struct Field {
  uint64_t number = 0;
  unsigned wireType = 0;
  size_t begin = 0, payload = 0, end = 0;
  uint64_t value = 0; // the varint of wire type 0
};

/// The serialized model: bytes in memory, or a file read with pread through a 64 KiB window. Scanning a
/// file this way maps none of it: a mapped page a scan touches counts in the process's resident set, and the
/// page cache may map a whole large folio (up to MBs) per touched header (bench/README.md, "import").
class ByteSource {
public:
  static ByteSource memory(std::string_view bytes);
  /// Reads `size` bytes of the open file `fd` (owned by the caller).
  static ByteSource file(int fd, size_t size);

  size_t size() const { return length; }
  /// Byte `pos` (< size()); a read error sets failed() and gives 0.
  uint8_t at(size_t pos) const;
  /// The bytes [begin, end).
  std::string copy(size_t begin, size_t end) const;
  /// Whether a pread failed (the scan's result is then meaningless).
  bool failed() const { return readFailed; }

private:
  bool fill(size_t pos) const;

  std::string_view bytes;
  int fd = -1;
  size_t length = 0;
  mutable std::string window;
  mutable size_t windowBegin = 0;
  mutable bool readFailed = false;
};

/// Reads the fields of messages inside `source`; positions are offsets into it.
class Scanner {
public:
  explicit Scanner(const ByteSource &source) : source(source) {}

  /// Reads the field at `pos` of the message `what` ending at `limit` and moves `pos` past it; on a
  /// malformed field returns false with `error` = "not a valid ONNX model: the <what> at byte N has ...".
  bool next(size_t &pos, size_t limit, Field &field, std::string_view what, std::string &error) const;

  std::string slice(size_t begin, size_t end) const { return source.copy(begin, end); }
  size_t size() const { return source.size(); }

private:
  bool varint(size_t &pos, size_t limit, uint64_t &value) const;

  const ByteSource &source;
};

/// Where one initializer (GraphProto.initializer) lies in the serialized model.
struct InitializerRecord {
  std::string name;
  uint64_t dataType = 0; // TensorProto.DataType (1 FLOAT, 7 INT64, ...)
  /// The TensorProto's payload [begin, end).
  size_t begin = 0, end = 0;
  /// The raw_data field: its whole field [rawField, rawEnd) and its bytes [rawPayload, rawEnd).
  bool hasRawData = false;
  size_t rawField = 0, rawPayload = 0, rawEnd = 0;
  /// data_location EXTERNAL (the bytes are in another file named by external_data).
  bool external = false;
};

/// Reads the top-level fields of the TensorProto whose payload is [begin, end) of `bytes` into `record`
/// (nested messages such as external_data are skipped whole).
bool scanInitializer(const ByteSource &bytes, size_t begin, size_t end, InitializerRecord &record, std::string &error);

/// Records every initializer of the serialized ModelProto `bytes`, in file order. Returns false with
/// `error` naming the byte offset and the message on a malformed wire format.
bool scanInitializers(const ByteSource &bytes, std::vector<InitializerRecord> &out, std::string &error);
bool scanInitializers(std::string_view bytes, std::vector<InitializerRecord> &out, std::string &error);

/// The initializer's TensorProto without its raw_data field: a message of a few hundred bytes (name,
/// dims, data type, external data, typed *_data fields) that protobuf can parse without the weights.
std::string withoutRawData(const ByteSource &bytes, const InitializerRecord &record);
std::string withoutRawData(std::string_view bytes, const InitializerRecord &record);

/// Appends a varint, a tag, or a length-delimited field (tag, length, payload) to `out`.
void putVarint(std::string &out, uint64_t value);
void putTag(std::string &out, uint64_t number, WireType type);
void putBytes(std::string &out, uint64_t number, std::string_view payload);

} // namespace ptrain::onnx_wire

#endif // PTRAIN_RUNTIME_ONNXWIRE_H
