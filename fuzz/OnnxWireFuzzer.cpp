//===- OnnxWireFuzzer.cpp - libFuzzer target: the ONNX wire-format scanner ===//
//
// Input: any bytes, read as a serialized ModelProto by the scanner of include/ptrain/Runtime/OnnxWire.h (the
// importer's and the runtime's reader of users' model files). Checked on every input:
//  - the scan never reads outside the bytes (AddressSanitizer) and returns true or false with an error that
//    names a byte offset;
//  - every record it returns lies inside the bytes: begin <= end <= size, and the raw_data field inside its
//    TensorProto (rawField < rawPayload <= rawEnd <= end);
//  - withoutRawData() gives exactly the TensorProto's bytes less its raw_data field;
//  - scanning the same bytes from a file (ByteSource::file, pread through a 64 KiB window) gives the same
//    records and the same error as scanning them in memory.
// A broken property aborts, which libFuzzer reports as a crash.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/OnnxWire.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

using namespace ptrain::onnx_wire;

namespace {

[[noreturn]] void broken(const char *what) {
  std::fprintf(stderr, "OnnxWireFuzzer: property broken: %s\n", what);
  std::abort();
}

void check(bool ok, const char *what) {
  if (!ok)
    broken(what);
}

bool sameRecords(const std::vector<InitializerRecord> &a, const std::vector<InitializerRecord> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].dataType != b[i].dataType || a[i].begin != b[i].begin ||
        a[i].end != b[i].end || a[i].hasRawData != b[i].hasRawData || a[i].rawField != b[i].rawField ||
        a[i].rawPayload != b[i].rawPayload || a[i].rawEnd != b[i].rawEnd || a[i].external != b[i].external)
      return false;
  return true;
}

/// The bytes in an anonymous file (memfd), for ByteSource::file; -1 if the kernel refuses.
int bytesAsFile(const uint8_t *data, size_t size) {
  const int fd = memfd_create("onnx-wire-fuzz", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return fd;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char *>(data), size);
  std::vector<InitializerRecord> records;
  std::string error;
  const bool ok = scanInitializers(bytes, records, error);
  check(ok == error.empty(), "scanInitializers returns false exactly when it sets an error");
  if (!ok)
    check(error.rfind("not a valid ONNX model: the ", 0) == 0 && error.find(" at byte ") != std::string::npos,
          "a scan error names the message and the byte offset");
  for (const InitializerRecord &r : records) {
    check(r.begin <= r.end && r.end <= size, "a record lies inside the bytes");
    if (r.hasRawData) {
      check(r.begin <= r.rawField && r.rawField < r.rawPayload && r.rawPayload <= r.rawEnd && r.rawEnd <= r.end,
            "raw_data lies inside its TensorProto");
    }
    const std::string stripped = withoutRawData(bytes, r);
    const size_t rawBytes = r.hasRawData ? r.rawEnd - r.rawField : 0;
    check(stripped.size() == r.end - r.begin - rawBytes, "withoutRawData drops exactly the raw_data field");
    check(stripped.compare(0, (r.hasRawData ? r.rawField : r.end) - r.begin, bytes.substr(r.begin, (r.hasRawData ? r.rawField : r.end) - r.begin)) == 0,
          "withoutRawData keeps the bytes before raw_data");
  }

  // The same scan through pread: the windowed reader must agree with the in-memory one.
  const int fd = bytesAsFile(data, size);
  if (fd >= 0) {
    const ByteSource file = ByteSource::file(fd, size);
    std::vector<InitializerRecord> fromFile;
    std::string fileError;
    const bool fileOk = scanInitializers(file, fromFile, fileError);
    check(fileOk == ok && fileError == error, "the file scan fails exactly where the memory scan fails");
    check(sameRecords(records, fromFile), "the file scan finds the same records");
    for (const InitializerRecord &r : fromFile)
      check(withoutRawData(file, r) == withoutRawData(bytes, r), "withoutRawData reads the same bytes from a file");
    close(fd);
  }
  return 0;
}
