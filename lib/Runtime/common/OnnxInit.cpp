//===- OnnxInit.cpp - Initial state values from an ONNX model -------------===//
//
// ptrain_state_init_onnx: parameters are read by key from the ONNX model's
// initializers (DESIGN.md decision 10: weights never enter the IR; the
// runtime loads them from the ONNX file or its external data); every other
// state (optimizer moments, step counters, codec state) starts at zero. A
// parameter the model does not hold gets its default (`init`, e.g. the linear
// autoencoder's orthogonal encoder and decoder; ptrain/Runtime/StateInit.h),
// or, without one, is an error naming the file and the key.
//
// The model file and its external data files are memory-mapped, never read
// whole: the initializers are located by a wire-format scan
// (include/ptrain/Runtime/OnnxWire.h) that skips the nodes, and only the
// initializers a parameter state names are parsed, each without its raw_data
// (protobuf's bool-returning ParseFromArray on a few hundred bytes; the
// runtime builds with -fno-exceptions; no onnx::checker). Their bytes are
// copied from the mapping, so a GPT-2 124M model with embedded weights is
// neither copied whole nor parsed whole. Data is little-endian as in ONNX;
// the runtime assumes a little-endian host. Every parameter is located and
// checked before any state is written, so a failure modifies no state.
//
//===----------------------------------------------------------------------===//

#include "common/StateTable.h"
#include "ptrain/Runtime/OnnxWire.h"
#include "ptrain/Runtime/StateInit.h"

#include "onnx/onnx_pb.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using ptrain::runtime::fail;
namespace wire = ptrain::onnx_wire;

namespace {

/// A whole file mapped read-only, or an error naming it.
struct Mapping {
  const char *data = nullptr;
  int64_t size = 0;
  Mapping() = default;
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;
  Mapping(Mapping &&other) noexcept : data(other.data), size(other.size) {
    other.data = nullptr;
    other.size = 0;
  }
  ~Mapping() {
    if (data != nullptr && size > 0)
      munmap(const_cast<char *>(data), static_cast<size_t>(size));
  }
  std::string_view bytes() const { return std::string_view(data, static_cast<size_t>(size)); }
};

ptrain_status_t mapFile(const char *call, const std::string &path, Mapping &out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: cannot open (%s)", path.c_str(), std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: not a regular file", path.c_str());
  }
  out.size = static_cast<int64_t>(st.st_size);
  if (out.size > 0) {
    void *p = mmap(nullptr, static_cast<size_t>(out.size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      out.size = 0;
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: cannot map %lld bytes (%s)", path.c_str(),
                  static_cast<long long>(st.st_size), std::strerror(errno));
    }
    out.data = static_cast<const char *>(p);
  }
  close(fd);
  return PTRAIN_OK;
}

/// Whether an external data location has a ".." component: ONNX's locations are relative to the model's
/// folder and stay inside it (onnx::checker refuses them too); "../../etc/passwd" must not become weights.
bool leavesModelFolder(const std::string &location) {
  for (size_t begin = 0; begin <= location.size();) {
    size_t end = location.find('/', begin);
    if (end == std::string::npos)
      end = location.size();
    if (location.compare(begin, end - begin, "..") == 0)
      return true;
    begin = end + 1;
  }
  return false;
}

/// The folder of `path` with a trailing '/', or "" for a bare file name.
std::string parentDir(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

/// Finds the `bytes` bytes of state `s` (dtype and shape already checked):
/// `record` locates the initializer in `model`, `init` is its fields without
/// raw_data. `src` points into a mapping or into `init`'s typed data.
ptrain_status_t locate(const char *call, const char *modelPath, const Mapping &model,
                       const wire::InitializerRecord &record, const onnx::TensorProto &init,
                       const ptrain_state_desc_t &s, int64_t bytes, const char *&src,
                       std::map<std::string, Mapping> &external) {
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
          return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: initializer '%s' has a bad external data %s '%s'",
                      modelPath, s.key, e.key().c_str(), e.value().c_str());
        (e.key() == "offset" ? offset : length) = v;
      }
    }
    if (location.empty() || location[0] == '/')
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: initializer '%s' has no relative external data location",
                  modelPath, s.key);
    if (leavesModelFolder(location))
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: initializer '%s' has the external data location '%s', outside the model's folder (a '..' "
                  "component)",
                  modelPath, s.key, location.c_str());
    const std::string path = parentDir(modelPath) + location;
    auto it = external.find(path);
    if (it == external.end()) {
      Mapping file;
      PTRAIN_RETURN_IF_ERROR(mapFile(call, path, file));
      it = external.emplace(path, std::move(file)).first;
    }
    const Mapping &file = it->second;
    if (length < 0)
      length = file.size - offset;
    if (offset > file.size || length > file.size - offset || length != bytes)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: initializer '%s' needs %lld bytes but its external data "
                  "is [%lld, %lld) of '%s' (%lld bytes)",
                  modelPath, s.key, static_cast<long long>(bytes), static_cast<long long>(offset),
                  static_cast<long long>(offset + length), path.c_str(), static_cast<long long>(file.size));
    src = file.data + offset;
    return PTRAIN_OK;
  }
  if (record.hasRawData) {
    const size_t have = record.rawEnd - record.rawPayload;
    if (static_cast<int64_t>(have) != bytes)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: initializer '%s' holds %zu bytes, its shape needs %lld",
                  modelPath, s.key, have, static_cast<long long>(bytes));
    src = model.data + record.rawPayload;
    return PTRAIN_OK;
  }
  const int64_t have = s.dtype == PTRAIN_DTYPE_F32 ? init.float_data_size() : init.int64_data_size();
  if (have != count)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s: initializer '%s' holds %lld values, its shape needs %lld",
                modelPath, s.key, static_cast<long long>(have), static_cast<long long>(count));
  src = s.dtype == PTRAIN_DTYPE_F32 ? reinterpret_cast<const char *>(init.float_data().data())
                                    : reinterpret_cast<const char *>(init.int64_data().data());
  return PTRAIN_OK;
}

/// The default value (`s.init`) of the parameter `s` that the model at
/// `modelPath` does not hold, appended to `out`.
ptrain_status_t generateDefault(const char *call, const char *modelPath, const ptrain_state_desc_t &s, int64_t bytes,
                                std::vector<std::unique_ptr<float[]>> &out) {
  if (s.init != PTRAIN_STATE_INIT_ORTHOGONAL && s.init != PTRAIN_STATE_INIT_ORTHOGONAL_TRANSPOSED)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: parameter state '%s' is not in the model and has an unknown init %d (orthogonal = 1, "
                "orthogonal_transposed = 2)",
                modelPath, s.key, s.init);
  if (s.dtype != PTRAIN_DTYPE_F32 || s.rank != 2)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: parameter state '%s' is not in the model and its orthogonal init needs a rank-2 f32 state, "
                "got rank %d dtype %d",
                modelPath, s.key, s.rank, s.dtype);
  std::unique_ptr<float[]> values(new (std::nothrow) float[static_cast<size_t>(bytes / 4)]);
  if (!values || !ptrain::runtime::orthogonalInit(values.get(), s.dims[0], s.dims[1], s.init_seed,
                                                  s.init == PTRAIN_STATE_INIT_ORTHOGONAL_TRANSPOSED))
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "orthogonal init of '%s' (%lld x %lld): empty or out of memory",
                s.key, static_cast<long long>(s.dims[0]), static_cast<long long>(s.dims[1]));
  out.push_back(std::move(values));
  return PTRAIN_OK;
}

} // namespace

extern "C" ptrain_status_t ptrain_state_init_onnx(const ptrain_state_desc_t *states, int64_t num_states,
                                                  const char *onnx_path) {
  PTRAIN_CHECK_PTR(onnx_path);
  ptrain::runtime::StateBytes bytesOwner;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkStateTable(__func__, states, num_states, bytesOwner));
  const int64_t *bytes = bytesOwner.get();

  Mapping modelFile;
  PTRAIN_RETURN_IF_ERROR(mapFile(__func__, onnx_path, modelFile));
  std::vector<wire::InitializerRecord> records;
  std::string scanError;
  if (!wire::scanInitializers(modelFile.bytes(), records, scanError))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "%s: %s", onnx_path, scanError.c_str());
  std::map<std::string, const wire::InitializerRecord *> byName;
  for (const wire::InitializerRecord &record : records)
    byName.emplace(record.name, &record);

  // Every parameter is located (and checked) first, then copied: a failure
  // modifies no state, and no staging copy of the weights is made.
  std::vector<const char *> sources(static_cast<size_t>(num_states), nullptr);
  std::vector<std::unique_ptr<onnx::TensorProto>> parsed;
  std::map<std::string, Mapping> external;
  std::vector<std::unique_ptr<float[]>> defaults; // generated before any state is written
  for (int64_t i = 0; i < num_states; ++i) {
    const ptrain_state_desc_t &s = states[i];
    if (s.kind != PTRAIN_STATE_PARAMETER)
      continue;
    auto it = byName.find(s.key);
    if (it == byName.end() && s.init != PTRAIN_STATE_INIT_NONE) {
      PTRAIN_RETURN_IF_ERROR(generateDefault(__func__, onnx_path, s, bytes[i], defaults));
      sources[i] = reinterpret_cast<const char *>(defaults.back().get());
      continue;
    }
    if (it == byName.end())
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "%s: no initializer named '%s' for parameter state '%s'",
                  onnx_path, s.key, s.key);
    const wire::InitializerRecord &record = *it->second;
    // Only this tensor's own fields, without the raw_data bytes.
    const std::string fields = wire::withoutRawData(modelFile.bytes(), record);
    parsed.push_back(std::make_unique<onnx::TensorProto>());
    onnx::TensorProto &init = *parsed.back();
    if (fields.size() > INT32_MAX || !init.ParseFromArray(fields.data(), static_cast<int>(fields.size())))
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                  "%s: initializer '%s' (bytes [%zu, %zu)) is not a valid "
                  "TensorProto",
                  onnx_path, s.key, record.begin, record.end);
    const int32_t want = s.dtype == PTRAIN_DTYPE_F32 ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64;
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
    PTRAIN_RETURN_IF_ERROR(locate(__func__, onnx_path, modelFile, record, init, s, bytes[i], sources[i], external));
  }
  // Every check passed: commit.
  for (int64_t i = 0; i < num_states; ++i) {
    if (sources[i])
      std::memcpy(states[i].data, sources[i], static_cast<size_t>(bytes[i]));
    else
      std::memset(states[i].data, 0, static_cast<size_t>(bytes[i]));
  }
  return PTRAIN_OK;
}
