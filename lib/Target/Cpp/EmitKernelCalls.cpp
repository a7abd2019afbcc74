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
  while (storage[v].kind == Storage::Alias)
    v = storage[v].root;
  const Storage &s = storage[v];
  if (s.kind != Storage::Arena || s.buffer < 0)
    return std::nullopt;
  int64_t begin = liveness->buffers()[s.buffer].offset;
  return std::make_pair(begin, begin + bytesOf(v));
}

LogicalResult FunctionEmitter::planFusedChains() {
  auto module = func->getParentOfType<ModuleOp>();
  auto rootOf = [&](Value v) {
    while (storage[v].kind == Storage::Alias)
      v = storage[v].root;
    return v;
  };
  auto isMemory = [&](Value v) { return storage[rootOf(v)].kind != Storage::Virtual; };
  for (size_t i = 0; i < ops.size(); ++i) {
    auto dead = [&](Operation *op) { return gemms->isDead(op); };
    SmallVector<Operation *> members = markedChainAt(ops, i, dead);
    if (members.empty())
      continue;
    i = llvm::find(ops, members.back()) - ops.begin();
    auto kernel = members.front()->getAttrOfType<SymbolRefAttr>(kKernelAttr);
    ElementwiseChain chain = describeChain(members, dead);
    auto callee = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(module, kernel));
    if (!callee || callee.getNumArguments() != chain.inputs.size() + chain.outputs.size())
      return members.front()->emitError("--emit-cpp: '")
             << kKernelAttr << "' names " << kernel << ", which is not a kernel of "
             << chain.inputs.size() + chain.outputs.size() << " memrefs for this chain";
    // What the memory plan allows: inputs that are real memory and do not share bytes (a generated constant
    // filled inside the chain may take the buffer of an input that died in it), outputs in the arena that
    // overlap no input but one they equal exactly and read element by element at the same index.
    bool safe = llvm::all_of(chain.inputs, isMemory);
    // The pass broke chains where GEMM fusion or dead-op elimination take an op; a module edited since must
    // not lose an op's results to a kernel that is never called.
    if (llvm::any_of(members,
                     [&](Operation *op) { return gemms->isDead(op) || gemms->isFolded(op) || gemms->aliasOf(op); }))
      safe = false;
    // Two inputs in overlapping arena bytes are views of one buffer (an alias and its root) or a buffer that
    // changed hands inside the chain, whose first holder the kernel would read overwritten.
    for (auto [a, in] : llvm::enumerate(chain.inputs))
      for (Value other : ArrayRef<Value>(chain.inputs).drop_front(a + 1)) {
        auto x = arenaRangeOf(in), y = arenaRangeOf(other);
        if (x && y && x->first < y->second && y->first < x->second && rootOf(in) != rootOf(other))
          safe = false;
      }
    for (Value out : chain.outputs) {
      auto o = arenaRangeOf(out);
      if (!o || storage[out].kind != Storage::Arena) {
        safe = false;
        continue;
      }
      for (Value in : chain.inputs) {
        auto x = arenaRangeOf(in);
        if (x && x->first < o->second && o->first < x->second && (*x != *o || !chain.inputMap(in).isIdentity()))
          safe = false;
      }
    }
    if (!safe)
      continue;
    for (Operation *op : members)
      fusedChainOf[op] = fusedChains.size();
    fusedChains.push_back({kernel.getLeafReference().str(), std::move(chain)});
  }
  return success();
}

void FunctionEmitter::emitFusedChainOp(Operation *op, size_t index) {
  const FusedChain &fused = fusedChains[index];
  if (op != fused.chain.ops.back()) {
    line("// computed by " + fused.kernel + " at the last op of its chain (docs/GeneratedKernels.md)");
    line("(void)" + ptr(op->getResult(0)) + ";");
    return;
  }
  std::string args;
  for (Value v : llvm::concat<const Value>(fused.chain.inputs, fused.chain.outputs))
    args += (args.empty() ? "" : ", ") + ptr(v);
  line("// " + std::to_string(fused.chain.ops.size()) + " ops in one generated kernel (--ptrain-outline-elementwise)");
  line(fused.kernel + "(" + args + ");");
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
      bool safe = at < i && !gemms->isDead(mul) && !fusedChainOf.count(mul);
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
