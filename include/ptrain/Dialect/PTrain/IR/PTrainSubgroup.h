//===- PTrainSubgroup.h - Sub-group collectives --------------------*- C++ -*-===//
//
// A `ptrain.all_reduce_start` normally reduces over its whole group: the ranks that differ from this one only
// in the collective's axes. The attribute `ptrain.subgroup` restricts the group to the ranks whose coordinate
// on one of those axes is a member:
//
//   %r = ptrain.all_reduce_start %wte on @grid axes [dp, pp] reduction = sum
//       {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<256x128xf32>
//
// is Optimus-CC's fused embedding sync (section 4.3) over {first, last} x dp of one TP rank at pp = 4: the
// middle stages post nothing. The group ranks stay row-major over the collective's axes, the subgroup axis
// counting its members only (in increasing order), so the reduction order is deterministic.
//
// Constraints (after (C1)-(C3) of every collective, checked by AllReduceStartOp's verifier):
// * (C4) `ptrain.subgroup` is a dictionary with one entry: a grid axis name -> array<i64> of coordinates;
// * (C5) that axis is one of the collective's axes;
// * (C6) the members are not empty, non-negative and strictly increasing (no coordinate twice);
// * (C7) every member is a coordinate of the axis (below its size in the grid);
// * (C8) in a function of a pipeline stage (`ptrain.stage = s`) with a subgroup of axis `pp`, s is a member:
//   a stage outside the group must not post the collective.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINSUBGROUP_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINSUBGROUP_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::ptrain {

class GridOp;

/// The name of the attribute.
inline constexpr llvm::StringLiteral kSubgroupAttr = "ptrain.subgroup";

/// A collective's subgroup: the coordinates of `axis` whose ranks take part.
struct Subgroup {
  llvm::StringRef axis;
  llvm::ArrayRef<int64_t> members;
  /// Whether coordinate `c` of the axis is a member.
  bool contains(int64_t c) const { return llvm::is_contained(members, c); }
  /// The position of coordinate `c` among the members (c must be a member).
  int64_t indexOf(int64_t c) const { return llvm::find(members, c) - members.begin(); }
};

/// The subgroup of `op`, or std::nullopt when it has none (or a malformed one: the verifier rejects those).
std::optional<Subgroup> getSubgroup(Operation *op);

/// Sets `op`'s subgroup to the coordinates `members` (increasing) of grid axis `axis`.
void setSubgroup(Operation *op, llvm::StringRef axis, llvm::ArrayRef<int64_t> members);

/// (C4)-(C6), (C8) of `op`, a collective over `axes`; a no-op without the attribute.
LogicalResult verifySubgroup(Operation *op, ArrayAttr axes);

/// (C7) against `grid`; a no-op without the attribute.
LogicalResult verifySubgroupInGrid(Operation *op, GridOp grid);

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINSUBGROUP_H
