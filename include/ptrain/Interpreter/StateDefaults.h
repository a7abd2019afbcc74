//===- StateDefaults.h - a parameter's value from its source or its ptrain.init -*- C++ -*-===//
//
// A StateProvider (Interpreter.h) gives states by key; a parameter that it does not hold and that names a
// default (`ptrain.state ... {ptrain.init = {kind = "orthogonal", seed = S}}`, the linear autoencoder's weights)
// takes the default instead, computed by the runtime's own generator (include/ptrain/Runtime/StateInit.h), so
// the reference interpreter, the multi-rank executor and a compiled step (ptrain_state_init_onnx) start from the
// same bits. Any other provider error (a malformed file, a wrong type) is passed on.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_STATEDEFAULTS_H
#define PTRAIN_INTERPRETER_STATEDEFAULTS_H

#include "ptrain/Interpreter/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>

namespace mlir::ptrain {
class StateOp;
} // namespace mlir::ptrain

namespace mlir::ptrain::interp {

/// The error of a state source that does not hold a key (ONNXInitializers::read, makeMapStateProvider); its
/// message is the source's own ("gpt.onnx: no initializer named 'ae/0->1/encoder'").
class MissingStateError : public llvm::ErrorInfo<MissingStateError> {
public:
  static char ID;
  explicit MissingStateError(std::string message) : message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  std::string message;
};

/// The default value of `state` (its `ptrain.init`) at type `type` (the state's own, or the global type of a
/// tensor-parallel slice); an error when the state has no init or the type does not fit it (C6 of
/// ptrain.state).
llvm::Expected<Tensor> defaultStateValue(StateOp state, RankedTensorType type);

/// The initial value of the parameter `state` at type `type`: `provider(key, type)`, or, when the provider does
/// not hold the key (MissingStateError) and the state has an init, defaultStateValue.
llvm::Expected<Tensor>
loadParameter(const std::function<llvm::Expected<Tensor>(llvm::StringRef, RankedTensorType)> &provider, StateOp state,
              RankedTensorType type);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_STATEDEFAULTS_H
