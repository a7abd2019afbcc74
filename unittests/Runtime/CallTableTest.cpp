//===- CallTableTest.cpp - RuntimeCalls.def against the library -----------===//
//
// Every entry of the call table shared with the compiler must be defined and
// exported by libptrain_runtime with C linkage, and follow the ABI convention
// (status return). Also covers the error model: statuses, messages, and the
// thread-local last error.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include <cstring>
#include <dlfcn.h>
#include <set>
#include <string>
#include <thread>
#include <type_traits>

namespace {

struct Entry {
  const char *name;
  void *address;
  bool returnsStatus;
};

const Entry kEntries[] = {
#define PTRAIN_RUNTIME_CALL(name, ret, params)                                 \
  {#name, reinterpret_cast<void *>(&name),                                     \
   std::is_same<ret, ptrain_status_t>::value},
#include "ptrain/Runtime/RuntimeCalls.def"
};

TEST(CallTable, EveryEntryIsExportedByTheRuntimeLibrary) {
  ASSERT_GT(sizeof(kEntries) / sizeof(kEntries[0]), 30u);
  for (const Entry &entry : kEntries) {
    EXPECT_NE(entry.address, nullptr) << entry.name;
    // Looked up by its unmangled name: proves C linkage and default
    // visibility in the shared library.
    void *symbol = dlsym(RTLD_DEFAULT, entry.name);
    ASSERT_NE(symbol, nullptr) << entry.name << " is not exported: "
                               << dlerror();
    Dl_info info;
    ASSERT_NE(dladdr(symbol, &info), 0) << entry.name;
    EXPECT_NE(std::strstr(info.dli_fname, "libptrain_runtime"), nullptr)
        << entry.name << " resolves into " << info.dli_fname;
  }
}

TEST(CallTable, NamesAreUniqueAndPrefixed) {
  std::set<std::string> names;
  for (const Entry &entry : kEntries) {
    EXPECT_EQ(std::strncmp(entry.name, "ptrain_", 7), 0) << entry.name;
    EXPECT_TRUE(names.insert(entry.name).second) << "duplicate " << entry.name;
  }
}

TEST(CallTable, EveryCallButTheStringAccessorsReturnsAStatus) {
  for (const Entry &entry : kEntries) {
    const bool isString = std::strcmp(entry.name, "ptrain_last_error") == 0 ||
                          std::strcmp(entry.name, "ptrain_status_string") == 0;
    EXPECT_EQ(entry.returnsStatus, !isString) << entry.name;
  }
}

TEST(ErrorModel, InvalidArgumentNamesTheCallAndTheCause) {
  float x = 0.0f;
  EXPECT_EQ(ptrain_gelu_fwd_f32(&x, -3, &x), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(),
               "ptrain_gelu_fwd_f32: 'n' must be >= 0, got -3");
  EXPECT_EQ(ptrain_gelu_fwd_f32(nullptr, 1, &x),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(),
               "ptrain_gelu_fwd_f32: 'x' must not be null");
  EXPECT_STREQ(ptrain_status_string(PTRAIN_ERROR_DEADLINE_EXCEEDED),
               "PTRAIN_ERROR_DEADLINE_EXCEEDED");
  EXPECT_STREQ(ptrain_status_string(1234), "PTRAIN_ERROR_UNKNOWN");
}

TEST(ErrorModel, SuccessLeavesTheLastErrorAlone) {
  float x = 1.0f, y = 0.0f;
  ASSERT_EQ(ptrain_fill_f32(nullptr, 1, 0.0f), PTRAIN_ERROR_INVALID_ARGUMENT);
  const std::string before = ptrain_last_error();
  ASSERT_PTRAIN_OK(ptrain_gelu_fwd_f32(&x, 1, &y));
  EXPECT_EQ(before, ptrain_last_error());
}

TEST(ErrorModel, LastErrorIsPerThread) {
  ASSERT_EQ(ptrain_fill_f32(nullptr, 1, 0.0f), PTRAIN_ERROR_INVALID_ARGUMENT);
  const std::string mine = ptrain_last_error();
  std::string theirs;
  std::thread other([&] {
    theirs = ptrain_last_error(); // Nothing failed on this thread yet.
    int32_t ids[1] = {7};
    float table[2] = {0, 0}, out[1];
    ptrain_embedding_fwd_f32(table, ids, 1, 2, 1, out);
  });
  other.join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(mine, ptrain_last_error());
}

} // namespace
