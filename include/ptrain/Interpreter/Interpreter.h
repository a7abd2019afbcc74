//===- Interpreter.h - reference interpreter for L0 model graphs --*- C++ -*-===//
//
// Evaluates a `func.func` of ptrain model ops on the host, so that an imported model's outputs can be compared
// with the exporter's reference outputs (docs/Interpreter.md). Weights are not in the IR (DESIGN decision 10):
// each `ptrain.state_read` asks a StateProvider for the state's value by its key, once per run.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_INTERPRETER_H
#define PTRAIN_INTERPRETER_INTERPRETER_H

#include "ptrain/Interpreter/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <map>
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

/// Evaluates one side-effect-free op (a model op, a backward op, `arith.constant`) on operand values, one per
/// operand in order, and returns one tensor per result. The importer folds shape computations with it, so
/// folding and interpretation share one semantics. Errors name what is wrong, not the op.
llvm::Expected<std::vector<Tensor>> evaluateOp(Operation *op, llvm::ArrayRef<const Tensor *> operands);

/// Evaluates functions of one module. Supported ops: every ptrain model op, every backward op of
/// PTrainGradientOps.td (so a forward + backward step built by the gradient rules runs), `ptrain.state_read`,
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
