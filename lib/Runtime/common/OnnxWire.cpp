//===- OnnxWire.cpp - initializers located in a serialized ONNX model -----===//
//
// A message is a sequence of fields, each a varint tag (field number << 3 |
// wire type) followed by a varint (type 0), 8 bytes (1), a varint length and
// that many bytes (2: sub-messages, strings, bytes) or 4 bytes (5).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/OnnxWire.h"

#include <algorithm>
#include <cerrno>
#include <unistd.h>

using namespace ptrain::onnx_wire;

namespace {

bool malformed(size_t offset, std::string_view what, const std::string &problem, std::string &error) {
  error = "not a valid ONNX model: the " + std::string(what) + " at byte " + std::to_string(offset) + " has " + problem;
  return false;
}

} // namespace

ByteSource ByteSource::memory(std::string_view bytes) {
  ByteSource source;
  source.bytes = bytes;
  source.length = bytes.size();
  return source;
}

ByteSource ByteSource::file(int fd, size_t size) {
  ByteSource source;
  source.fd = fd;
  source.length = size;
  return source;
}

namespace {

/// pread of exactly `n` bytes at `offset` into `out`.
bool readFully(int fd, size_t offset, size_t n, char *out) {
  while (n > 0) {
    const ssize_t got = pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    out += got;
    offset += static_cast<size_t>(got);
    n -= static_cast<size_t>(got);
  }
  return true;
}

constexpr size_t kWindowBytes = 64 * 1024;

} // namespace

bool ByteSource::fill(size_t pos) const {
  const size_t n = std::min(kWindowBytes, length - pos);
  window.resize(n);
  windowBegin = pos;
  if (!readFully(fd, pos, n, window.data())) {
    window.clear();
    readFailed = true;
    return false;
  }
  return true;
}

uint8_t ByteSource::at(size_t pos) const {
  if (fd < 0)
    return static_cast<uint8_t>(bytes[pos]);
  if (pos < windowBegin || pos >= windowBegin + window.size())
    if (!fill(pos))
      return 0;
  return static_cast<uint8_t>(window[pos - windowBegin]);
}

std::string ByteSource::copy(size_t begin, size_t end) const {
  if (fd < 0)
    return std::string(bytes.substr(begin, end - begin));
  if (begin >= windowBegin && end <= windowBegin + window.size())
    return window.substr(begin - windowBegin, end - begin);
  std::string out(end - begin, '\0');
  if (!readFully(fd, begin, end - begin, out.data())) {
    readFailed = true;
    out.clear();
  }
  return out;
}

bool Scanner::varint(size_t &pos, size_t limit, uint64_t &value) const {
  value = 0;
  for (unsigned shift = 0; shift < 64 && pos < limit; shift += 7) {
    const uint8_t byte = source.at(pos++);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

bool Scanner::next(size_t &pos, size_t limit, Field &field, std::string_view what, std::string &error) const {
  field.begin = pos;
  uint64_t tag;
  if (!varint(pos, limit, tag))
    return malformed(field.begin, what, "a truncated field tag", error);
  field.number = tag >> 3;
  field.wireType = tag & 7;
  if (field.number == 0)
    return malformed(field.begin, what, "field number 0", error);
  switch (field.wireType) {
  case Varint:
    field.payload = pos;
    if (!varint(pos, limit, field.value))
      return malformed(field.begin, what, "a truncated varint", error);
    break;
  case Fixed64:
  case Fixed32: {
    const size_t size = field.wireType == Fixed64 ? 8 : 4;
    field.payload = pos;
    if (limit - pos < size)
      return malformed(field.begin, what, "a truncated fixed-size field", error);
    pos += size;
    break;
  }
  case LengthDelimited: {
    uint64_t length;
    if (!varint(pos, limit, length))
      return malformed(field.begin, what, "a truncated length", error);
    field.payload = pos;
    if (length > limit - pos)
      return malformed(field.begin, what,
                       "field " + std::to_string(field.number) + " of " + std::to_string(length) +
                           " bytes past the end of the message (" + std::to_string(limit - pos) + " bytes left)",
                       error);
    pos += length;
    break;
  }
  default:
    return malformed(field.begin, what,
                     "wire type " + std::to_string(field.wireType) + " (groups are not used by ONNX)", error);
  }
  field.end = pos;
  return true;
}

bool ptrain::onnx_wire::scanInitializer(const ByteSource &bytes, size_t begin, size_t end, InitializerRecord &record,
                                        std::string &error) {
  Scanner scanner(bytes);
  record.begin = begin;
  record.end = end;
  for (size_t pos = begin; pos < end;) {
    Field f;
    if (!scanner.next(pos, end, f, "initializer (TensorProto)", error))
      return false;
    if (f.number == field::kTensorDataType && f.wireType == Varint) {
      record.dataType = f.value;
    } else if (f.number == field::kTensorName && f.wireType == LengthDelimited) {
      record.name = std::string(scanner.slice(f.payload, f.end));
    } else if (f.number == field::kTensorRawData && f.wireType == LengthDelimited) {
      record.hasRawData = true;
      record.rawField = f.begin;
      record.rawPayload = f.payload;
      record.rawEnd = f.end;
    } else if (f.number == field::kTensorDataLocation && f.wireType == Varint) {
      record.external = f.value != 0;
    }
  }
  return true;
}

bool ptrain::onnx_wire::scanInitializers(const ByteSource &bytes, std::vector<InitializerRecord> &out,
                                         std::string &error) {
  Scanner scanner(bytes);
  for (size_t pos = 0; pos < bytes.size();) {
    Field model;
    if (!scanner.next(pos, bytes.size(), model, "ModelProto", error))
      return false;
    if (model.number != field::kModelGraph || model.wireType != LengthDelimited)
      continue;
    for (size_t g = model.payload; g < model.end;) {
      Field f;
      if (!scanner.next(g, model.end, f, "GraphProto", error))
        return false;
      if (f.number != field::kGraphInitializer || f.wireType != LengthDelimited)
        continue;
      InitializerRecord record;
      if (!scanInitializer(bytes, f.payload, f.end, record, error))
        return false;
      out.push_back(std::move(record));
    }
  }
  if (bytes.failed()) {
    error = "cannot read the model file";
    return false;
  }
  return true;
}

std::string ptrain::onnx_wire::withoutRawData(const ByteSource &bytes, const InitializerRecord &record) {
  if (!record.hasRawData)
    return bytes.copy(record.begin, record.end);
  return bytes.copy(record.begin, record.rawField) + bytes.copy(record.rawEnd, record.end);
}

std::string ptrain::onnx_wire::withoutRawData(std::string_view bytes, const InitializerRecord &record) {
  return withoutRawData(ByteSource::memory(bytes), record);
}

bool ptrain::onnx_wire::scanInitializers(std::string_view bytes, std::vector<InitializerRecord> &out,
                                         std::string &error) {
  return scanInitializers(ByteSource::memory(bytes), out, error);
}

void ptrain::onnx_wire::putVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void ptrain::onnx_wire::putTag(std::string &out, uint64_t number, WireType type) { putVarint(out, number << 3 | type); }

void ptrain::onnx_wire::putBytes(std::string &out, uint64_t number, std::string_view payload) {
  putTag(out, number, LengthDelimited);
  putVarint(out, payload.size());
  out.append(payload.data(), payload.size());
}
