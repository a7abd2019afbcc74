//===- CommGroups.h - The communicators a generated step creates -*- C++ -*-===//
//
// Shared by --emit-cpp (MPI groups, EmitCpp.cpp) and --emit-cuda (NCCL
// sub-communicators, lib/Target/Cuda/EmitCudaComm.cpp): one communicator per
// (grid, set of axes) a collective or transfer names, registered on first use
// in the order the ops name them. Each target writes its own creation code;
// the groups, their variable names and their order are the same.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_COMMGROUPS_H
#define PTRAIN_TARGET_COMMON_COMMGROUPS_H

#include "Common/EmitHelpers.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::ptrain::target {

/// The communicators of the step: one per (grid, set of axes) a collective names, created by
/// ptrain_step_init over the world (rank = row-major grid coordinate).
class CommGroups {
public:
  struct Group {
    std::string var; ///< the static communicator variable
    GridOp grid;
    SmallVector<bool> inGroup;    ///< per grid axis: the group spans it
    int64_t subAxis = -1;         ///< a subgroup (ptrain.subgroup): the axis whose coordinates are restricted
    SmallVector<int64_t> members; ///< ... to these; ranks with another coordinate hold a null communicator
  };

  /// `tool` prefixes the errors ("--emit-cpp", "--emit-cuda").
  explicit CommGroups(std::string tool = "--emit-cpp") : tool(std::move(tool)) {}

  /// The variable of the communicator over `axes` of `grid` (restricted to `subgroup`'s members when given),
  /// registered on first use.
  FailureOr<std::string> lookup(Operation *op, StringRef gridName, ArrayAttr axes,
                                std::optional<Subgroup> subgroup = std::nullopt) {
    auto grid = SymbolTable::lookupNearestSymbolFrom<GridOp>(op, StringAttr::get(op->getContext(), gridName));
    if (!grid)
      return op->emitError(tool + ": no ptrain.grid @") << gridName;
    if (theGrid && theGrid != grid)
      return op->emitError(tool + ": only one ptrain.grid per module is supported");
    theGrid = grid;
    SmallVector<bool> in(grid.getAxisNames().size(), false);
    std::string var = "comm_" + identifierFrom(gridName);
    for (Attribute a : axes) {
      auto name = dyn_cast<StringAttr>(a);
      if (!name)
        return op->emitError(tool + ": grid axes must be names");
      bool found = false;
      for (auto [d, axis] : llvm::enumerate(grid.getAxisNames()))
        if (cast<StringAttr>(axis) == name) {
          in[d] = found = true;
        }
      if (!found)
        return op->emitError(tool + ": grid @") << gridName << " has no axis " << name;
      var += "_" + identifierFrom(name.getValue());
    }
    Group group{var, grid, in};
    if (subgroup) {
      std::optional<unsigned> d = grid.getAxisIndex(subgroup->axis);
      if (!d || !in[*d])
        return op->emitError(tool + ": the subgroup's axis '")
               << subgroup->axis << "' is not one of the collective's axes " << axes;
      group.subAxis = *d;
      group.members.assign(subgroup->members.begin(), subgroup->members.end());
      group.var += "_" + identifierFrom(subgroup->axis);
      for (int64_t c : group.members)
        group.var += "_" + std::to_string(c);
    }
    for (const Group &g : groups)
      if (g.var == group.var)
        return group.var;
    groups.push_back(group);
    return group.var;
  }

  /// The communicator over the one axis `axis` of `gridName`.
  FailureOr<std::string> lookupAxis(Operation *op, StringRef gridName, StringRef axis) {
    return lookup(op, gridName, ArrayAttr::get(op->getContext(), {StringAttr::get(op->getContext(), axis)}));
  }

  std::vector<Group> groups;
  GridOp theGrid;
  std::string tool;
};

/// Writes the grid of `comms` (kGridRank, kGridShape, kWorldSize = `worldSize`), ptrain_stage, one variable of
/// type `commType` per group and gridCoordinate(rank, axis): the generated code's view of the grid, the same on
/// both targets.
inline void emitGridDeclarations(const CommGroups &comms, int64_t worldSize, StringRef commType, llvm::raw_ostream &s) {
  GridOp grid = comms.theGrid;
  s << "/// @" << grid.getSymName() << ": rank = row-major coordinate over (";
  llvm::interleave(
      grid.getAxisNames(), s, [&](Attribute a) { s << cast<StringAttr>(a).getValue(); }, ", ");
  s << ").\nconstexpr int32_t kGridRank = " << grid.getShape().size() << ";\n";
  s << "const int64_t kGridShape[kGridRank] = {" << joinInts(grid.getShape()) << "};\n";
  s << "constexpr int32_t kWorldSize = " << worldSize << ";\n";
  s << "int32_t ptrain_stage = 0; ///< the coordinate on axis pp\n";
  for (const CommGroups::Group &g : comms.groups)
    s << commType << " " << g.var << " = nullptr;\n";
  s << "\n/// The coordinate of `rank` on grid axis `axis`.\n"
       "int64_t gridCoordinate(int32_t rank, int32_t axis) {\n"
       "  int64_t stride = 1;\n"
       "  for (int32_t d = kGridRank - 1; d > axis; --d)\n"
       "    stride *= kGridShape[d];\n"
       "  return (rank / stride) % kGridShape[axis];\n"
       "}\n\n";
}

/// Writes ptrain_step_init's block that creates group `g` through the generated createGroup (both targets:
/// its in_group flags, and a subgroup's axis and members).
inline void emitCreateGroupCall(const CommGroups::Group &g, llvm::raw_ostream &s) {
  s << "    {\n      static const bool in_group[kGridRank] = {";
  llvm::interleave(
      g.inGroup, s, [&](bool b) { s << (b ? "true" : "false"); }, ", ");
  s << "};\n";
  if (g.subAxis < 0) {
    s << "      PTRAIN_STEP_CALL(createGroup(in_group, &" << g.var << "));\n    }\n";
    return;
  }
  s << "      static const int64_t members[] = {" << joinInts(g.members) << "};\n";
  s << "      PTRAIN_STEP_CALL(createGroup(in_group, &" << g.var << ", " << g.subAxis << ", members, "
    << g.members.size() << "));\n    }\n";
}

/// Calls `fn` with the symbol of every state `func` reads or writes, in op order (a stage's state table).
inline void forEachStateSymbol(Operation *func, llvm::function_ref<void(StringAttr)> fn) {
  func->walk([&](Operation *op) {
    if (auto read = dyn_cast<StateReadOp>(op))
      fn(read.getStateAttr().getAttr());
    else if (auto write = dyn_cast<StateWriteOp>(op))
      fn(write.getStateAttr().getAttr());
  });
}

/// The declaration of `name`, the offsets of a ptrain.tp_split's slice: 0 except along its dimension, where the
/// rank's coordinate on the op's axis (gridCoordinate, emitGridDeclarations) times the part's size. Registers the
/// axis' communicator, so that the grid's coordinates are set up at init. Shared by --emit-cpp and --emit-cuda.
inline FailureOr<std::string> tpSplitOffsets(TPSplitOp op, CommGroups &comms, StringRef name) {
  if (failed(comms.lookup(op, op.getGrid(), ArrayAttr::get(op.getContext(), {op.getAxisAttr()}))))
    return failure();
  const std::string axis = std::to_string(*comms.theGrid.getAxisIndex(op.getAxis()));
  ArrayRef<int64_t> out = cast<RankedTensorType>(op.getResult().getType()).getShape();
  std::string offsets;
  for (int64_t d = 0; d < static_cast<int64_t>(out.size()); ++d)
    offsets += (d ? ", " : "") + (d == op.getDimAttr().getInt()
                                      ? "gridCoordinate(ptrain_rank, " + axis + ") * " + std::to_string(out[d])
                                      : std::string("0"));
  return "const int64_t " + name.str() + "[" + std::to_string(out.size()) + "] = {" + offsets + "};";
}

/// tpSplitOffsets' declaration appended to `block` (the current op's block of calls, indented); the array's name.
/// Both targets' KernelTarget::rankOffsetsArray.
inline FailureOr<std::string> writeTpSplitOffsets(TPSplitOp op, CommGroups &comms, StringRef name,
                                                  std::string &block) {
  FailureOr<std::string> decl = tpSplitOffsets(op, comms, name);
  if (failed(decl))
    return failure();
  block += "    " + *decl + "\n";
  return name.str();
}

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_COMMGROUPS_H
