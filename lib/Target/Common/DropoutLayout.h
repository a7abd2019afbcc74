//===- DropoutLayout.h - The global index of a dropout's mask ---*- C++ -*-===//
//
// A ptrain.dropout with a layout (lib/Transforms/DropoutRows.cpp, sharded
// ops) draws its mask from the global index of each local element, as the
// reference interpreter does (lib/Interpreter/Elementwise.cpp, dropoutLayout),
// so every rank's mask is the one-rank run's. Both targets pass the same
// arguments to their dropout kernels (docs/CodegenCpu.md, "LLaMA-style ops and
// dropout").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_DROPOUTLAYOUT_H
#define PTRAIN_TARGET_COMMON_DROPOUTLAYOUT_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Support/LogicalResult.h"

#include <string>

namespace mlir::ptrain::target {

/// The runtime arguments of a ptrain.dropout's #ptrain.dropout_layout (PTrainPlanAttrs.h): the global index
/// of each local element, as the reference interpreter computes it. Shared by --emit-cpp and --emit-cuda (which
/// reads the counter on the device).
struct DropoutLayoutArgs {
  bool global = false;           ///< the op has a layout (else: ptrain_dropout_f32, indices 0..n-1)
  int64_t mid = 0, inner = 1;    ///< the sharded dimension's local size (0: not sharded), elements after it
  std::string part = "0";        ///< this rank's part along it (a C expression) ...
  int64_t parts = 1;             ///< ... of parts
  bool packedRows = false;       ///< the counter packs step + 2^32 row (lib/Transforms/DropoutRows.cpp) ...
  int64_t rowElems = 0;          ///< ... and a row has this many global elements
  std::string replicaCoordinate; ///< non-empty: the rows are offset by this coordinate * replicaRows
  int64_t replicaRows = 0;
};

/// The layout arguments of `op`, or an error at it (prefixed by `flag`) when the layout names an unknown axis.
FailureOr<DropoutLayoutArgs> dropoutLayoutArgs(DropoutOp op, StringRef flag);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_DROPOUTLAYOUT_H
