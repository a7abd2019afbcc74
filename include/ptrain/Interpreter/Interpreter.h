//===- Interpreter.h - reference interpreter for L0 model graphs --*- C++ -*-===//
//
// Evaluates a `func.func` of ptrain model ops on the host, so that an imported model's outputs can be compared
// with the exporter's reference outputs (docs/Interpreter.md). Weights are not in the IR (DESIGN decision 10):
// each `ptrain.state_read` asks a StateProvider for the state's value by its key, once per run. A step counter
// (kind `step_counter`, e.g. the `step` that dropout masks are keyed to) reads as 0, the first step, like the
// multi-rank executor's zero-initialized non-parameter states.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_INTERPRETER_H
#define PTRAIN_INTERPRETER_INTERPRETER_H

#include "ptrain/Interpreter/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace mlir::ptrain::interp {

/// Gives the value of a state symbol by its key (`ptrain.state ... key "wte.weight"`); `type` is the declared
/// type, which the interpreter checks the returned tensor against. An error (e.g. a missing initializer) is
/// passed on to the interpreter's caller.
using StateProvider = std::function<llvm::Expected<Tensor>(llvm::StringRef key, RankedTensorType type)>;

/// A StateProvider that looks keys up in a map; a missing key is an error naming it.
StateProvider makeMapStateProvider(llvm::StringMap<Tensor> values);

/// Counters of the last run, for `ptrain-interpret --print-summary`.
struct RunStatistics {
  /// Number of ops evaluated, by op name.
  std::map<std::string, int64_t> opCounts;
  /// Keys of the state values loaded, in the order of first read, with their types.
  std::vector<std::pair<std::string, std::string>> statesRead;
};

/// `file:line:col` for file locations (looking through names, call sites and fused locations), else MLIR's
/// spelling of `loc`; used to name ops in every interpreter and executor message.
std::string formatLocation(Location loc);

/// Prefixes `error` with `op`'s location and name: `file:7:10: 'ptrain.embedding': <message>`.
llvm::Error opError(Operation *op, llvm::Error error);

/// MLIR's spelling of `type` (`tensor<4x64xf32>`), for messages.
std::string typeString(Type type);

/// Evaluates one side-effect-free op of the reference interpreter's set (every model and backward op,
/// `ptrain.adamw`, `arith.constant`) on the operand values that `get` returns; std::nullopt when the op is not
/// one of them (state access, communication, calls and returns are the caller's: Interpreter, MultiRankExecutor).
/// The error, when there is one, is the kernel's message without the op's location.
std::optional<llvm::Expected<std::vector<Tensor>>> evaluateOp(Operation *op,
                                                              llvm::function_ref<const Tensor &(Value)> get);

/// evaluateOp on operand values given one per operand in order; returns one tensor per result. The importer
/// folds shape computations with it, so folding and interpretation share one semantics. Errors name what is
/// wrong (also an op without a rule), not the op.
llvm::Expected<std::vector<Tensor>> evaluateOp(Operation *op, llvm::ArrayRef<const Tensor *> operands);

/// Evaluates functions of one module. Supported ops: every ptrain model op, every backward op of
/// PTrainGradientOps.td (so a forward + backward step built by the gradient rules runs), `ptrain.adamw`,
/// `ptrain.state_read`,
/// `arith.constant` with a DenseElementsAttr, and `func.return`; anything else is an error naming the op.
class Interpreter {
public:
  Interpreter(ModuleOp module, StateProvider states);

  /// Runs the function `entry` on `arguments` (one per function argument, each of the argument's type) and
  /// returns its results. Errors (an unknown op, an id out of range, a missing or mistyped state value, wrong
  /// arguments) come back as an llvm::Error whose message starts with the op's location and name.
  llvm::Expected<std::vector<Tensor>> run(llvm::StringRef entry, llvm::ArrayRef<Tensor> arguments);

  /// Statistics of the last call to run().
  const RunStatistics &getStatistics() const { return statistics; }

private:
  ModuleOp module;
  StateProvider states;
  RunStatistics statistics;
};

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_INTERPRETER_H
