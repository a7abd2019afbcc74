//===- SourceDir.h - The source tree the unit tests read inputs from ------===//
//
// Unit tests read bundled models and inputs from the source tree. Its path is
// compiled into one translation unit (SourceDir.cpp) instead of every test
// file, so that checkouts in different folders share ccache entries for all
// other files (CCACHE_BASEDIR, scripts/build.sh).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_UNITTESTS_SOURCEDIR_H
#define PTRAIN_UNITTESTS_SOURCEDIR_H

#include <string>

namespace ptrain_test {

/// The absolute path of the ptrain source tree (no trailing slash).
const std::string &sourceDir();

} // namespace ptrain_test

#endif // PTRAIN_UNITTESTS_SOURCEDIR_H
