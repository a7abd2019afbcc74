//===- TensorParallelSlices.cpp - Parameters sliced over tp at init -------===//
//
// See TensorParallelSlices.h. The slice of a parameter: dimension `dim` of the
// ONNX initializer viewed as groups x parts x chunk, the rank with coordinate c
// on the slice's axis holding [:, c, :] (Megatron-LM's column/row-parallel
// weights; a fused QKV projection has groups = 3).
//
//===----------------------------------------------------------------------===//

#include "Common/TensorParallelSlices.h"

#include "Common/CppTypes.h"
#include "Common/RuntimeCallTable.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

FailureOr<std::optional<TPSlice>> mlir::ptrain::target::readTPSlice(StateOp state, GridOp grid, std::string var) {
  TPSliceAttr slice = getTPSlice(state); // its fit to the state's type is verified (PTrainAttrs.td, C1-C9)
  if (!slice)
    return std::optional<TPSlice>();
  if (!grid)
    return state.emitError("--emit-cpp: a parameter sliced over axis \"")
           << slice.getAxis() << "\" needs a ptrain.grid with that axis and a collective on it";
  std::optional<unsigned> index = grid.getAxisIndex(slice.getAxis());
  if (!index)
    return state.emitError("--emit-cpp: the grid @")
           << grid.getSymName() << " has no axis \"" << slice.getAxis() << "\" for the parameter's " << kTPSliceAttr;
  TPSlice s;
  s.dims = var + "_dims";
  s.var = std::move(var);
  s.key = state.getKey().str();
  s.local = state.getTensorType();
  s.global.assign(slice.getShape().begin(), slice.getShape().end());
  s.dim = slice.getDim();
  s.groups = slice.getGroups();
  s.axis = *index;
  s.parts = grid.getShape()[*index];
  s.padded = slice.getPaddedSize();
  if (!s.local.getElementType().isF32() || s.padded != s.local.getShape()[s.dim] * s.parts || s.local.getRank() > 8)
    return state.emitError("--emit-cpp: ")
           << kTPSliceAttr << " " << slice << " does not fit the f32 state type " << s.local << " on " << s.parts
           << " ranks of axis \"" << slice.getAxis() << "\"";
  return std::optional<TPSlice>(std::move(s));
}

void mlir::ptrain::target::emitTPStateInit(ArrayRef<TPSlice> slices, llvm::raw_ostream &os) {
  os << "//===--- Tensor-parallel parameters: loaded at their global shape, cut to this rank's part ---===//\n\n"
        "/// A parameter --ptrain-shard-tp sliced: dimension `dim` of the ONNX initializer (global_dims) is\n"
        "/// viewed as groups x parts x chunk; the rank with coordinate c on grid axis `axis` holds [:, c, :].\n"
        "struct TPSlice {\n"
        "  float **local; ///< the state's storage (f32), allocated by ptrain_step_init\n"
        "  const int64_t *local_dims;\n"
        "  const int64_t *global_dims;\n"
        "  int64_t global_count;\n"
        "  int32_t rank;\n"
        "  int32_t dim;\n"
        "  int64_t groups;\n"
        "  int32_t axis;\n"
        "  int64_t parts;\n"
        "  int64_t padded; ///< global_dims[dim] padded with zero entries (a vocabulary; groups == 1)\n"
        "};\n\n";
  for (auto [i, s] : llvm::enumerate(slices)) {
    os << "// \"" << s.key << "\": " << s.local << " of " << s.global.size() << "-D global [";
    llvm::interleave(s.global, os, "x");
    os << "], dim " << s.dim << ", " << s.groups << " group(s)\n";
    os << "const int64_t tp_slice_" << i << "_global[" << s.global.size() << "] = {";
    llvm::interleaveComma(s.global, os);
    os << "};\n";
  }
  os << "const TPSlice kTPSlices[] = {\n";
  for (auto [i, s] : llvm::enumerate(slices))
    os << "    {&" << s.var << ", " << s.dims << ", tp_slice_" << i << "_global, " << numElements(s.global) << ", "
       << s.global.size() << ", " << s.dim << ", " << s.groups << ", " << s.axis << ", " << s.parts << ", " << s.padded
       << "},\n";
  os << "};\nconstexpr int64_t kNumTPSlices = " << slices.size() << ";\n\n";
  const char *init = getRuntimeCallInfo(RuntimeCall::ptrain_state_init_onnx).name;
  const char *slice = getRuntimeCallInfo(RuntimeCall::ptrain_slice).name;
  const char *insert = getRuntimeCallInfo(RuntimeCall::ptrain_insert_slice).name;
  const char *zero = getRuntimeCallInfo(RuntimeCall::ptrain_zero_bytes).name;
  os << "/// " << init
     << " of the active states, a sliced parameter read at its global shape into a temporary\n"
        "/// buffer and then cut: no state changes when the model cannot be read.\n"
        "ptrain_status_t initStates(const char *path) {\n"
        "  std::vector<ptrain_state_desc_t> descs(active_states, active_states + num_active_states);\n"
        "  std::vector<std::vector<float>> globals(kNumTPSlices);\n"
        "  for (ptrain_state_desc_t &d : descs)\n"
        "    for (int64_t j = 0; j < kNumTPSlices; ++j)\n"
        "      if (d.data == *kTPSlices[j].local) {\n"
        "        globals[j].resize(kTPSlices[j].global_count);\n"
        "        d.data = globals[j].data();\n"
        "        d.dims = kTPSlices[j].global_dims;\n"
        "      }\n"
        "  PTRAIN_STEP_CALL("
     << init
     << "(descs.data(), num_active_states, path));\n"
        "  for (int64_t j = 0; j < kNumTPSlices; ++j) {\n"
        "    if (globals[j].empty())\n"
        "      continue; // another stage's parameter\n"
        "    const TPSlice &s = kTPSlices[j];\n"
        "    const int64_t c = gridCoordinate(ptrain_rank, s.axis);\n"
        "    const int64_t chunk = s.padded / (s.groups * s.parts);\n"
        "    int64_t piece_dims[8], offsets[8], at[8];\n"
        "    for (int32_t d = 0; d < s.rank; ++d) {\n"
        "      piece_dims[d] = s.global_dims[d];\n"
        "      offsets[d] = at[d] = 0;\n"
        "    }\n"
        "    piece_dims[s.dim] = chunk;\n"
        "    if (s.padded != s.global_dims[s.dim]) {\n"
        "      // Entries [c chunk, (c + 1) chunk) of the padded dimension: the real ones, then zeros.\n"
        "      const int64_t begin = c * chunk, real = s.global_dims[s.dim];\n"
        "      const int64_t valid = begin >= real ? 0 : (real - begin < chunk ? real - begin : chunk);\n"
        "      PTRAIN_STEP_CALL("
     << zero
     << "(*s.local, s.global_count / real * chunk * 4));\n"
        "      if (valid == 0)\n"
        "        continue;\n"
        "      offsets[s.dim] = begin;\n"
        "      piece_dims[s.dim] = valid;\n"
        "      std::vector<float> piece(s.global_count / real * valid);\n"
        "      PTRAIN_STEP_CALL("
     << slice
     << "(globals[j].data(), 4, s.rank, s.global_dims, offsets, piece_dims, piece.data()));\n"
        "      PTRAIN_STEP_CALL("
     << insert
     << "(piece.data(), 4, s.rank, piece_dims, at, s.local_dims, *s.local));\n"
        "      continue;\n"
        "    }\n"
        "    std::vector<float> piece(s.groups > 1 ? s.global_count / (s.groups * s.parts) : 0);\n"
        "    for (int64_t g = 0; g < s.groups; ++g) {\n"
        "      offsets[s.dim] = (g * s.parts + c) * chunk;\n"
        "      if (s.groups == 1) {\n"
        "        PTRAIN_STEP_CALL("
     << slice
     << "(globals[j].data(), 4, s.rank, s.global_dims, offsets, piece_dims, *s.local));\n"
        "        continue;\n"
        "      }\n"
        "      PTRAIN_STEP_CALL("
     << slice
     << "(globals[j].data(), 4, s.rank, s.global_dims, offsets, piece_dims, piece.data()));\n"
        "      at[s.dim] = g * chunk;\n"
        "      PTRAIN_STEP_CALL("
     << insert
     << "(piece.data(), 4, s.rank, piece_dims, at, s.local_dims, *s.local));\n"
        "    }\n"
        "  }\n"
        "  return PTRAIN_OK;\n"
        "}\n\n";
}
