//===- SourceDir.cpp - The source tree the unit tests read inputs from ----===//

#include "SourceDir.h"

const std::string &ptrain_test::sourceDir() {
  static const std::string dir = PTRAIN_SOURCE_DIR;
  return dir;
}
