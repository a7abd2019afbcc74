//===- BlockOutliner.h - Repeated op blocks emitted once ---------*- C++ -*-===//
//
// The generated steps' code grows with the distinct ops, not with the layers
// (issue 23 item 3). A code generator writes each function as a sequence of
// chunks, one per op: the op's declarations (pointers into the arena, state
// reads, aliases) and its runtime calls. Identical transformer layers give
// runs of chunks that differ only in
//   - the names of the values (`v12` vs `v87`),
//   - the globals they read (the layer's states `state_blocks_3_w`, its
//     literal constants `constant_17`),
//   - integers: arena offsets, tags, telemetry site numbers.
// outlineRepeatedBlocks finds such runs, within a function and across the
// module's functions (the stages' forward and backward functions hold the
// same layers), writes one C++ function per run, taking the run's live-in
// pointers, the globals that differ and a row of the integers that differ,
// and replaces every occurrence by a call with its own row (a table: data,
// not code). A live-in that is a pointer into an arena (directly or through
// an alias chain: a reshape used in place) or a state in a table is computed
// inside the function from its row whenever every occurrence's is, so a call
// costs the same however many per-layer buffers its block reads (a backward
// reading its forward's saved statistics). The calls are the same runtime calls with the same pointers in
// the same order as the inline text, so the generated step computes bit for
// bit what it computed before.
//
// The search is the classic repeated-substring outlining of code size
// reduction (LLVM's MachineOutliner does it over machine instructions with a
// suffix tree, Kirchner et al.'s "Outlining" (2017)); here the alphabet is
// the chunk's shape (its text with names and liftable integers abstracted)
// and a candidate is taken by the bytes it saves, which prefers a layer
// repeated N times over a pair of layers repeated N/2 times.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_BLOCKOUTLINER_H
#define PTRAIN_TARGET_COMMON_BLOCKOUTLINER_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::ptrain::target {

/// One declaration a chunk makes at function scope.
struct ChunkDecl {
  std::string name; ///< the declared value (`v12`, `v12_request`)
  std::string text; ///< its line(s), with the trailing newline, e.g. "  float *v12 = ...;\n  (void)v12;\n"
};

/// One op's code in a generated function body.
/// Its text is header + decls + code, written under the comment "  // <location>".
struct EmittedChunk {
  std::string location;         ///< the op's location (a comment line of its own; not part of the shape)
  std::string header;           ///< what precedes the declarations (the op-name comment line)
  std::vector<ChunkDecl> decls; ///< function-scope declarations, in order
  std::string code;             ///< everything else (its `{ ... }` block of calls)
  bool barrier = false;         ///< never part of an outlined block
};

/// One generated function: its chunks, and the C type of every pointer in its scope (values and arguments),
/// e.g. "const float *", used for the parameters of an outlined block that reads it.
struct EmittedFunction {
  std::vector<EmittedChunk> chunks;
  llvm::StringMap<std::string> types;
  /// A lowered pipeline schedule (`ptrain.entry`): never outlined; written as a table of its ops that a loop
  /// walks (include/ptrain/Target/Common/ScheduleTable.h), or inline where the table cannot hold it.
  bool schedule = false;
};

/// The chunks of one function as a code generator writes them, op by op. A declaration that is only a pointer
/// (a state read used in place) is deferred to the first chunk that names it, so that each layer's reads fall
/// into the layer's block instead of a run of reads at the function's top (where the lowering puts them).
class ChunkList {
public:
  /// Appends `chunk`, its declarations preceded by the deferred ones its text names.
  void push(EmittedChunk chunk);
  /// Declarations to place before the first chunk pushed later that names them.
  void defer(const std::vector<ChunkDecl> &decls);
  /// The chunks; the deferred declarations no chunk named close them in a chunk of their own, at
  /// `unusedLocation`. Leaves the list empty.
  std::vector<EmittedChunk> take(llvm::StringRef unusedLocation = "state reads no op uses");

private:
  std::vector<EmittedChunk> chunks;
  std::vector<ChunkDecl> pending;
};

struct OutlineOptions {
  /// The smallest block worth a function, in chunks, and in bytes saved overall.
  int64_t minChunks = 4;
  int64_t minSavedBytes = 2048;
  /// The longest block considered, in chunks (bounds the search: O(chunks x maxChunks) per round).
  int64_t maxChunks = 2048;
  /// Names of the outlined functions and their row tables: prefix + index.
  std::string prefix = "ptrain_block_";
  /// The type of a namespace-scope variable (a state pointer, a constant array, an arena, a communicator),
  /// as any string equal for equal types; empty for a name that is not one. A global that differs between
  /// occurrences is passed by reference (`decltype(name) &`); the occurrences must agree on its type. Names
  /// of the form v<N>, v<N>_request, arg<N>, out_<N> (d_arg<N>, d_out_<N> on CUDA) are the function's values and
  /// arguments, never globals.
  llvm::function_ref<std::string(llvm::StringRef)> globalType;
  /// A global held in a table as well: an expression with `#` for its index (e.g.
  /// "static_cast<float *>(kStates[#].data)") and its index; empty for none. A block reads such globals by an
  /// index in its row instead of taking them as parameters. Optional.
  llvm::function_ref<std::pair<std::string, int64_t>(llvm::StringRef)> tableEntry;
  /// The macro a call of an outlined function is wrapped in: it returns a failed status as it is (the
  /// runtime calls inside set the error's owner).
  std::string forwardMacro = "PTRAIN_STEP_FORWARD";
  std::string statusType = "ptrain_status_t";
  std::string okValue = "PTRAIN_OK";
};

struct OutlineResult {
  /// Namespace-scope text: the outlined functions and their row tables, to precede the functions using them.
  std::string definitions;
  /// The body of every input function, in order: its chunks, occurrences replaced by calls.
  std::vector<std::string> bodies;
  int64_t numBlocks = 0;      ///< outlined functions
  int64_t numOccurrences = 0; ///< calls that replaced inline blocks
};

/// Outlines repeated blocks of `functions` (see the file comment). With `enabled` false, or when nothing
/// repeats, `bodies` are the chunks as written and `definitions` is empty. With `enabled`, the body of a
/// function marked `schedule` is its schedule table (writeScheduleTable) where one can be written.
OutlineResult outlineRepeatedBlocks(const std::vector<EmittedFunction> &functions, const OutlineOptions &options,
                                    bool enabled = true);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_BLOCKOUTLINER_H
