//===- ParameterCasts.cpp - The once-per-step 16-bit parameter copy -------===//
//
// isParameterCast, getParameterCastKey and hoistParameterCasts (include/ptrain/Plan/ParameterCasts.h;
// docs/MixedPrecision.md, "The once-per-step parameter cast").
//
//===----------------------------------------------------------------------===//

#include "ptrain/Plan/ParameterCasts.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {
/// Whether `value` is computed from parameter reads through transposes and reshapes only.
bool isParameterDerived(Value value, SymbolTable &symbols) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (auto read = dyn_cast<StateReadOp>(def)) {
    auto state = symbols.lookup<StateOp>(read.getStateAttr().getAttr());
    return state && state.getKind() == StateKind::Parameter;
  }
  if (isa<TransposeOp, ReshapeOp>(def))
    return isParameterDerived(def->getOperand(0), symbols);
  return false;
}

bool isEntry(func::FuncOp fn) { return fn->hasAttr("ptrain.entry"); }
} // namespace

bool mlir::ptrain::isParameterCast(CastOp cast, SymbolTable &symbols) {
  auto in = dyn_cast<RankedTensorType>(cast.getInput().getType());
  auto out = dyn_cast<RankedTensorType>(cast.getType());
  if (!in || !out || !isa<FloatType>(in.getElementType()) || !isa<FloatType>(out.getElementType()))
    return false;
  return isParameterDerived(cast.getInput(), symbols);
}

bool mlir::ptrain::isInverseTranspose(TransposeOp outer, TransposeOp inner) {
  ArrayRef<int64_t> p = outer.getPerm(), q = inner.getPerm();
  if (p.size() != q.size())
    return false;
  for (size_t i = 0; i < p.size(); ++i)
    if (q[p[i]] != static_cast<int64_t>(i))
      return false;
  return true;
}

llvm::SetVector<Operation *> mlir::ptrain::getParameterCastSlice(CastOp cast) {
  SmallVector<Operation *> chain;
  for (Operation *op = cast; op; op = op->getNumOperands() ? op->getOperand(0).getDefiningOp() : nullptr)
    chain.push_back(op);
  llvm::SetVector<Operation *> slice;
  for (Operation *op : llvm::reverse(chain))
    slice.insert(op);
  return slice;
}

std::string mlir::ptrain::getParameterCastKey(Value value) {
  std::string key;
  llvm::raw_string_ostream os(key);
  Operation *def = value.getDefiningOp();
  if (auto read = dyn_cast<StateReadOp>(def)) {
    os << "read " << read.getStateAttr() << " : " << read.getType();
    return key;
  }
  os << def->getName() << " ";
  if (Attribute properties = def->getPropertiesAsAttribute())
    os << properties;
  os << def->getDiscardableAttrDictionary() << " : " << value.getType() << " (";
  for (Value operand : def->getOperands())
    os << getParameterCastKey(operand) << ", ";
  os << ")";
  return key;
}

FailureOr<int64_t> mlir::ptrain::hoistParameterCasts(ModuleOp module) {
  SymbolTable symbols(module);
  // The states each function writes, its callees' included.
  llvm::DenseMap<Operation *, llvm::StringSet<>> writes;
  std::function<const llvm::StringSet<> &(func::FuncOp)> writesOf = [&](func::FuncOp fn) -> const llvm::StringSet<> & {
    if (auto it = writes.find(fn); it != writes.end())
      return it->second;
    llvm::StringSet<> set;
    writes[fn] = set; // a recursive call sees the partial set
    fn.walk([&](Operation *op) {
      if (auto write = dyn_cast<StateWriteOp>(op))
        set.insert(write.getStateAttr().getValue());
      else if (auto call = dyn_cast<func::CallOp>(op))
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
          for (const auto &s : writesOf(callee))
            set.insert(s.getKey());
    });
    return writes[fn] = std::move(set);
  };

  // The callees whose parameter casts move out: called only from entry functions and calling nothing (a
  // backward writes its gradient accumulators, not the parameters it casts). Each gets one trailing argument per
  // distinct cast key, in the order of first appearance.
  struct Callee {
    func::FuncOp fn;
    std::vector<std::string> keys;                    // one per new argument
    std::vector<llvm::SetVector<Operation *>> slices; // the ops computing each argument's value, in F
  };
  llvm::DenseMap<Operation *, size_t> calleeIndex;
  std::vector<Callee> callees;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || isEntry(fn))
      continue;
    bool callsAny = false;
    fn.walk([&](func::CallOp) { callsAny = true; });
    std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(fn, module);
    if (callsAny || !uses || uses->empty())
      continue;
    bool onlyFromEntries = llvm::all_of(*uses, [](const SymbolTable::SymbolUse &use) {
      auto call = dyn_cast<func::CallOp>(use.getUser());
      auto caller = call ? call->getParentOfType<func::FuncOp>() : func::FuncOp();
      return caller && isEntry(caller) && call->getParentOp() == caller;
    });
    if (!onlyFromEntries)
      continue;
    SmallVector<CastOp> casts;
    // A cast of a parameter the callee itself writes stays (it reads the value of that point of the callee).
    const llvm::StringSet<> &written = writesOf(fn);
    fn.walk([&](CastOp cast) {
      if (!isParameterCast(cast, symbols))
        return;
      for (Operation *op : getParameterCastSlice(cast))
        if (auto read = dyn_cast<StateReadOp>(op); read && written.contains(read.getStateAttr().getValue()))
          return;
      casts.push_back(cast);
    });
    if (casts.empty())
      continue;
    Callee c{fn, {}, {}};
    llvm::StringMap<Value> argOfKey;
    for (CastOp cast : casts) {
      std::string key = getParameterCastKey(cast.getResult());
      auto [it, fresh] = argOfKey.try_emplace(key, Value());
      if (fresh) {
        unsigned index = fn.getNumArguments();
        if (failed(fn.insertArgument(index, cast.getType(), DictionaryAttr(), cast.getLoc())))
          return fn.emitError() << "the once-per-step parameter cast: cannot add an argument to @" << fn.getSymName();
        it->second = fn.getArgument(index);
        c.keys.push_back(key);
        c.slices.push_back(getParameterCastSlice(cast));
      }
      cast.getResult().replaceAllUsesWith(it->second);
    }
    calleeIndex[fn] = callees.size();
    callees.push_back(std::move(c));
  }

  // Each entry function: the slices once at its start, one value per key, passed to every call.
  int64_t placed = 0;
  for (auto entry : module.getOps<func::FuncOp>()) {
    if (!isEntry(entry) || entry.isExternal())
      continue;
    Block &body = entry.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    llvm::StringMap<Value> valueOfKey;
    llvm::StringSet<> written;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto write = dyn_cast<StateWriteOp>(op))
        written.insert(write.getStateAttr().getValue());
      auto call = dyn_cast<func::CallOp>(op);
      if (!call)
        continue;
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      auto it = callee ? calleeIndex.find(callee) : calleeIndex.end();
      if (it == calleeIndex.end()) {
        if (callee)
          for (const auto &s : writesOf(callee))
            written.insert(s.getKey());
        continue;
      }
      const Callee &c = callees[it->second];
      SmallVector<Value> operands(call.getOperands());
      for (auto [key, slice] : llvm::zip(c.keys, c.slices)) {
        for (Operation *sliceOp : slice)
          if (auto read = dyn_cast<StateReadOp>(sliceOp); read && written.contains(read.getStateAttr().getValue()))
            return call.emitError() << "the once-per-step parameter cast: @" << entry.getSymName() << " writes @"
                                    << read.getStateAttr().getValue() << " before it calls @" << callee.getSymName()
                                    << ", whose 16-bit copy of it is cast at the step's start and would be stale";
        Value &copy = valueOfKey[key];
        if (!copy) {
          IRMapping mapping;
          for (Operation *sliceOp : slice) {
            // Share the entry's copies of the slice's reads and transposes between keys.
            std::string sub = getParameterCastKey(sliceOp->getResult(0));
            if (auto known = valueOfKey.find(sub); known != valueOfKey.end() && known->second) {
              mapping.map(sliceOp->getResult(0), known->second);
              continue;
            }
            // (W^T)^T is W: the backward's operand reads the weight itself, so the forward's fp32 W^T is not kept
            // live at the step's start until the backward's copy is cast (the same elements in the same order).
            if (auto outer = dyn_cast<TransposeOp>(sliceOp))
              if (auto inner = mapping.lookupOrDefault(outer.getInput()).getDefiningOp<TransposeOp>()) {
                if (isInverseTranspose(outer, inner)) {
                  mapping.map(outer.getResult(), inner.getInput());
                  valueOfKey[sub] = inner.getInput();
                  continue;
                }
              }
            Value cloned = b.clone(*sliceOp, mapping)->getResult(0);
            if (sub == key)
              copy = cloned;
            else
              valueOfKey[sub] = cloned;
          }
          ++placed;
        }
        operands.push_back(copy);
      }
      OpBuilder cb(call);
      auto replacement = func::CallOp::create(cb, call.getLoc(), callee, operands);
      replacement->setDiscardableAttrs(call->getDiscardableAttrDictionary());
      call.replaceAllUsesWith(replacement.getResults());
      call.erase();
    }
  }

  // The callees' casts (every cast of a key was replaced by its argument) and the reads,
  // transposes and reshapes only those fed are dead: erase them.
  for (Callee &c : callees) {
    Block &body = c.fn.getBody().front();
    for (bool changed = true; changed;) {
      changed = false;
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
        if (isa<CastOp, TransposeOp, ReshapeOp, StateReadOp>(op) && op.use_empty()) {
          op.erase();
          changed = true;
        }
    }
  }
  return placed;
}
