//===- EmitKernelCalls.cpp - Calls of the generated kernels ---------------===//
//
// The CPU step's side of issue 26's generated kernels (docs/GeneratedKernels.md):
// the chains --ptrain-outline-elementwise marked become one call of their
// kernel (KernelObject.h writes the object) at the chain's last op, where every
// input is still intact, when the memory plan lets the kernel read and write
// them in one pass; otherwise the chain's ops stay runtime calls. The AdamW
// updates --ptrain-outline-adamw marked call their kernel the same way, with
// the clip scale's mul folded in where it is safe.
//
//===----------------------------------------------------------------------===//

#include "CppEmitter.h"

#include "ptrain/Transforms/AdamWArith.h"

#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

std::optional<std::pair<int64_t, int64_t>> FunctionEmitter::arenaRangeOf(Value v) {
  return target::FusedChains::arenaRange(v, storage, *liveness);
}

LogicalResult FunctionEmitter::planFusedChains() { return fused.plan(func, ops, storage, *liveness, "--emit-cpp"); }

LogicalResult FunctionEmitter::generatedChainCall(const target::FusedChain &chain) {
  std::string args;
  for (Value v : llvm::concat<const Value>(chain.chain.inputs, chain.chain.outputs))
    args += (args.empty() ? "" : ", ") + ptr(v);
  line("// " + std::to_string(chain.chain.ops.size()) + " ops in one generated kernel (--ptrain-outline-elementwise)");
  line(chain.kernel + "(" + args + ");");
  return success();
}

LogicalResult FunctionEmitter::planAdamWKernels() {
  auto module = func->getParentOfType<ModuleOp>();
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto update = dyn_cast<AdamWOp>(op);
    auto kernel = update ? update->getAttrOfType<SymbolRefAttr>(kAdamWKernelAttr) : SymbolRefAttr();
    if (!kernel)
      continue;
    std::optional<AdamWKernelShape> shape = adamwKernelShapeOf(update);
    auto callee = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(module, kernel));
    // The kernel's p is a memref of the update's size; 7 arguments, or 8 with the clip scale.
    auto first = callee && callee.getNumArguments() ? dyn_cast<MemRefType>(callee.getArgumentTypes().front())
                                                    : MemRefType();
    if (!shape || !first || !first.hasStaticShape() || first.getNumElements() != shape->numel ||
        (callee.getNumArguments() != 7 && callee.getNumArguments() != 8))
      return update.emitError("--emit-cpp: '")
             << kAdamWKernelAttr << "' names " << kernel << ", which is not an AdamW kernel of this update";
    GeneratedAdamW generated{kernel.getLeafReference().str(), BinaryOp()};
    if (callee.getNumArguments() == 8) {
      if (!foldedClipScaleOf(update))
        return update.emitError("--emit-cpp: '")
               << kAdamWKernelAttr << "' names " << kernel
               << ", which takes a clip scale, but the gradient is no clip scale's mul";
      // The mul is emitted as nothing: its inputs must be intact at the update, past the copies of p, m and v.
      BinaryOp mul = foldedClipScaleOf(update);
      size_t at = llvm::find(ops, mul.getOperation()) - ops.begin();
      bool safe = at < i && !gemms->isDead(mul) && !fused.chainOf.count(mul);
      for (size_t k = at + 1; safe && k < i; ++k)
        safe = isa<StateReadOp, arith::ConstantOp>(ops[k]);
      for (Value in : {mul.getLhs(), mul.getRhs()})
        for (Value out : update.getResults()) {
          auto x = arenaRangeOf(in), o = arenaRangeOf(out);
          if (x && o && x->first < o->second && o->first < x->second)
            safe = false;
        }
      if (!safe)
        continue;
      generated.clipMul = mul;
      foldedClipMuls[mul] = update;
    }
    generatedAdamW[update] = std::move(generated);
  }
  return success();
}
