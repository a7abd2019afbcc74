//===- Checkpoint.cpp - Keyed state checkpoints ---------------------------===//
//
// The checkpoint format (docs/CodegenCpu.md), all integers little-endian:
//
//   "PTRNCKPT"                     8 bytes, magic
//   u32 version (1), u32 num_states, u64 data_offset
//   per state: u32 key_bytes, key (no NUL), i32 dtype, i32 kind, i32 rank,
//              i64 dims[rank], u64 offset (from data_offset), u64 num_bytes
//   zero padding up to data_offset (a multiple of 64)
//   the states' bytes, in header order
//   u64 FNV-1a 64 of every preceding byte of the file
//
// Saving writes `path.tmp` and renames it over `path`; loading checks the
// magic, version, bounds, checksum, that every state of the table is present
// with its dtype and shape and that the file holds no other key, before it
// modifies any state (DESIGN.md decision 5: checkpoints follow the keys).
//
//===----------------------------------------------------------------------===//

#include "common/Checkpoint.h"
#include "common/StateTable.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using ptrain::runtime::fail;

namespace {
constexpr char kMagic[8] = {'P', 'T', 'R', 'N', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;

struct Fnv1a {
  uint64_t hash = 1469598103934665603ull;
  void add(const void *data, size_t n) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < n; ++i) {
      hash ^= p[i];
      hash *= 1099511628211ull;
    }
  }
};

/// An owned byte buffer that frees itself.
struct Buffer {
  char *data = nullptr;
  int64_t size = 0;
  ~Buffer() { std::free(data); }
};

struct Writer {
  FILE *f;
  Fnv1a fnv;
  bool ok = true;
  void put(const void *p, size_t n) {
    fnv.add(p, n);
    ok = ok && std::fwrite(p, 1, n, f) == n;
  }
  template <typename T> void put(T v) { put(&v, sizeof(T)); }
};

int64_t headerBytes(const ptrain_state_desc_t *states, int64_t n) {
  int64_t bytes = 8 + 4 + 4 + 8;
  for (int64_t i = 0; i < n; ++i)
    bytes += 4 + static_cast<int64_t>(std::strlen(states[i].key)) + 12 +
             8 * states[i].rank + 16;
  return (bytes + 63) / 64 * 64;
}

/// Bounds-checked little-endian reads from a loaded file.
struct Reader {
  const char *data;
  int64_t size, pos = 0;
  bool get(void *out, int64_t n) {
    if (n < 0 || pos + n > size)
      return false;
    std::memcpy(out, data + pos, static_cast<size_t>(n));
    pos += n;
    return true;
  }
  template <typename T> bool get(T &v) { return get(&v, sizeof(T)); }
};
} // namespace

extern "C" ptrain_status_t
ptrain_checkpoint_save(const ptrain_state_desc_t *states, int64_t num_states,
                       const char *path) {
  PTRAIN_CHECK_PTR(path);
  ptrain::runtime::StateBytes bytesOwner;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkStateTable(__func__, states, num_states, bytesOwner));
  const int64_t *bytes = bytesOwner.get();

  char tmpPath[4096];
  if (std::snprintf(tmpPath, sizeof(tmpPath), "%s.tmp", path) >=
      static_cast<int>(sizeof(tmpPath)))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "path too long");
  FILE *f = std::fopen(tmpPath, "wb");
  if (f == nullptr)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "%s: cannot open for writing", tmpPath);
  Writer w{f, {}};
  const int64_t dataOffset = headerBytes(states, num_states);
  w.put(kMagic, 8);
  w.put<uint32_t>(kVersion);
  w.put<uint32_t>(static_cast<uint32_t>(num_states));
  w.put<uint64_t>(static_cast<uint64_t>(dataOffset));
  uint64_t offset = 0;
  int64_t written = 24;
  for (int64_t i = 0; i < num_states; ++i) {
    const ptrain_state_desc_t &s = states[i];
    const uint32_t keyBytes = static_cast<uint32_t>(std::strlen(s.key));
    w.put<uint32_t>(keyBytes);
    w.put(s.key, keyBytes);
    w.put<int32_t>(s.dtype);
    w.put<int32_t>(s.kind);
    w.put<int32_t>(s.rank);
    for (int32_t d = 0; d < s.rank; ++d)
      w.put<int64_t>(s.dims[d]);
    w.put<uint64_t>(offset);
    w.put<uint64_t>(static_cast<uint64_t>(bytes[i]));
    offset += static_cast<uint64_t>(bytes[i]);
    written += 4 + keyBytes + 12 + 8 * s.rank + 16;
  }
  const char zeros[64] = {};
  w.put(zeros, static_cast<size_t>(dataOffset - written));
  for (int64_t i = 0; i < num_states; ++i)
    w.put(states[i].data, static_cast<size_t>(bytes[i]));
  const uint64_t checksum = w.fnv.hash;
  w.ok = w.ok && std::fwrite(&checksum, 1, 8, f) == 8;
  const bool closed = std::fclose(f) == 0;
  if (!w.ok || !closed) {
    std::remove(tmpPath);
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "%s: write failed", tmpPath);
  }
  if (std::rename(tmpPath, path) != 0) {
    std::remove(tmpPath);
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "cannot rename %s to %s", tmpPath, path);
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t
ptrain_checkpoint_load(const ptrain_state_desc_t *states, int64_t num_states,
                       const char *path) {
  PTRAIN_CHECK_PTR(path);
  ptrain::runtime::StateBytes bytesOwner;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkStateTable(__func__, states, num_states, bytesOwner));

  Buffer file;
  FILE *f = std::fopen(path, "rb");
  if (f == nullptr)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "%s: cannot open",
                path);
  std::fseek(f, 0, SEEK_END);
  file.size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  file.data = static_cast<char *>(
      ptrain::runtime::allocBytes(static_cast<size_t>(file.size > 0 ? file.size : 0)));
  const bool readOk =
      file.size >= 0 && file.data != nullptr &&
      std::fread(file.data, 1, static_cast<size_t>(file.size), f) ==
          static_cast<size_t>(file.size);
  std::fclose(f);
  if (!readOk)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "%s: cannot read",
                path);
  return ptrain::runtime::loadCheckpointBytes(__func__, states, num_states, bytesOwner.get(), file.data, file.size,
                                              path);
}

ptrain_status_t ptrain::runtime::loadCheckpointBytes(const char *call, const ptrain_state_desc_t *states,
                                                     int64_t num_states, const int64_t *bytes,
                                                     const char *data, int64_t size, const char *path) {
  // For each table state: where its bytes are in the file (-1: not seen).
  ptrain::runtime::StateBytes foundOwner(ptrain::runtime::allocArray<int64_t>(num_states));
  int64_t *found = foundOwner.get();
  if (found == nullptr)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "state table");
  for (int64_t i = 0; i < num_states; ++i)
    found[i] = -1;
  if (size < 32 || std::memcmp(data, kMagic, 8) != 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: not a ptrain checkpoint (bad magic)", path);
  Fnv1a fnv;
  fnv.add(data, static_cast<size_t>(size - 8));
  uint64_t stored;
  std::memcpy(&stored, data + size - 8, 8);
  if (stored != fnv.hash)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: checksum mismatch (stored %016llx, computed %016llx): "
                "the file is corrupt or truncated",
                path, static_cast<unsigned long long>(stored),
                static_cast<unsigned long long>(fnv.hash));

  Reader r{data, size - 8, 8};
  uint32_t version, count;
  uint64_t dataOffset;
  if (!r.get(version) || !r.get(count) || !r.get(dataOffset))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: truncated header", path);
  if (version != kVersion)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "%s: version %u, this runtime reads version %u", path, version,
                kVersion);
  const int64_t dataEnd = size - 8;
  char key[1024];
  for (uint32_t e = 0; e < count; ++e) {
    uint32_t keyBytes;
    int32_t dtype, kind, rank;
    if (!r.get(keyBytes) || keyBytes >= sizeof(key) || !r.get(key, keyBytes) ||
        !r.get(dtype) || !r.get(kind) || !r.get(rank) || rank < 0 || rank > 64)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: malformed header entry %u", path, e);
    key[keyBytes] = '\0';
    int64_t dims[64];
    for (int32_t d = 0; d < rank; ++d)
      if (!r.get(dims[d]))
        return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                    "%s: malformed header entry %u", path, e);
    uint64_t offset, numBytes;
    if (!r.get(offset) || !r.get(numBytes))
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: malformed header entry %u", path, e);
    int64_t i = 0;
    while (i < num_states && std::strcmp(states[i].key, key) != 0)
      ++i;
    if (i == num_states)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: holds state '%s', which this step does not have", path,
                  key);
    const ptrain_state_desc_t &s = states[i];
    bool same = dtype == s.dtype && rank == s.rank &&
                static_cast<int64_t>(numBytes) == bytes[i];
    for (int32_t d = 0; same && d < rank; ++d)
      same = dims[d] == s.dims[d];
    if (!same)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: state '%s' has another dtype or shape than the step's",
                  path, key);
    if (offset > static_cast<uint64_t>(dataEnd) ||
        dataOffset > static_cast<uint64_t>(dataEnd) - offset ||
        numBytes > static_cast<uint64_t>(dataEnd) - dataOffset - offset)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: state '%s' lies past the end of the file", path, key);
    if (found[i] >= 0)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: state '%s' appears twice", path, key);
    found[i] = static_cast<int64_t>(dataOffset + offset);
  }
  for (int64_t i = 0; i < num_states; ++i)
    if (found[i] < 0)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s: has no state '%s'", path, states[i].key);
  for (int64_t i = 0; i < num_states; ++i)
    std::memcpy(states[i].data, data + found[i],
                static_cast<size_t>(bytes[i]));
  return PTRAIN_OK;
}
