//===- NamedStorage.h - A value's storage and its pointer's name -*- C++ -*-===//
//
// Both code generators take every value's storage from the analysis of
// include/ptrain/Analysis/BufferLiveness.h and name its pointer variable:
// arguments <argPrefix><N>, results v<N> in op order (the names the block
// outliner recognizes, include/ptrain/Target/Common/BlockOutliner.h).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_NAMEDSTORAGE_H
#define PTRAIN_TARGET_COMMON_NAMEDSTORAGE_H

#include "ptrain/Analysis/BufferLiveness.h"

#include "llvm/ADT/DenseMap.h"

#include <string>

namespace mlir::ptrain::target {

/// Where a function's SSA value lives and its pointer variable.
struct NamedStorage : ValueStorage {
  std::string name;
};

/// The storage of every argument and result of `func`'s body (`ops`, in order) from `liveness`, named
/// `argPrefix`<argument number> and v<valueCount++>.
inline void nameStorage(func::FuncOp func, ArrayRef<Operation *> ops, const BufferLiveness &liveness,
                        llvm::StringRef argPrefix, int64_t &valueCount,
                        llvm::DenseMap<Value, NamedStorage> &storage) {
  for (BlockArgument arg : func.getBody().front().getArguments()) {
    NamedStorage s;
    static_cast<ValueStorage &>(s) = liveness.lookup(arg);
    s.name = argPrefix.str() + std::to_string(arg.getArgNumber());
    storage[arg] = s;
  }
  for (Operation *op : ops)
    for (Value result : op->getResults()) {
      NamedStorage s;
      static_cast<ValueStorage &>(s) = liveness.lookup(result);
      s.name = "v" + std::to_string(valueCount++);
      storage[result] = s;
    }
}

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_NAMEDSTORAGE_H
