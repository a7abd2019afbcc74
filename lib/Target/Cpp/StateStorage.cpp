//===- StateStorage.cpp - Heap storage of a step, allocated at init -------===//

#include "StateStorage.h"

#include "CppTypes.h"
#include "RuntimeCallTable.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

void mlir::ptrain::cpp::emitStorageBlocks(llvm::raw_ostream &s, ArrayRef<std::string> totals) {
  const char *alloc = getRuntimeCallInfo(RuntimeCall::ptrain_alloc).name;
  const char *release = getRuntimeCallInfo(RuntimeCall::ptrain_free).name;
  s << "//===--- Storage: allocated per rank by ptrain_step_init, freed by ptrain_step_finalize ---===//\n\n"
       "/// A heap block of the storage and its size.\n"
       "struct StorageBlock {\n  void *ptr;\n  int64_t bytes;\n};\n"
       "std::vector<StorageBlock> storage_blocks;\n"
       "/// The storage allocated: of pipeline stage S on its ranks (S >= 0), of the whole module (-1); -2 none.\n"
       "int32_t storage_stage = -2;\n"
       "/// The bytes allocated, by kind.\n";
  for (const std::string &t : totals)
    s << "int64_t " << t << " = 0;\n";
  s << "\ntemplate <typename T> ptrain_status_t allocateBlock(T *&out, int64_t bytes, int64_t &total) {\n"
       "  void *p = nullptr;\n"
       "  PTRAIN_STEP_CALL("
    << alloc
    << "(bytes, &p));\n"
       "  storage_blocks.push_back({p, bytes});\n"
       "  total += bytes;\n"
       "  out = static_cast<T *>(p);\n"
       "  return PTRAIN_OK;\n"
       "}\n\n"
       "/// Frees every block (the pointers into them dangle until the next ptrain_step_init allocates again).\n"
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

std::string mlir::ptrain::cpp::stateAllocations(ArrayRef<StateOp> list, llvm::function_ref<std::string(StateOp)> var,
                                                llvm::function_ref<int64_t(StateOp)> index, StringRef stageTable,
                                                ArrayRef<StateOp> stageList, StringRef total) {
  std::string body;
  for (StateOp state : list) {
    RankedTensorType type = state.getTensorType();
    const int64_t bytes = numElements(type.getShape()) * elementBytes(type.getElementType());
    const std::string v = var(state);
    body += "  PTRAIN_STEP_CALL(allocateBlock(" + v + ", " + std::to_string(bytes) + ", " + total.str() +
            "));\n  kStates[" + std::to_string(index(state)) + "].data = " + v + ";\n";
    if (!stageTable.empty())
      if (const StateOp *pos = llvm::find(stageList, state); pos != stageList.end())
        body += "  " + stageTable.str() + "[" + std::to_string(pos - stageList.begin()) + "].data = " + v + ";\n";
  }
  return body;
}
