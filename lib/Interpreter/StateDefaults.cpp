//===- StateDefaults.cpp - a parameter's value from its source or its ptrain.init ---===//
//
// See include/ptrain/Interpreter/StateDefaults.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/StateDefaults.h"

#include "ptrain/Dialect/PTrain/IR/PTrainStateInit.h"
#include "ptrain/Interpreter/Interpreter.h"
#include "ptrain/Runtime/StateInit.h"

#include <vector>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

char MissingStateError::ID = 0;

void MissingStateError::log(llvm::raw_ostream &os) const { os << message; }

std::error_code MissingStateError::convertToErrorCode() const { return llvm::inconvertibleErrorCode(); }

llvm::Expected<Tensor> interp::defaultStateValue(StateOp state, RankedTensorType type) {
  std::optional<StateInit> init = getStateInit(state);
  if (!init)
    return makeError("has no " + kStateInitAttrName);
  if ((init->kind != kOrthogonalInit && init->kind != kOrthogonalTransposedInit) || type.getRank() != 2 ||
      !type.getElementType().isF32())
    return makeError("its orthogonal init needs a rank-2 f32 tensor, got " + typeString(type));
  const int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  if (!::ptrain::runtime::orthogonalInit(values.data(), rows, cols, static_cast<uint64_t>(init->seed),
                                         init->kind == kOrthogonalTransposedInit))
    return makeError("its orthogonal init of " + typeString(type) + " failed (an empty matrix)");
  return Tensor::fromFloats(DType::F32, type.getShape(), std::vector<double>(values.begin(), values.end()));
}

llvm::Expected<Tensor>
interp::loadParameter(const std::function<llvm::Expected<Tensor>(llvm::StringRef, RankedTensorType)> &provider,
                      StateOp state, RankedTensorType type) {
  llvm::Expected<Tensor> value = provider(state.getKey(), type);
  if (value || !getStateInit(state))
    return value;
  llvm::Error other = llvm::handleErrors(value.takeError(), [](const MissingStateError &) {});
  if (other)
    return std::move(other);
  return defaultStateValue(state, type);
}
