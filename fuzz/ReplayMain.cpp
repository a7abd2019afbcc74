//===- ReplayMain.cpp - Runs a fuzz target on files, without libFuzzer ----===//
//
// The normal (gcc) build links each fuzz target with this main instead of libFuzzer, so that the committed
// crashers (fuzz/regressions/<target>/) and the seeds run as CTests everywhere:
//   ptrain-fuzz-<target> FILE_OR_DIR...
// runs LLVMFuzzerTestOneInput once on every file given and on every file of every directory given (not
// recursive), like a libFuzzer binary given files. A target reports a broken property by aborting; this
// main exits 1 if a file cannot be read or no file was run.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

bool runFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read\n", path.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "Running: %s (%zu bytes)\n", path.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  int ran = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (!runFile(argv[i]))
        return 1;
      ++ran;
      continue;
    }
    DIR *dir = opendir(argv[i]);
    if (!dir)
      return 1;
    std::vector<std::string> files;
    while (dirent *e = readdir(dir)) {
      const std::string path = std::string(argv[i]) + "/" + e->d_name;
      if (e->d_name[0] != '.' && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        files.push_back(path);
    }
    closedir(dir);
    std::sort(files.begin(), files.end());
    for (const std::string &path : files) {
      if (!runFile(path))
        return 1;
      ++ran;
    }
  }
  std::fprintf(stderr, "Executed %d inputs\n", ran);
  return ran > 0 ? 0 : 1;
}
