//===- EmitCudaModelOps.h - Model ops beyond the GPT core in --emit-cuda -*- C++ -*-===//
//
// The per-op mapping of --emit-cuda for the ops the GPT core step does not
// have (docs/CodegenCuda.md): reduce / broadcast_to, cast / gather /
// log_softmax (the BERT exports) and the vocabulary-parallel ops with their
// tp all-gather over NCCL (clipping and the optimizers are both targets':
// lib/Target/Common/OptimizerOps.cpp). EmitCuda.cpp's function emitter implements
// CudaCallWriter; each op becomes calls of RuntimeCallsCuda.def.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_EMITCUDAMODELOPS_H
#define PTRAIN_TARGET_CUDA_EMITCUDAMODELOPS_H

#include "CudaCallTable.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"

#include <string>

namespace mlir::ptrain::cuda {

/// What the op emitters below need from the function being emitted.
class CudaCallWriter {
public:
  virtual ~CudaCallWriter() = default;
  /// The device pointer variable of `v`.
  virtual std::string valuePtr(Value v) const = 0;
  /// A checked call of `callee` in the current op's block (its arity is checked).
  virtual LogicalResult emitCall(CudaCall callee, ArrayRef<std::string> args) = 0;
  /// A pointer to `bytes` of arena scratch of the current op, as `type *`.
  virtual std::string scratch(int64_t bytes, StringRef type) = 0;
  /// A `static const` host array in the current op's block ("nullptr" when empty).
  virtual std::string constArray(ArrayRef<int64_t> values, StringRef name, StringRef type) = 0;
  /// The NCCL communicator of `axis` of grid `grid` (registered for the step's init), or an error at `op`.
  virtual FailureOr<std::string> axisCommunicator(Operation *op, StringRef grid, StringRef axis) = 0;
  /// The grid of the module's communicators (null before the first lookup).
  virtual GridOp theGrid() const = 0;
};

/// `ids` (i64) cast to int32 into scratch of the current op, as every id-taking CUDA kernel wants them; an
/// error at `op` for f32 ids.
FailureOr<std::string> int32Ids(Operation *op, Value ids, CudaCallWriter &w);

/// Whether `op` is one of the ops emitCudaModelOp handles.
bool isCudaModelOp(Operation *op);

/// The runtime calls of `op` (isCudaModelOp), or an error naming the op and what is not supported.
LogicalResult emitCudaModelOp(Operation *op, CudaCallWriter &w);

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_EMITCUDAMODELOPS_H
