//===- OnnxInit.cpp - Initial state values from an ONNX model -------------===//
//
// ptrain_state_init_onnx: parameters are read by key from the ONNX model's
// initializers (DESIGN.md decision 10: weights never enter the IR; the
// runtime loads them from the ONNX file or its external data); every other
// state (optimizer moments, step counters, codec state) starts at zero.
//
// Parsing uses protobuf's bool-returning ParseFromArray (the runtime builds
// with -fno-exceptions; no onnx::checker). Data is little-endian as in ONNX;
// the runtime assumes a little-endian host. Everything is decoded into
// staging buffers first, so a failure modifies no state.
//
//===----------------------------------------------------------------------===//

#include "common/StateTable.h"

#include "onnx/onnx_pb.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

using ptrain::runtime::allocBytes;
using ptrain::runtime::fail;

namespace {

/// A whole file in memory, or an error naming it.
struct FileBytes {
  char *data = nullptr;
  int64_t size = 0;
  ~FileBytes() { std::free(data); }
};

ptrain_status_t readFile(const char *call, const std::string &path,
                         FileBytes &out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: cannot open",
                path.c_str());
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  if (size < 0) {
    std::fclose(f);
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: cannot size",
                path.c_str());
  }
  out.data = static_cast<char *>(allocBytes(static_cast<size_t>(size)));
  if (out.data == nullptr) {
    std::fclose(f);
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call,
                "%s: cannot allocate %ld bytes", path.c_str(), size);
  }
  out.size = size;
  const size_t got = std::fread(out.data, 1, static_cast<size_t>(size), f);
  std::fclose(f);
  if (got != static_cast<size_t>(size))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: short read (%zu of %ld bytes)", path.c_str(), got, size);
  return PTRAIN_OK;
}

/// The folder of `path` with a trailing '/', or "" for a bare file name.
std::string parentDir(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

/// Decodes initializer `init` for state `s` (dtype and shape already checked)
/// into `dst` of `bytes` bytes.
ptrain_status_t decode(const char *call, const char *modelPath,
                       const onnx::TensorProto &init,
                       const ptrain_state_desc_t &s, int64_t bytes, char *dst,
                       std::map<std::string, FileBytes> &external) {
  const int64_t count = bytes / ptrain::runtime::stateElemBytes(s.dtype);
  if (init.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const onnx::StringStringEntryProto &e : init.external_data()) {
      if (e.key() == "location") {
        location = e.value();
      } else if (e.key() == "offset" || e.key() == "length") {
        char *end = nullptr;
        const long long v = std::strtoll(e.value().c_str(), &end, 10);
        if (end == e.value().c_str() || *end != '\0' || v < 0)
          return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                      "%s: initializer '%s' has a bad external data %s '%s'",
                      modelPath, s.key, e.key().c_str(), e.value().c_str());
        (e.key() == "offset" ? offset : length) = v;
      }
    }
    if (location.empty() || location[0] == '/')
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: initializer '%s' has no relative external data location",
                  modelPath, s.key);
    const std::string path = parentDir(modelPath) + location;
    auto it = external.find(path);
    if (it == external.end()) {
      it = external.emplace(path, FileBytes()).first;
      PTRAIN_RETURN_IF_ERROR(readFile(call, path, it->second));
    }
    const FileBytes &file = it->second;
    if (length < 0)
      length = file.size - offset;
    if (offset > file.size || length > file.size - offset || length != bytes)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: initializer '%s' needs %lld bytes but its external data "
                  "is [%lld, %lld) of '%s' (%lld bytes)",
                  modelPath, s.key, static_cast<long long>(bytes),
                  static_cast<long long>(offset),
                  static_cast<long long>(offset + length), path.c_str(),
                  static_cast<long long>(file.size));
    std::memcpy(dst, file.data + offset, static_cast<size_t>(bytes));
    return PTRAIN_OK;
  }
  if (init.has_raw_data()) {
    if (static_cast<int64_t>(init.raw_data().size()) != bytes)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: initializer '%s' holds %zu bytes, its shape needs %lld",
                  modelPath, s.key, init.raw_data().size(),
                  static_cast<long long>(bytes));
    std::memcpy(dst, init.raw_data().data(), static_cast<size_t>(bytes));
    return PTRAIN_OK;
  }
  const int64_t have = s.dtype == PTRAIN_DTYPE_F32 ? init.float_data_size()
                                                   : init.int64_data_size();
  if (have != count)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: initializer '%s' holds %lld values, its shape needs %lld",
                modelPath, s.key, static_cast<long long>(have),
                static_cast<long long>(count));
  if (s.dtype == PTRAIN_DTYPE_F32)
    std::memcpy(dst, init.float_data().data(), static_cast<size_t>(bytes));
  else
    std::memcpy(dst, init.int64_data().data(), static_cast<size_t>(bytes));
  return PTRAIN_OK;
}

/// Frees the staging buffers on every path.
struct Staging {
  char **buffers = nullptr;
  int64_t count = 0;
  ~Staging() {
    for (int64_t i = 0; i < count && buffers; ++i)
      std::free(buffers[i]);
    std::free(buffers);
  }
};

} // namespace

extern "C" ptrain_status_t
ptrain_state_init_onnx(const ptrain_state_desc_t *states, int64_t num_states,
                       const char *onnx_path) {
  PTRAIN_CHECK_PTR(onnx_path);
  ptrain::runtime::StateBytes bytesOwner;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkStateTable(__func__, states, num_states, bytesOwner));
  const int64_t *bytes = bytesOwner.get();

  FileBytes modelFile;
  PTRAIN_RETURN_IF_ERROR(readFile(__func__, onnx_path, modelFile));
  if (modelFile.size > INT32_MAX)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "%s: %lld bytes is too large to parse", onnx_path,
                static_cast<long long>(modelFile.size));
  onnx::ModelProto model;
  if (!model.ParseFromArray(modelFile.data, static_cast<int>(modelFile.size)))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "%s: not a valid ONNX model (protobuf parse failed)",
                onnx_path);
  std::map<std::string, const onnx::TensorProto *> byName;
  for (const onnx::TensorProto &init : model.graph().initializer())
    byName.emplace(init.name(), &init);

  Staging staging;
  staging.buffers =
      static_cast<char **>(std::calloc(num_states ? num_states : 1,
                                       sizeof(char *)));
  if (staging.buffers == nullptr)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "staging table");
  staging.count = num_states;
  std::map<std::string, FileBytes> external;
  for (int64_t i = 0; i < num_states; ++i) {
    const ptrain_state_desc_t &s = states[i];
    if (s.kind != PTRAIN_STATE_PARAMETER)
      continue;
    auto it = byName.find(s.key);
    if (it == byName.end())
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                  "%s: no initializer named '%s' for parameter state '%s'",
                  onnx_path, s.key, s.key);
    const onnx::TensorProto &init = *it->second;
    const int32_t want = s.dtype == PTRAIN_DTYPE_F32
                             ? onnx::TensorProto::FLOAT
                             : onnx::TensorProto::INT64;
    if (init.data_type() != want)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                  "%s: initializer '%s' has ONNX data type %d, the state needs "
                  "%d",
                  onnx_path, s.key, init.data_type(), want);
    bool sameShape = init.dims_size() == s.rank;
    for (int32_t d = 0; sameShape && d < s.rank; ++d)
      sameShape = init.dims(d) == s.dims[d];
    if (!sameShape)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                  "%s: initializer '%s' has rank %d with another shape than "
                  "the state's rank-%d shape",
                  onnx_path, s.key, init.dims_size(), s.rank);
    staging.buffers[i] =
        static_cast<char *>(allocBytes(static_cast<size_t>(bytes[i])));
    if (staging.buffers[i] == nullptr)
      return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__,
                  "cannot stage %lld bytes for '%s'",
                  static_cast<long long>(bytes[i]), s.key);
    PTRAIN_RETURN_IF_ERROR(decode(__func__, onnx_path, init, s, bytes[i],
                                  staging.buffers[i], external));
  }
  // Every check passed: commit.
  for (int64_t i = 0; i < num_states; ++i) {
    if (staging.buffers[i])
      std::memcpy(states[i].data, staging.buffers[i],
                  static_cast<size_t>(bytes[i]));
    else
      std::memset(states[i].data, 0, static_cast<size_t>(bytes[i]));
  }
  return PTRAIN_OK;
}
