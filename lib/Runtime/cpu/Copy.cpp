//===- Copy.cpp - Byte copies and zeroing ---------------------------------===//
//
// A reshape that cannot alias its input, a state write, an optimizer's
// in-place update of a copy, and the zero of a pad or a scatter-add target.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cstring>

extern "C" ptrain_status_t ptrain_copy_bytes(const void *src,
                                             int64_t num_bytes, void *out) {
  PTRAIN_CHECK_SIZE(num_bytes);
  PTRAIN_CHECK_PTR(src);
  PTRAIN_CHECK_PTR(out);
  if (src != out)
    std::memmove(out, src, static_cast<size_t>(num_bytes));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_zero_bytes(void *out, int64_t num_bytes) {
  PTRAIN_CHECK_SIZE(num_bytes);
  PTRAIN_CHECK_PTR(out);
  std::memset(out, 0, static_cast<size_t>(num_bytes));
  return PTRAIN_OK;
}
