//===- FusedChains.cpp - The chains a step calls a generated kernel for ---===//
//
// See FusedChains.h.
//
//===----------------------------------------------------------------------===//

#include "Common/FusedChains.h"

#include "Common/CppTypes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

std::optional<std::pair<int64_t, int64_t>>
FusedChains::arenaRange(Value v, const llvm::DenseMap<Value, NamedStorage> &storage, const BufferLiveness &liveness) {
  while (storage.lookup(v).kind == ValueStorage::Alias)
    v = storage.lookup(v).root;
  const NamedStorage s = storage.lookup(v);
  if (s.kind != ValueStorage::Arena || s.buffer < 0)
    return std::nullopt;
  int64_t begin = liveness.buffers()[s.buffer].offset;
  return std::make_pair(begin, begin + bytesOf(v));
}

LogicalResult FusedChains::plan(func::FuncOp func, ArrayRef<Operation *> ops,
                                const llvm::DenseMap<Value, NamedStorage> &storage, const BufferLiveness &liveness,
                                StringRef flag, function_ref<bool(func::FuncOp kernel)> available) {
  auto module = func->getParentOfType<ModuleOp>();
  const GemmFusion &gemms = liveness.gemms();
  auto rootOf = [&](Value v) {
    while (storage.lookup(v).kind == ValueStorage::Alias)
      v = storage.lookup(v).root;
    return v;
  };
  auto rangeOf = [&](Value v) { return arenaRange(v, storage, liveness); };
  auto isMemory = [&](Value v) { return storage.lookup(rootOf(v)).kind != ValueStorage::Virtual; };
  auto dead = [&](Operation *op) { return gemms.isDead(op); };
  for (size_t i = 0; i < ops.size(); ++i) {
    SmallVector<Operation *> members = markedChainAt(ops, i, dead);
    if (members.empty())
      continue;
    i = llvm::find(ops, members.back()) - ops.begin();
    auto kernel = members.front()->getAttrOfType<SymbolRefAttr>(kKernelAttr);
    ElementwiseChain chain = describeChain(members, dead);
    auto callee = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(module, kernel));
    if (!callee || callee.getNumArguments() != chain.inputs.size() + chain.outputs.size())
      return members.front()->emitError(flag)
             << ": '" << kKernelAttr << "' names " << kernel << ", which is not a kernel of "
             << chain.inputs.size() + chain.outputs.size() << " memrefs for this chain";
    if (available && !available(callee))
      continue;
    // What the memory plan allows: inputs that are real memory and do not share bytes (a generated constant
    // filled inside the chain may take the buffer of an input that died in it), outputs in the arena that
    // overlap no input but one they equal exactly and read element by element at the same index.
    bool safe = llvm::all_of(chain.inputs, isMemory);
    // The pass broke chains where GEMM fusion or dead-op elimination take an op; a module edited since must
    // not lose an op's results to a kernel that is never called.
    if (llvm::any_of(members,
                     [&](Operation *op) { return gemms.isDead(op) || gemms.isFolded(op) || gemms.aliasOf(op); }))
      safe = false;
    // Two inputs in overlapping arena bytes are views of one buffer (an alias and its root) or a buffer that
    // changed hands inside the chain, whose first holder the kernel would read overwritten.
    for (auto [a, in] : llvm::enumerate(chain.inputs))
      for (Value other : ArrayRef<Value>(chain.inputs).drop_front(a + 1)) {
        auto x = rangeOf(in), y = rangeOf(other);
        if (x && y && x->first < y->second && y->first < x->second && rootOf(in) != rootOf(other))
          safe = false;
      }
    for (Value out : chain.outputs) {
      auto o = rangeOf(out);
      if (!o || storage.lookup(out).kind != ValueStorage::Arena) {
        safe = false;
        continue;
      }
      for (Value in : chain.inputs) {
        auto x = rangeOf(in);
        if (x && x->first < o->second && o->first < x->second && (*x != *o || !chain.inputMap(in).isIdentity()))
          safe = false;
      }
    }
    if (!safe)
      continue;
    for (Operation *op : members)
      chainOf[op] = chains.size();
    chains.push_back({kernel.getLeafReference().str(), std::move(chain)});
  }
  return success();
}
