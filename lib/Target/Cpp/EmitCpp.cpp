//===- EmitCpp.cpp - The CPU code generator (--emit-cpp) ------------------===//
//
// One C++17 translation unit per module (docs/CodegenCpu.md); this file writes
// the unit and its entry points, the others one concept each (CppEmitter.h):
//   1. heap storage for every ptrain.state of the rank and the keyed state
//      table, allocated at init (EmitCppStorage.cpp);
//   2. per function, the storage analysis shared with the memory plan
//      (include/ptrain/Analysis/BufferLiveness.h, StorageRules::cpu()):
//      arguments and state reads are used in place, reshapes alias their
//      input, small constants are static arrays, and every other tensor (and
//      every kernel's scratch, cpuKernelScratch) gets an offset in one arena,
//      reused by liveness (EmitCppFunction.cpp);
//   3. per op (EmitCppOps.cpp), calls of the runtime's call table (RuntimeCallTable.h) whose
//      status is checked and returned, under a comment with the op's location
//      (codec ops: EmitCodecs.h);
//   4. the C ABI: ptrain_step_<func>, ptrain_step_init/save/load, the state
//      table accessors and, with communicators, the traffic per link
//      (EmitTraffic.h).
//   5. the ops' chunks of every function go through the block outliner
//      (include/ptrain/Target/Common/BlockOutliner.h): identical layers are
//      written once as functions, called with a row of what differs.
// The unit is built in memory and written only when every op was emitted.
//
//===----------------------------------------------------------------------===//

#include "CppEmitter.h"
#include "ptrain/Target/Common/StateTable.h"
#include "ptrain/Target/Cpp/KernelObject.h"
#include "ptrain/Transforms/Passes.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "EmitCodecs.h"

#include "Common/ConstantFile.h"
#include "Common/EmitTraffic.h"
#include "Common/OpGeometry.h"
#include "Common/PipelineDriver.h"
#include "Common/StateStorage.h"
#include "Common/TensorParallelSlices.h"
#include "Common/VerifyPlanBeforeEmit.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/ADT/StringSet.h"

#include <cctype>
#include <set>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

/// Whether `op` is the nested module of generated kernels (--ptrain-outline-elementwise).
static bool isKernelModule(Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  return module && module.getSymName() == kKernelModuleName;
}

/// The C declarations of the generated kernels the step may call (none without options.kernelsObject).
static std::string kernelDeclarations(ModuleOp module, const EmitCppOptions &options) {
  auto kernels = dyn_cast_or_null<ModuleOp>(SymbolTable::lookupSymbolIn(module, kKernelModuleName));
  if (options.kernelsObject.empty() || !kernels)
    return "";
  std::string text =
      "// The kernels --ptrain-outline-elementwise, --ptrain-outline-codecs and --ptrain-outline-adamw generated,\n"
      "// in the object ptrain-compile links (docs/GeneratedKernels.md).\n";
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    // The outputs are the trailing parameters, the first of them the first one the kernel writes (a
    // linalg.generic's init, or a memref.store's target in a row kernel).
    unsigned firstOutput = kernel.getNumArguments();
    auto written = [&](Value memref) {
      if (auto arg = dyn_cast<BlockArgument>(memref); arg && arg.getOwner()->getParentOp() == kernel)
        firstOutput = std::min(firstOutput, arg.getArgNumber());
    };
    kernel.walk([&](Operation *op) {
      if (auto g = dyn_cast<linalg::GenericOp>(op))
        for (Value init : g.getDpsInits())
          written(init);
      else if (auto store = dyn_cast<memref::StoreOp>(op))
        written(store.getMemRef());
      else if (auto store = dyn_cast<vector::StoreOp>(op))
        written(store.getBase());
    });
    text += kernelDeclaration(kernel, firstOutput);
  }
  return text + "\n";
}

LogicalResult CppEmitter::emit(raw_ostream &os) {
  if (failed(collectStates()))
    return failure();
  sites.collect(module);
  std::string functions;
  SmallVector<std::string> entryNames;
  SmallVector<FunctionArena> arenas;
  std::vector<std::unique_ptr<FunctionEmitter>> emitters;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      return mlir::emitError(func.getLoc(), "--emit-cpp: function @") << func.getSymName() << " has no body";
    int64_t bytes = 0;
    // A function that calls others (a lowered pipeline step) keeps its values in its own arena, since its
    // callees use the shared one.
    bool calls = !func.getOps<func::CallOp>().empty();
    std::string arena = calls ? "ptrain_arena_" + identifierFrom(func.getSymName()) : "ptrain_arena";
    globals[arena] = "unsigned char *";
    emitters.push_back(std::make_unique<FunctionEmitter>(func, states, comms, sites, constants, numConstants,
                                                         constantFile, globals, arena));
    emitters.back()->setUseKernels(!options.kernelsObject.empty());
    emitters.back()->setAccumulateGemms(options.accumulateGemmsIntoStates);
    emitters.back()->setFoldHeadPermutes(options.foldHeadPermutes);
    emitters.back()->setLayerNormSavedStats(options.layerNormSavedStats);
    if (failed(emitters.back()->prepare(bytes)))
      return failure();
    std::optional<int64_t> stage;
    if (auto s = getStage(func))
      stage = s.getIndex();
    // A pipeline module's function without a stage that uses states runs on no rank (its entry point says so).
    if (stage || !static_cast<bool>(getPipeline(module)) || !usesStates(func))
      arenas.push_back({calls ? arena : std::string(), bytes, stage});
    entryNames.push_back("ptrain_step_" + func.getSymName().str());
    if (stage) {
      llvm::SetVector<StateOp> &used = stageStates[*stage];
      forEachStateSymbol(func, [&](StringAttr sym) { used.insert(states[sym].op); });
    }
  }
  for (Operation &op : module.getBody()->getOperations())
    if (!isa<func::FuncOp, StateOp, GridOp>(op) && !isKernelModule(&op))
      return op.emitError("--emit-cpp: '") << op.getName() << "' at module level is not supported";

  // Identical layers (and any other repeated run of ops) are written once and called (BlockOutliner.h).
  for (StateOp state : stateOrder) {
    const StateInfo &info = states[state.getSymNameAttr()];
    globals[info.var] = state.getTensorType().getElementType().isF32() ? "float *" : "int64_t *";
  }
  for (const CommGroups::Group &g : comms.groups)
    globals[g.var] = "ptrain_comm_t";
  std::vector<target::EmittedFunction> bodies;
  for (auto &emitter : emitters)
    bodies.push_back(emitter->takeChunks());
  auto globalType = [&](StringRef name) { return globals.lookup(name); };
  // A state's pointer is also its entry of kStates (allocateStates sets both): a layer's block reads
  // its states by their indices in its row.
  llvm::StringMap<std::pair<std::string, int64_t>> stateEntries;
  for (StateOp state : stateOrder) {
    const StateInfo &info = states[state.getSymNameAttr()];
    stateEntries[info.var] = {std::string("static_cast<") +
                                  (state.getTensorType().getElementType().isF32() ? "float" : "int64_t") +
                                  " *>(kStates[#].data)",
                              info.index};
  }
  auto tableEntry = [&](StringRef name) { return stateEntries.lookup(name); };
  target::OutlineOptions outline;
  outline.globalType = globalType; // function_refs: the lambdas outlive the call
  outline.tableEntry = tableEntry;
  target::OutlineResult outlined = target::outlineRepeatedBlocks(bodies, outline, options.outlineBlocks);
  for (auto [emitter, body] : llvm::zip_equal(emitters, outlined.bodies))
    if (failed(emitter->writeFunction(functions, body)))
      return failure();

  // Pipeline modules: ptrain_step_train / ptrain_step_eval dispatch to this rank's lowered step
  // (--ptrain-lower-to-runtime: functions with ptrain.entry and ptrain.stage).
  const bool pipeline = static_cast<bool>(getPipeline(module));
  std::string driverCode;
  if (pipeline) {
    std::set<int64_t> stages;
    for (auto &entry : stageStates)
      stages.insert(entry.first);
    if (failed(emitPipelineDriver(module, comms, stages, driverCode, entryNames)))
      return failure();
  } else if (static_cast<bool>(getSchedule(module))) {
    return mlir::emitError(module.getLoc(), "--emit-cpp: ptrain.schedule without ptrain.pipeline");
  }
  const bool hasComm = !comms.groups.empty();
  int64_t worldSize = 1;
  int64_t ppAxis = -1;
  if (hasComm) {
    for (auto [d, size] : llvm::enumerate(comms.theGrid.getShape())) {
      worldSize *= size;
      if (cast<StringAttr>(comms.theGrid.getAxisNames()[d]).getValue() == "pp")
        ppAxis = d;
    }
  }

  std::string onnxFile;
  if (auto file = module->getAttrOfType<StringAttr>("ptrain.onnx_file"))
    onnxFile = file.getValue().str();

  std::string out;
  llvm::raw_string_ostream s(out);
  s << "// Generated by ptrain-translate --emit-cpp. Do not edit.\n"
       "//\n"
       "// A compiled ptrain training step for the CPU (docs/CodegenCpu.md): static state storage with a keyed\n"
       "// table, one static arena planned by liveness, and calls of the ptrain runtime's call table only\n"
       "// (include/ptrain/Runtime/RuntimeCalls.def). Every call's status is checked and returned; the cause is\n"
       "// in ptrain_step_last_error(). The entry points share the arena and the state: they are not reentrant.\n"
       "//\n"
       "// Entry points: ";
  llvm::interleave(entryNames, s, ", ");
  s << "\n\n"
       "#include \"ptrain/Runtime/ptrain_runtime.h\"\n\n"
       "#include <cstdarg>\n"
       "#include <cstdint>\n"
       "#include <cstdio>\n"
       "#include <string>\n"
       "#include <vector>\n\n"
    << kernelDeclarations(module, options)
    << "#define PTRAIN_STEP_API __attribute__((visibility(\"default\")))\n"
    << kStepCallMacros << "namespace {\n\n"
    << kStepErrorDefinitions << "//===--- State storage (";
  s << stateOrder.size() << " states) ---===//\n\n";
  // A state is its named pointer, a reference to its entry of the pointer arrays, and its row of kStates (key,
  // kind, dtype, dims in kStateDims): what grows with the states is a line of each (issue 23 item 3).
  const size_t numSlots = std::max<size_t>(stateOrder.size(), 1);
  s << "/// The pointer to each state's heap block by its index in kStates, f32 states in state_f32, i64 states in\n"
       "/// state_i64 (allocateStates), and each state's name for it.\n"
    << "float *state_f32[" << numSlots << "] = {};\nint64_t *state_i64[" << numSlots << "] = {};\n";
  // The named pointers: only those the code below names (the outlined blocks read the others through kStates,
  // the AdamW tables through state_f32), written once the unit is complete.
  s << target::kNamedStatesMark;
  // The table as runs of a layer's rows (StateTable.h): it grows with a layer's distinct states, not the layers.
  // A stage's list of indices in kStates (its states: a rank initializes, saves and loads its stage's) is
  // ranges; its table of descriptors is filled by allocateStates.
  std::vector<std::pair<std::string, std::vector<int64_t>>> stageLists;
  if (pipeline)
    for (auto &[stage, list] : stageStates) {
      std::vector<int64_t> indices;
      for (StateOp state : list)
        indices.push_back(states[state.getSymNameAttr()].index);
      stageLists.push_back({"kStage" + std::to_string(stage) + "StateIndices", std::move(indices)});
    }
  s << "\n" << target::stateTable(stateOrder, stageLists);
  if (pipeline)
    for (auto &[stage, list] : stageStates)
      s << "constexpr int64_t kNumStage" << stage << "States = " << list.size() << ";\nptrain_state_desc_t kStage"
        << stage << "States[" << std::max<size_t>(list.size(), 1) << "] = {};\n";
  s << "/// The states this process owns (the stage's in a pipeline; set by ptrain_step_init).\n";
  s << "const ptrain_state_desc_t *active_states = kStates;\nint64_t num_active_states = kNumStates;\n\n";
  s << "//===--- Constants ---===//\n\n" << constants;
  s << "//===--- The arenas: every intermediate tensor and kernel scratch, offsets planned by liveness ---===//\n\n";
  s << "/// The buffers of the functions that call no other (allocated by ptrain_step_init).\n"
       "unsigned char *ptrain_arena = nullptr;\n";
  for (const FunctionArena &a : arenas)
    if (!a.name.empty())
      s << "/// The buffers of a function that calls others (its callees use ptrain_arena): " << a.bytes
        << " bytes.\nunsigned char *" << a.name << " = nullptr;\n";
  s << "\n";
  if (hasComm) {
    s << "//===--- Communicators: MPI_COMM_WORLD's duplicate and one group per (grid, axes), created by "
         "ptrain_step_init ---===//\n\n";
    s << "ptrain_comm_t ptrain_world = nullptr;\nint32_t ptrain_rank = 0;\n";
    emitGridDeclarations(comms, worldSize, "ptrain_comm_t", s);
    s << "/// The group of this rank over the axes with in_group[d]: the ranks equal to it on every other axis,\n"
         "/// in increasing order (row-major over the group's axes). A subgroup (sub_axis >= 0): only the ranks\n"
         "/// whose coordinate on sub_axis is one of sub_members; a rank outside it creates nothing (*out = NULL).\n"
         "ptrain_status_t createGroup(const bool *in_group, ptrain_comm_t *out, int32_t sub_axis = -1,\n"
         "                            const int64_t *sub_members = nullptr, int32_t num_sub = 0) {\n"
         "  auto in_subgroup = [&](int32_t q) {\n"
         "    if (sub_axis < 0)\n"
         "      return true;\n"
         "    for (int32_t i = 0; i < num_sub; ++i)\n"
         "      if (gridCoordinate(q, sub_axis) == sub_members[i])\n"
         "        return true;\n"
         "    return false;\n"
         "  };\n"
         "  if (!in_subgroup(ptrain_rank)) {\n"
         "    *out = nullptr;\n"
         "    return PTRAIN_OK;\n"
         "  }\n"
         "  int32_t ranks[kWorldSize];\n"
         "  int32_t n = 0;\n"
         "  for (int32_t q = 0; q < kWorldSize; ++q) {\n"
         "    bool member = in_subgroup(q);\n"
         "    for (int32_t d = 0; d < kGridRank; ++d)\n"
         "      member = member && (in_group[d] || gridCoordinate(q, d) == gridCoordinate(ptrain_rank, d));\n"
         "    if (member)\n"
         "      ranks[n++] = q;\n"
         "  }\n"
         "  PTRAIN_STEP_CALL("
      << getRuntimeCallInfo(RuntimeCall::ptrain_comm_create_group).name
      << "(ptrain_world, ranks, n, out));\n"
         "  return PTRAIN_OK;\n"
         "}\n\n";
  }
  if (failed(emitStorageAllocation(pipeline, arenas, s)))
    return failure();
  // Parameters --ptrain-shard-tp sliced: ptrain_step_init loads them through initStates (Common/TensorParallelSlices.h).
  SmallVector<TPSlice> slices;
  for (StateOp state : stateOrder) {
    FailureOr<std::optional<TPSlice>> slice =
        readTPSlice(state, hasComm ? comms.theGrid : GridOp(), states[state.getSymNameAttr()].var);
    if (failed(slice))
      return failure();
    if (*slice) {
      (*slice)->dims = states[state.getSymNameAttr()].dims;
      slices.push_back(std::move(**slice));
    }
  }
  if (!slices.empty())
    emitTPStateInit(slices, s);
  emitTelemetryState(sites, {getRuntimeCallInfo(RuntimeCall::ptrain_codec_metrics_f32).name}, s);
  s << "\n} // namespace\n\n";
  target::emitLastErrorEntryPoint(s);
  // ptrain_step_init (StateStorage.h, the writer both targets share): this target's parts.
  target::StepInitEntryPoint init;
  llvm::raw_string_ostream doc(init.doc), first(init.first), comm(init.communicators);
  doc << "/// Loads every parameter by key from the ONNX model at `weights_onnx_path` (and its external data) and\n"
         "/// zeroes every other state (optimizer moments, step counter). NULL means the model this step was\n"
         "/// compiled from: "
      << (onnxFile.empty() ? std::string("(none recorded)") : onnxFile) << ".\n";
  if (hasComm)
    doc << "/// First initializes MPI (ptrain_comm_init) and creates the communicators; the world must have "
        << worldSize << " ranks.\n";
  if (pipeline)
    doc << "/// A rank owns the states of its pipeline stage (its coordinate on pp).\n";
  if (!options.kernelsFeatures.empty()) {
    // The generated kernels (docs/GeneratedKernels.md, "Which CPU") use these extensions: an older CPU gets an
    // error naming the one it lacks instead of an illegal instruction.
    first << "  __builtin_cpu_init();\n";
    for (const std::string &feature : options.kernelsFeatures)
      first << "  if (!__builtin_cpu_supports(\"" << feature << "\"))\n"
            << "    return stepError(\"ptrain_step_init: the generated kernels were compiled for "
            << options.kernelsCpuName << ", which has " << feature
            << ", and this CPU has not: recompile here, or with ptrain-compile --kernels-cpu naming the oldest CPU "
               "that runs the step\");\n";
  }
  init.onnxFile = onnxFile;
  if (hasComm) {
    comm << "  if (!ptrain_world) {\n";
    comm << "    ptrain_comm_t world = nullptr;\n";
    comm << "    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_init).name << "(&world));\n";
    comm << "    int32_t size = 0;\n";
    comm << "    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_size).name << "(world, &size));\n";
    comm << "    if (size != kWorldSize) {\n";
    comm << "      " << getRuntimeCallInfo(RuntimeCall::ptrain_comm_destroy).name << "(world);\n";
    comm << "      return stepError(\"ptrain_step_init: the step was compiled for " << worldSize
         << " ranks (grid @" << comms.theGrid.getSymName()
         << ") but MPI_COMM_WORLD has %d; launch it with mpirun -np " << worldSize << "\", static_cast<int>(size));\n";
    comm << "    }\n";
    comm << "    ptrain_world = world;\n";
    comm << "    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_rank).name
         << "(ptrain_world, &ptrain_rank));\n";
    for (const CommGroups::Group &g : comms.groups)
      emitCreateGroupCall(g, comm);
    if (ppAxis >= 0)
      comm << "    ptrain_stage = static_cast<int32_t>(gridCoordinate(ptrain_rank, " << ppAxis << "));\n";
    if (pipeline) {
      comm << "    switch (ptrain_stage) {\n";
      for (auto &entry : stageStates)
        comm << "    case " << entry.first << ":\n      active_states = kStage" << entry.first
             << "States;\n      num_active_states = kNumStage" << entry.first << "States;\n      break;\n";
      comm << "    }\n";
    }
    comm << "  }\n";
  }
  init.storage = "  PTRAIN_STEP_CALL(allocateStorage());\n";
  init.tpSlices = !slices.empty();
  target::emitStepInitEntryPoint(s, init);
  if (hasComm) {
    s << "/// This process's rank in MPI_COMM_WORLD and its pipeline stage (valid after ptrain_step_init).\n";
    s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_rank(int32_t *out_rank, int32_t *out_stage) {\n"
         "  if (!ptrain_world)\n    return stepError(\"ptrain_step_rank: call ptrain_step_init first\");\n"
         "  *out_rank = ptrain_rank;\n  *out_stage = ptrain_stage;\n  return PTRAIN_OK;\n}\n\n";
    s << "/// Frees the storage, destroys the communicators (and finalizes MPI if ptrain_step_init initialized it).\n";
    s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_finalize(void) {\n";
    s << "  PTRAIN_STEP_CALL(releaseStorage());\n";
    for (const CommGroups::Group &g : llvm::reverse(comms.groups))
      s << "  if (" << g.var << ") {\n    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_destroy).name
        << "(" << g.var << "));\n    " << g.var << " = nullptr;\n  }\n";
    s << "  if (ptrain_world) {\n    PTRAIN_STEP_CALL(" << getRuntimeCallInfo(RuntimeCall::ptrain_comm_destroy).name
      << "(ptrain_world));\n    ptrain_world = nullptr;\n  }\n  return PTRAIN_OK;\n}\n\n";
    emitTrafficEntryPoints(trafficGroups(comms), s);
    s << "/// Ends every rank of the job (MPI_Abort): the recovery after a communication error.\n";
    s << "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_abort(int32_t error_code) {\n"
         "  if (!ptrain_world)\n    return PTRAIN_OK;\n"
         "  PTRAIN_STEP_CALL("
      << getRuntimeCallInfo(RuntimeCall::ptrain_comm_abort).name << "(ptrain_world, error_code));\n"
         "  return PTRAIN_OK;\n}\n\n";
  }
  if (!hasComm)
    s << "/// Frees the storage ptrain_step_init allocated (a later ptrain_step_init allocates it again).\n"
         "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_finalize(void) {\n"
         "  PTRAIN_STEP_CALL(releaseStorage());\n  return PTRAIN_OK;\n}\n\n";
  s << "/// The bytes of this process's storage by kind (0 before ptrain_step_init): states, arenas and the\n"
       "/// constants read from the constant file; together what ptrain_allocated_bytes counts for this step.\n"
       "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_storage_bytes(int64_t *out_state_bytes,\n"
       "                                                                   int64_t *out_arena_bytes,\n"
       "                                                                   int64_t *out_constant_bytes) {\n"
       "  *out_state_bytes = storage_state_bytes;\n  *out_arena_bytes = storage_arena_bytes;\n"
       "  *out_constant_bytes = storage_constant_bytes;\n  return PTRAIN_OK;\n}\n\n";
  emitStorageEntryPoints(s);
  // The states are the heap blocks themselves: nothing around the checkpoint's calls (StateStorage.h).
  target::CheckpointEntryPoints checkpoints;
  checkpoints.saveDoc = "/// Writes every state this process owns by key to a checkpoint (format: docs/CodegenCpu.md).\n";
  checkpoints.loadDoc = "/// Reads every state this process owns by key from a checkpoint written by ptrain_step_save.\n";
  checkpoints.tableDoc = "/// The state table this process owns: key, storage, dtype, kind and shape of every state.\n";
  target::emitCheckpointEntryPoints(s, checkpoints);
  emitTelemetryEntryPoints(sites, hasComm, s);
  if (!outlined.definitions.empty()) {
    s << "//===--- Repeated blocks (" << outlined.numBlocks << " functions for " << outlined.numOccurrences
      << " calls): identical layers written once (BlockOutliner.h) ---===//\n\n";
    for (auto &emitter : emitters)
      s << emitter->getDeclaration();
    s << "\nnamespace {\n\n" << outlined.definitions << "} // namespace\n\n";
  }
  s << "//===--- Entry points ---===//\n\n" << functions;
  s << driverCode;
  os << target::withNamedStatePointers(out, stateOrder,
                                       [&](StateOp state) { return states.find(state.getSymNameAttr())->second.var; });
  return success();
}

static LogicalResult emitCppUnits(ModuleOp module, raw_ostream &os, const EmitCppOptions &options);

LogicalResult mlir::ptrain::emitCpp(ModuleOp module, raw_ostream &os, const EmitCppOptions &options) {
  if (!options.kernelsObject.empty()) {
    PassManager pm(module.getContext());
    pm.addPass(createOutlineElementwisePass());
    pm.addPass(createOutlineCodecsPass());
    pm.addPass(createOutlineAdamWPass());
    if (failed(pm.run(module)))
      return failure();
    std::error_code ec;
    llvm::raw_fd_ostream object(options.kernelsObject, ec, llvm::sys::fs::OF_None);
    if (ec)
      return mlir::emitError(module.getLoc(), "--emit-cpp: cannot write the kernel object '")
             << options.kernelsObject << "': " << ec.message();
    OwningOpRef<ModuleOp> empty;
    ModuleOp kernels = dyn_cast_or_null<ModuleOp>(SymbolTable::lookupSymbolIn(module, kKernelModuleName));
    if (!kernels) {
      empty = ModuleOp::create(module.getLoc());
      kernels = *empty;
    }
    KernelObjectOptions kernelOptions;
    kernelOptions.cpu = options.kernelsCpu;
    KernelObjectTarget target;
    if (failed(writeKernelObject(kernels, object, kernelOptions, &target)))
      return failure();
    EmitCppOptions withTarget = options;
    withTarget.kernelsCpuName = target.cpu;
    withTarget.kernelsFeatures = target.features;
    return emitCppUnits(module, os, withTarget);
  }
  return emitCppUnits(module, os, options);
}

/// emitCpp after the generated kernels' object, if any, is written.
static LogicalResult emitCppUnits(ModuleOp module, raw_ostream &os, const EmitCppOptions &options) {
  CppEmitter emitter(module, options);
  std::string code;
  llvm::raw_string_ostream codeOs(code);
  if (failed(emitter.emit(codeOs)))
    return failure();
  if (!options.constantsFile.empty() && failed(target::writeConstantFile(module.getLoc(), "--emit-cpp",
                                                                          options.constantsFile,
                                                                          emitter.getConstantFile().bytes)))
    return failure();
  os << code;
  return success();
}

void mlir::ptrain::registerEmitCppTranslation() {
  static llvm::cl::opt<std::string> constantsFile(
      "emit-cpp-constants", llvm::cl::value_desc("file"),
      llvm::cl::desc("--emit-cpp: write the large constants that are not generated (ConstantForm.h) to this file, "
                     "which the step reads at init from the directory of its libstep.so"),
      llvm::cl::init(""));
  static llvm::cl::opt<bool> outlineBlocks(
      "emit-cpp-outline",
      llvm::cl::desc("--emit-cpp: write repeated runs of ops (identical layers) once as functions called per "
                     "occurrence (default); =false writes every op inline"),
      llvm::cl::init(true));
  static llvm::cl::opt<std::string> kernelsObject(
      "emit-cpp-kernels", llvm::cl::value_desc("file.o"),
      llvm::cl::desc("--emit-cpp: outline the step's elementwise chains (--ptrain-outline-elementwise), call the "
                     "generated kernels and write their object file here (docs/GeneratedKernels.md)"),
      llvm::cl::init(""));
  static llvm::cl::opt<std::string> kernelsCpu(
      "emit-cpp-kernels-cpu", llvm::cl::value_desc("cpu"),
      llvm::cl::desc("--emit-cpp: the CPU the generated kernels are compiled for (an LLVM CPU name such as "
                     "x86-64-v3 or skylake-avx512; default native: this host's)"),
      llvm::cl::init("native"));
  static llvm::cl::opt<bool> accumulateGemms(
      "emit-cpp-accumulate-gemms",
      llvm::cl::desc("--emit-cpp: a weight gradient's GEMM accumulates into its gradient state (C = the state, "
                     "beta = 1; GemmFusion.h, the default); =false writes it to a buffer, adds and copies (the "
                     "reference of the test codegen-cpu-gemm-accumulate; the memory plan assumes the default)"),
      llvm::cl::init(true));
  static llvm::cl::opt<bool> foldHeadPermutes(
      "emit-cpp-fold-head-permutes",
      llvm::cl::desc("--emit-cpp: the attention's [B, T, H, D] <-> [B, H, T, D] permutes are read and written in "
                     "place by the GEMMs (ptrain_gemm_strided_f32; GemmFusion.h, the default); =false materializes "
                     "them with ptrain_permute_f32 (the reference of the test codegen-cpu-gemm-heads; the memory "
                     "plan assumes the default)"),
      llvm::cl::init(true));
  static llvm::cl::opt<bool> layerNormSavedStats(
      "emit-cpp-layer-norm-saved-stats",
      llvm::cl::desc("--emit-cpp: a layer norm's gradient reads the mean and rstd its forward saved (the default); "
                     "=false recomputes them by a forward into scratch (the reference of the test "
                     "codegen-cpu-layer-norm-stats)"),
      llvm::cl::init(true));
  TranslateFromMLIRRegistration reg(
      "emit-cpp", "emit a ptrain training step as C++ calling the ptrain runtime (CPU target)",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("--emit-cpp: expected a builtin.module");
        if (shouldVerifyPlanBeforeEmit() && failed(verifyPlanBeforeEmit(module, "--emit-cpp")))
          return failure();
        EmitCppOptions options;
        options.constantsFile = constantsFile;
        options.outlineBlocks = outlineBlocks;
        options.kernelsObject = kernelsObject;
        options.kernelsCpu = kernelsCpu;
        options.accumulateGemmsIntoStates = accumulateGemms;
        options.foldHeadPermutes = foldHeadPermutes;
        options.layerNormSavedStats = layerNormSavedStats;
        return emitCpp(module, os, options);
      },
      [](DialectRegistry &registry) {
        registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect, linalg::LinalgDialect,
                        memref::MemRefDialect>();
      });
}
