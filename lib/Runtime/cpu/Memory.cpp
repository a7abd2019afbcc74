//===- Memory.cpp - A compiled step's storage and its constant file -------===//
//
// The heap storage of a compiled step (states, arenas, constants; allocated by
// ptrain_step_init, freed by ptrain_step_finalize) with a process-wide counter
// of the bytes it holds, so a test can tie the memory plan to what the code
// allocates; and the read of the large constants a step keeps in a binary file
// beside its shared object (docs/CodegenCpu.md, "Storage").
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>

namespace {

/// Blocks from this size on are anonymous mappings: zero pages the kernel supplies lazily, so an allocation
/// costs resident memory only where it is written (a rank's unused arena tail, never-touched states).
constexpr int64_t kMapThreshold = 1 << 16;
constexpr size_t kAlignment = 64;

std::atomic<int64_t> allocatedBytes{0};

} // namespace

extern "C" ptrain_status_t ptrain_alloc(int64_t num_bytes, void **out_ptr) {
  PTRAIN_CHECK_SIZE(num_bytes);
  PTRAIN_CHECK_PTR(out_ptr);
  *out_ptr = nullptr;
  void *p = nullptr;
  if (num_bytes >= kMapThreshold) {
    p = mmap(nullptr, static_cast<size_t>(num_bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return ptrain::runtime::fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "mmap of %lld bytes failed: %s",
                                   static_cast<long long>(num_bytes), std::strerror(errno));
  } else {
    // aligned_alloc wants a multiple of the alignment; at least one block so that 0 bytes is a valid pointer.
    size_t rounded = (static_cast<size_t>(num_bytes) + kAlignment - 1) / kAlignment * kAlignment;
    p = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
    if (!p)
      return ptrain::runtime::fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "allocation of %lld bytes failed",
                                   static_cast<long long>(num_bytes));
    std::memset(p, 0, rounded ? rounded : kAlignment);
  }
  allocatedBytes += num_bytes;
  *out_ptr = p;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_free(void *ptr, int64_t num_bytes) {
  PTRAIN_CHECK_SIZE(num_bytes);
  if (!ptr)
    return PTRAIN_OK;
  if (num_bytes >= kMapThreshold) {
    if (munmap(ptr, static_cast<size_t>(num_bytes)) != 0)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "munmap of %lld bytes failed: %s",
                                   static_cast<long long>(num_bytes), std::strerror(errno));
  } else {
    std::free(ptr);
  }
  allocatedBytes -= num_bytes;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_allocated_bytes(int64_t *out_bytes) {
  PTRAIN_CHECK_PTR(out_bytes);
  *out_bytes = allocatedBytes.load();
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_read_beside(const void *anchor, const char *file_name, int64_t offset,
                                              int64_t num_bytes, void *out) {
  PTRAIN_CHECK_PTR(anchor);
  PTRAIN_CHECK_PTR(file_name);
  PTRAIN_CHECK_SIZE(offset);
  PTRAIN_CHECK_SIZE(num_bytes);
  PTRAIN_CHECK_PTR(out);
  Dl_info info{};
  if (!dladdr(anchor, &info) || !info.dli_fname)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                                 "no shared object contains the anchor %p (dladdr)", anchor);
  // The directory of the shared object, then the file name.
  char path[4096];
  const char *slash = std::strrchr(info.dli_fname, '/');
  int n = slash ? std::snprintf(path, sizeof(path), "%.*s/%s", static_cast<int>(slash - info.dli_fname),
                                info.dli_fname, file_name)
                : std::snprintf(path, sizeof(path), "%s", file_name);
  if (n < 0 || static_cast<size_t>(n) >= sizeof(path))
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "the path of '%s' beside '%s' is too long",
                                 file_name, info.dli_fname);
  FILE *f = std::fopen(path, "rb");
  if (!f)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "cannot open '%s': %s", path,
                                 std::strerror(errno));
  ptrain_status_t status = PTRAIN_OK;
  if (std::fseek(f, static_cast<long>(offset), SEEK_SET) != 0 ||
      std::fread(out, 1, static_cast<size_t>(num_bytes), f) != static_cast<size_t>(num_bytes))
    status = ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                                   "'%s' has no %lld bytes at offset %lld (a constant file of another build?)", path,
                                   static_cast<long long>(num_bytes), static_cast<long long>(offset));
  std::fclose(f);
  return status;
}
