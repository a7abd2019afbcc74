//===- StateStorage.cpp - Heap storage of a step, allocated at init -------===//

#include "Common/StateStorage.h"

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"
#include "Common/RuntimeCallTable.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

namespace {
/// StateAllocation::Indexed's `state_block_names` and `allocateStates` (StateStorage.h).
void emitStateAllocator(llvm::raw_ostream &s) {
  s << "/// The name of each state's block: state_<index>_<its key, every character but [0-9A-Za-z] as '_'>, the\n"
       "/// name of its pointer in this code (set once, never resized: the blocks keep pointers into it).\n"
       "std::vector<std::string> state_block_names;\n\n"
       "/// Allocates the blocks of the states `indices` of kStates (all n from 0 when nullptr; allocateBlock), their\n"
       "/// bytes from the descriptors' dims and dtype, sets their pointers (state_f32 or state_i64) and\n"
       "/// descriptors, and copies descriptor indices[i] into stage_table[i] when given.\n"
       "[[maybe_unused]] ptrain_status_t allocateStates(const int64_t *indices, int64_t n,\n"
       "                                                ptrain_state_desc_t *stage_table, int64_t &total) {\n"
       "  if (state_block_names.empty()) {\n"
       "    state_block_names.resize(kNumStates);\n"
       "    for (int64_t i = 0; i < kNumStates; ++i) {\n"
       "      std::string &name = state_block_names[i];\n"
       "      name = \"state_\" + std::to_string(i) + \"_\";\n"
       "      for (const char *c = kStates[i].key; *c; ++c) {\n"
       "        const bool alnum = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z');\n"
       "        name += alnum ? *c : '_';\n"
       "      }\n"
       "    }\n"
       "  }\n"
       "  for (int64_t i = 0; i < n; ++i) {\n"
       "    const int64_t index = indices ? indices[i] : i;\n"
       "    ptrain_state_desc_t &d = kStates[index];\n"
       "    const bool f32 = d.dtype == PTRAIN_DTYPE_F32;\n"
       "    int64_t bytes = f32 ? 4 : 8;\n"
       "    for (int32_t k = 0; k < d.rank; ++k)\n      bytes *= d.dims[k];\n"
       "    void *p = nullptr;\n"
       "    PTRAIN_STEP_CALL(allocateBlock(p, bytes, total, state_block_names[index].c_str()));\n"
       "    if (f32)\n      state_f32[index] = static_cast<float *>(p);\n"
       "    else\n      state_i64[index] = static_cast<int64_t *>(p);\n"
       "    d.data = p;\n"
       "    if (stage_table)\n      stage_table[i] = d;\n"
       "  }\n"
       "  return PTRAIN_OK;\n"
       "}\n\n";
}
} // namespace

void mlir::ptrain::target::emitStorageBlocks(llvm::raw_ostream &s, ArrayRef<std::string> totals,
                                             StateAllocation states) {
  const char *alloc = getRuntimeCallInfo(RuntimeCall::ptrain_alloc).name;
  const char *release = getRuntimeCallInfo(RuntimeCall::ptrain_free).name;
  s << "//===--- Storage: allocated per rank by ptrain_step_init, freed by ptrain_step_finalize ---===//\n\n"
       "/// A heap block of the storage: the variable that points to it, its address and size.\n"
       "struct StorageBlock {\n  const char *name;\n  void *ptr;\n  int64_t bytes;\n};\n"
       "std::vector<StorageBlock> storage_blocks;\n"
       "/// The storage allocated: of pipeline stage S on its ranks (S >= 0), of the whole module (-1); -2 none.\n"
       "int32_t storage_stage = -2;\n"
       "/// The bytes allocated, by kind.\n";
  for (const std::string &t : totals)
    s << "int64_t " << t << " = 0;\n";
  s << "\ntemplate <typename T>\nptrain_status_t allocateBlock(T *&out, int64_t bytes, int64_t &total, const char *name) {\n"
       "  void *p = nullptr;\n"
       "  PTRAIN_STEP_CALL("
    << alloc
    << "(bytes, &p));\n"
       "  storage_blocks.push_back({name, p, bytes});\n"
       "  total += bytes;\n"
       "  out = static_cast<T *>(p);\n"
       "  return PTRAIN_OK;\n"
       "}\n\n";
  if (states == StateAllocation::Indexed)
    emitStateAllocator(s);
  else
    s << "/// One state's heap block (a row of a stage's table): the address of its pointer variable (a float * when\n"
       "/// f32, else an int64_t *), its bytes and name, its entry of the state table and of the stage's table (-1:\n"
       "/// none).\n"
       "struct StateBlockRow {\n  void *var;\n  bool f32;\n  int64_t bytes;\n  const char *name;\n  int64_t index;\n"
       "  int64_t stage_index;\n};\n\n"
       "/// Allocates the blocks of `rows` (allocateBlock), sets their pointer variables and points the descriptors\n"
       "/// table[row.index] and stage_table[row.stage_index] (when given) at them.\n"
       "[[maybe_unused]] ptrain_status_t allocateStateBlocks(const StateBlockRow *rows, int64_t n,\n"
       "                                                     ptrain_state_desc_t *table,\n"
       "                                                     ptrain_state_desc_t *stage_table, int64_t &total) {\n"
       "  for (int64_t i = 0; i < n; ++i) {\n"
       "    const StateBlockRow &r = rows[i];\n"
       "    void *p = nullptr;\n"
       "    PTRAIN_STEP_CALL(allocateBlock(p, r.bytes, total, r.name));\n"
       "    if (r.f32)\n      *static_cast<float **>(r.var) = static_cast<float *>(p);\n"
       "    else\n      *static_cast<int64_t **>(r.var) = static_cast<int64_t *>(p);\n"
       "    table[r.index].data = p;\n"
       "    if (stage_table && r.stage_index >= 0)\n      stage_table[r.stage_index].data = p;\n"
       "  }\n"
       "  return PTRAIN_OK;\n"
       "}\n\n";
  s << "/// Frees every block (the pointers into them dangle until the next ptrain_step_init allocates again).\n"
       "[[maybe_unused]] ptrain_status_t releaseStorage() {\n"
       "  for (const StorageBlock &b : storage_blocks)\n"
       "    PTRAIN_STEP_CALL("
    << release
    << "(b.ptr, b.bytes));\n"
       "  storage_blocks.clear();\n"
       "  storage_stage = -2;\n";
  for (const std::string &t : totals)
    s << "  " << t << " = 0;\n";
  s << "  return PTRAIN_OK;\n"
       "}\n\n";
}

std::string mlir::ptrain::target::stateAllocations(ArrayRef<StateOp> list, llvm::function_ref<std::string(StateOp)> var,
                                                llvm::function_ref<int64_t(StateOp)> index, StringRef stageTable,
                                                ArrayRef<StateOp> stageList, StringRef total) {
  if (list.empty())
    return "";
  // A table walked by a loop (data, not code: issue 23 item 3), one row per state.
  std::string body = "  {\n    static const StateBlockRow rows[] = {\n";
  for (StateOp state : list) {
    RankedTensorType type = state.getTensorType();
    const int64_t bytes = numElements(type.getShape()) * elementBytes(type.getElementType());
    const std::string v = var(state);
    int64_t stageIndex = -1;
    if (!stageTable.empty())
      if (const StateOp *pos = llvm::find(stageList, state); pos != stageList.end())
        stageIndex = pos - stageList.begin();
    body += "        {&" + v + ", " + (type.getElementType().isF32() ? "true" : "false") + ", " +
            std::to_string(bytes) + ", \"" + v + "\", " + std::to_string(index(state)) + ", " +
            std::to_string(stageIndex) + "},\n";
  }
  body += "    };\n    PTRAIN_STEP_CALL(allocateStateBlocks(rows, " + std::to_string(list.size()) + ", kStates, " +
          (stageTable.empty() ? std::string("nullptr") : stageTable.str()) + ", " + total.str() + "));\n  }\n";
  return body;
}

std::string mlir::ptrain::target::stateIndexList(StringRef name, ArrayRef<int64_t> indices) {
  // A zero-length array is not C++: an empty list keeps one unused entry.
  return "const int64_t " + name.str() + "[" + std::to_string(std::max<size_t>(indices.size(), 1)) + "] = {" +
         (indices.empty() ? std::string("0") : wrapInts(indices, 16, "    ")) + "};\n";
}

std::string mlir::ptrain::target::allocateBlockCall(StringRef var, int64_t bytes, StringRef total) {
  return "PTRAIN_STEP_CALL(allocateBlock(" + var.str() + ", " + std::to_string(bytes) + ", " + total.str() + ", \"" +
         var.str() + "\"));";
}

void mlir::ptrain::target::emitStorageEntryPoints(llvm::raw_ostream &s) {
  s << "/// The heap blocks of this process's storage (after ptrain_step_init): block i's variable, address and\n"
       "/// bytes (ptrain-run --memory-log measures their resident pages); INVALID_ARGUMENT for i out of range.\n"
       "extern \"C\" PTRAIN_STEP_API int64_t ptrain_step_num_storage_blocks(void) {\n"
       "  return static_cast<int64_t>(storage_blocks.size());\n}\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_storage_block(int64_t i, const char **out_name,\n"
       "                                                                  void **out_ptr, int64_t *out_bytes) {\n"
       "  if (i < 0 || i >= static_cast<int64_t>(storage_blocks.size()))\n"
       "    return stepError(\"ptrain_step_storage_block: block %lld of %lld\", static_cast<long long>(i),\n"
       "                     static_cast<long long>(storage_blocks.size()));\n"
       "  *out_name = storage_blocks[i].name;\n  *out_ptr = storage_blocks[i].ptr;\n"
       "  *out_bytes = storage_blocks[i].bytes;\n  return PTRAIN_OK;\n}\n\n";
}

void mlir::ptrain::target::emitLastErrorEntryPoint(llvm::raw_ostream &s) {
  s << "//===--- State management ---===//\n\n";
  s << "/// The message of the last failed entry point: the step's own or the runtime's (ptrain_last_error()).\n"
       "extern \"C\" PTRAIN_STEP_API const char *ptrain_step_last_error(void) {\n"
       "  return step_error_own ? step_error : ptrain_last_error();\n}\n\n";
}

void mlir::ptrain::target::emitCheckpointEntryPoints(llvm::raw_ostream &s, const CheckpointEntryPoints &target) {
  s << target.saveDoc << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_save(const char *path) {\n"
    << target.saveFirst << "  PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_checkpoint_save).name
    << "(active_states, num_active_states, path));\n  return PTRAIN_OK;\n}\n\n";
  s << target.loadDoc << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_load(const char *path) {\n"
    << target.loadFirst << "  PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_checkpoint_load).name
    << "(active_states, num_active_states, path));\n" << target.loadLast << "  return PTRAIN_OK;\n}\n\n";
  s << target.tableDoc
    << "extern \"C\" PTRAIN_STEP_API int64_t ptrain_step_num_states(void) { return num_active_states; }\n"
       "extern \"C\" PTRAIN_STEP_API const ptrain_state_desc_t *ptrain_step_states(void) { return active_states; }\n"
    << target.tableMore << "\n";
}

void mlir::ptrain::target::emitStepInitEntryPoint(llvm::raw_ostream &os, const StepInitEntryPoint &target) {
  os << target.doc << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_init(const char *weights_onnx_path) {\n"
     << target.first << "  const char *path = weights_onnx_path ? weights_onnx_path : "
     << (target.onnxFile.empty() ? std::string("nullptr") : stringLiteral(target.onnxFile)) << ";\n"
     << target.communicators << target.storage;
  if (target.tpSlices)
    os << "  PTRAIN_STEP_CALL(initStates(path));\n";
  else
    os << "  PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_state_init_onnx).name
       << "(active_states, num_active_states, path));\n";
  os << target.last << "  return PTRAIN_OK;\n}\n\n";
}
