//===- ConstantFile.cpp - A step's constant file (step.consts.bin) ------===//
//
// See ConstantFile.h.
//
//===----------------------------------------------------------------------===//

#include "Common/ConstantFile.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::ptrain::target;

int64_t mlir::ptrain::target::appendToConstantFile(std::string &file, StringRef bytes) {
  const int64_t offset = (static_cast<int64_t>(file.size()) + kConstantFileAlignment - 1) / kConstantFileAlignment *
                         kConstantFileAlignment;
  file.resize(offset, '\0');
  file += bytes.str();
  return offset;
}

LogicalResult mlir::ptrain::target::writeConstantFile(Location loc, StringRef flag, StringRef path, StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitError(loc) << flag << ": cannot write the constant file '" << path << "': " << ec.message();
  file << bytes;
  file.close();
  if (file.has_error())
    return emitError(loc) << flag << ": cannot write the constant file '" << path << "': " << file.error().message();
  return success();
}
