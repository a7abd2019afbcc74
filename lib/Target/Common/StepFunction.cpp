//===- StepFunction.cpp - One function of the step, for both targets ------===//
//
// See StepFunction.h. The walk, the type checks and the storage were written
// twice, once in each target's FunctionEmitter (issue 23 item 1).
//
//===----------------------------------------------------------------------===//

#include "Common/StepFunction.h"

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"

#include "ptrain/Analysis/GemmFusion.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

FailureOr<RankedTensorType> mlir::ptrain::target::checkTensorType(Operation *op, Type type, const Twine &what,
                                                                  StringRef flag, bool codes, bool masks) {
  if (auto request = dyn_cast<RequestType>(type)) {
    if (!request.getValueType())
      return RankedTensorType(); // a send's request: no buffer of its own
    type = request.getValueType();
  }
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) {
    op->emitError(flag) << ": " << what << " has type " << type << "; only ranked tensors are supported";
    return failure();
  }
  if (!tensor.hasStaticShape()) {
    op->emitError(flag) << ": " << what << " has the dynamic shape " << type << "; only static shapes are supported";
    return failure();
  }
  Type elem = tensor.getElementType();
  if (!isModelElementType(elem) && !(codes && isCodeElementType(elem)) && !(masks && isMaskElementType(elem))) {
    op->emitError(flag) << ": " << what << " has element type " << elem
                        << (codes   ? "; only f32, i64 and the codec codes' i32, i8, f16 and bf16 are supported"
                            : masks ? "; only f32, i64 and i1 (masks) are supported"
                                    : "; only f32 and i64 are supported");
    return failure();
  }
  return tensor;
}

std::string StepFunction::hostArray(ArrayRef<int64_t> values, StringRef name, StringRef type) {
  if (values.empty())
    return "nullptr";
  block += "    static const " + type.str() + " " + name.str() + "[" + std::to_string(values.size()) + "] = {" +
           joinInts(values) + "};\n";
  return name.str();
}

LogicalResult StepFunction::checkOps() {
  if (!func.getBody().hasOneBlock())
    return mlir::emitError(func.getLoc(), flag())
           << ": function @" << func.getSymName() << " has control flow (more than one block)";
  // A stage function called by the step may take 16-bit parameter copies, cast once per step by its caller
  // (docs/MixedPrecision.md, "The once-per-step parameter cast"); the arguments of a function no function calls
  // (the entry points the driver calls) stay f32 and i64.
  auto module = func->getParentOfType<ModuleOp>();
  const bool called = module && !func->hasAttr("ptrain.entry") && !SymbolTable::symbolKnownUseEmpty(func, module);
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    const bool half = called && tensor && isa<BFloat16Type, Float16Type>(tensor.getElementType());
    if (failed(checkTensorType(func, type, "argument #" + Twine(i), flag(), half)))
      return failure();
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    if (failed(checkTensorType(func, type, "result #" + Twine(i), flag())))
      return failure();
  for (Operation &op : func.getBody().front()) {
    if (failed(checkOp(op)))
      return failure();
    // Codes (and the transfers and waits that carry them) may have the codecs' element types; so may the mixed
    // precision casts, the 16-bit GEMMs, the 16-bit tp all-reduces with fp32 accumulation and the calls that pass
    // the once-per-step 16-bit parameter copies (docs/MixedPrecision.md; a cast's element types are checked where
    // it is emitted, a callee's arguments by the callee).
    auto matmul = dyn_cast<MatmulOp>(op);
    auto tpSum = dyn_cast<TPAllReduceOp>(op);
    const bool codes = isa<CompressOp, DecompressOp, SendStartOp, RecvStartOp, WaitOp, CastOp, func::CallOp>(op) ||
                       (matmul && matmul.getAccumulate()) || (tpSum && tpSum.getAccumulate());
    const bool masks = allowsMasks(op);
    for (auto [i, v] : llvm::enumerate(op.getOperands()))
      if (failed(checkTensorType(&op, v.getType(), "operand #" + Twine(i), flag(), codes, masks)))
        return failure();
    for (auto [i, v] : llvm::enumerate(op.getResults()))
      if (failed(checkTensorType(&op, v.getType(), "result #" + Twine(i), flag(), codes, masks)))
        return failure();
    opIndex[&op] = ops.size();
    ops.push_back(&op);
  }
  return success();
}

void StepFunction::planStorage(StorageRules rules, bool place, StringRef argPrefix, StringRef outPrefix) {
  this->outPrefix = outPrefix.str();
  liveness.emplace(func, std::move(rules));
  liveness->run(place);
  nameStorage(func, ops, *liveness, argPrefix, valueCount, storage);
  for (BlockArgument arg : func.getBody().front().getArguments())
    types[argPrefix.str() + std::to_string(arg.getArgNumber())] =
        "const " + std::string(elementCType(tensorOf(arg).getElementType())) + " *";
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    types[outPrefix.str() + std::to_string(i)] =
        std::string(elementCType(cast<RankedTensorType>(type).getElementType())) + " *";
}

void StepFunction::finishChunk(Operation *op, EmittedChunk chunk) {
  if (constantDecl)
    chunk.decls.push_back(std::move(*constantDecl));
  constantDecl.reset();
  if (!block.empty())
    chunk.code = "  {\n" + block + "  }\n";
  const GemmFusion &gemms = liveness->gemms();
  if (gemms.isFolded(op) && chunk.decls.empty() && chunk.code.empty())
    return;
  // (An alias transpose's block is only the note of GemmOps.h, dropped with it.)
  if ((isa<StateReadOp>(op) && storage.lookup(op->getResult(0)).kind == ValueStorage::State && block.empty()) ||
      (isa<TransposeOp>(op) && gemms.aliasOf(op))) {
    chunks.defer(chunk.decls);
    return;
  }
  chunks.push(std::move(chunk));
}

LogicalResult StepFunction::emitFusedChainOp(Operation *op) {
  const FusedChain &chain = fused.chains[fused.chainOf.lookup(op)];
  if (op != chain.chain.ops.back()) {
    note("computed by " + chain.kernel + " at the last op of its chain (docs/GeneratedKernels.md)");
    return success();
  }
  return generatedChainCall(chain);
}

bool StepFunction::isUnwrittenIntermediate(Value result) const {
  auto chain = fused.chainOf.find(result.getDefiningOp());
  return chain != fused.chainOf.end() && !llvm::is_contained(fused.chains[chain->second].chain.outputs, result);
}

std::string StepFunction::bufferPtr(int64_t buffer, StringRef type) const {
  if (buffer < 0)
    return "nullptr";
  return "reinterpret_cast<" + type.str() + " *>(" + arena + " + " +
         std::to_string(liveness->buffers()[buffer].offset) + ")";
}

FailureOr<int64_t> StepFunction::pointToPointStage(Operation *op, StringRef axis) const {
  auto stage = getStage(func);
  if (!stage)
    return op->emitError(flag()) << ": a send or receive needs its function's ptrain.stage (the pp coordinate)";
  if (axis != "pp")
    return op->emitError(flag()) << ": point-to-point transfers are supported on the axis pp only";
  return stage.getIndex();
}
