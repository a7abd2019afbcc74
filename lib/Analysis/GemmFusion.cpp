//===- GemmFusion.cpp - Transposes and batch sums folded into GEMMs -------===//
//
// See GemmFusion.h. The analysis walks the function backwards, so a
// transpose's users are decided before the transpose itself.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/GemmFusion.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {
/// The tensor type of a GEMM operand, result or transpose (never a request).
RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

bool isF32(Value v) { return tensorOf(v).getElementType().isF32(); }

/// The longest contraction a GEMM accumulates into a state over (GemmFusion.h): OpenBLAS 0.3.21 (Debian 12) sums
/// K in one pass up to 320 with its Haswell (AVX2) kernels and up to 448 with its SkylakeX (AVX-512) ones, so
/// that fl(C + sum) is the separate add's fl(old + fl(sum)) (measured, GemmTest's bundled-GPT shapes at 256).
constexpr int64_t kAccumulateMaxContraction = 256;

/// A transpose of an f32 tensor that swaps the last two dims and keeps the others.
bool swapsLastTwo(TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPerm();
  const int64_t r = perm.size();
  if (r < 2 || !isF32(t.getInput()))
    return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (perm[i] != i)
      return false;
  return perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
}

/// A head permute of an f32 [B, T, H, D] tensor (GemmFusion.h): 1 for {0, 2, 1, 3} (the heads split, [B, H, T, D]),
/// 2 for {0, 2, 3, 1} (split and transposed, [B, H, D, T]), 0 for any other transpose.
int headPermute(TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPerm();
  if (perm.size() != 4 || !isF32(t.getInput()) || perm[0] != 0 || perm[1] != 2)
    return 0;
  return perm[2] == 1 && perm[3] == 3 ? 1 : perm[2] == 3 && perm[3] == 1 ? 2 : 0;
}

/// `v` through the chain of last-two-dims transposes that made it and, with `heads`, the head permute above them.
GemmOperand resolve(Value v, bool heads) {
  GemmOperand g{v, false};
  while (auto t = g.source.getDefiningOp<TransposeOp>()) {
    if (swapsLastTwo(t)) {
      g.source = t.getInput();
      g.transposed = !g.transposed;
      continue;
    }
    if (int kind = heads ? headPermute(t) : 0) {
      g.source = t.getInput();
      g.transposed = kind == 2 ? !g.transposed : g.transposed;
      g.heads = true;
    }
    break;
  }
  return g;
}

/// The output shape of a sum_to without leading 1s.
ArrayRef<int64_t> withoutLeadingOnes(ArrayRef<int64_t> shape) {
  while (!shape.empty() && shape.front() == 1)
    shape = shape.drop_front();
  return shape;
}
} // namespace

GemmFusion::GemmFusion(ArrayRef<Operation *> ops, GemmFusionOptions options) : options(options), deadOps(ops) {
  // Every user of `v` reads it in place through a head permute: a matmul that takes heads, or a folded
  // last-two-dims transpose whose users are such matmuls.
  auto readInPlace = [&](Value v) {
    auto headsMatmul = [&](Operation *user) {
      auto m = dyn_cast<MatmulOp>(user);
      return m && takesHeads(m);
    };
    return llvm::all_of(v.getUsers(), [&](Operation *user) {
      auto t = dyn_cast<TransposeOp>(user);
      return headsMatmul(user) || (t && swapsLastTwo(t) && folded.contains(user) &&
                                   llvm::all_of(t.getResult().getUsers(), headsMatmul));
    });
  };
  for (Operation *op : llvm::reverse(ops)) {
    if (deadOps.isDead(op))
      continue;
    if (auto m = dyn_cast<MatmulOp>(op)) {
      reads[op] = {operand(m, 0).source, operand(m, 1).source};
      continue;
    }
    if (auto s = dyn_cast<SumToOp>(op)) {
      auto m = s.getInput().getDefiningOp<MatmulOp>();
      // Not a bf16 GEMM: its batch entries are rounded to fp32 one by one before the sum (the interpreter's
      // order, which one GEMM over the batch-long contraction would change).
      if (!m || m.getAccumulate() || !s.getInput().hasOneUse() || !isF32(s.getResult()))
        continue;
      // Both operands carry the whole batch (at least 2 entries): A_b, B_b follow each other in memory.
      ArrayRef<int64_t> product = tensorOf(m.getResult()).getShape();
      ArrayRef<int64_t> batch = product.drop_back(2);
      GemmOperand a = operand(m, 0), b = operand(m, 1);
      if (ShapedType::getNumElements(batch) < 2 || tensorOf(m.getLhs()).getShape().drop_back(2) != batch ||
          tensorOf(m.getRhs()).getShape().drop_back(2) != batch || !a.transposed || b.transposed || a.heads || b.heads ||
          withoutLeadingOnes(tensorOf(s.getResult()).getShape()) != product.take_back(2))
        continue;
      summed[op] = m;
      folded.insert(m);
      reads[op] = {a.source, b.source};
      continue;
    }
    // A transpose is not needed when every user reads through it: a matmul (any operand resolves through
    // every last-two-dims transpose above it) or a last-two-dims transpose that is not needed either.
    auto t = dyn_cast<TransposeOp>(op);
    if (!t || t.getResult().use_empty())
      continue;
    if (headPermute(t)) { // read in place by strided GEMMs (GemmFusion.h, head permutes)
      if (options.headPermutes && readInPlace(t.getResult()))
        folded.insert(op);
      continue;
    }
    if (!swapsLastTwo(t))
      continue;
    if (llvm::all_of(t.getResult().getUsers(), [&](Operation *user) {
          auto u = dyn_cast<TransposeOp>(user);
          return isa<MatmulOp>(user) || (u && swapsLastTwo(u) && folded.contains(user));
        }))
      folded.insert(op);
  }
  // The heads merged back: a product whose only use is its {0, 2, 1, 3} transpose is written in that layout.
  for (Operation *op : ops) {
    auto m = dyn_cast<MatmulOp>(op);
    if (!m || deadOps.isDead(op) || folded.contains(op) || !takesHeads(m) || !m.getResult().hasOneUse())
      continue;
    auto t = dyn_cast<TransposeOp>(*m.getResult().getUsers().begin());
    if (!t || headPermute(t) != 1 || deadOps.isDead(t) || folded.contains(t))
      continue;
    headsResults.insert(op);
    aliases[t] = m.getResult();
  }
  // A weight gradient's transpose: the batch sum's GEMM writes the transposed matrix instead.
  for (Operation *op : ops) {
    auto t = dyn_cast<TransposeOp>(op);
    if (!t || deadOps.isDead(op) || folded.contains(op) || tensorOf(t.getInput()).getRank() != 2 || !swapsLastTwo(t))
      continue;
    auto s = t.getInput().getDefiningOp<SumToOp>();
    if (s && summed.contains(s) && s.getResult().hasOneUse()) {
      transposedSums.insert(s);
      aliases[op] = t.getInput();
    }
  }
  // A bias added to an emitted GEMM's product (its only use): the GEMM starts from the bias rows.
  for (Operation *op : ops) {
    auto add = dyn_cast<BinaryOp>(op);
    if (!add || add.getKind() != BinaryKind::Add || deadOps.isDead(op) || !isF32(add.getResult()))
      continue;
    for (auto [product, bias] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
      auto m = product.getDefiningOp<MatmulOp>();
      ArrayRef<int64_t> shape = tensorOf(product).getShape();
      // The bias must exist when the GEMM runs: an argument or a value defined before the matmul.
      Operation *biasDef = bias.getDefiningOp();
      if (!m || folded.contains(m) || biases.contains(m) || !product.hasOneUse() ||
          tensorOf(bias).getShape() != shape.take_back(1) || tensorOf(add.getResult()).getShape() != shape ||
          (biasDef && (biasDef->getBlock() != m->getBlock() || !biasDef->isBeforeInBlock(m))))
        continue;
      biases[m] = bias;
      aliases[op] = product;
      reads[m].push_back(bias);
      break;
    }
  }
  if (options.accumulateIntoStates)
    findAccumulations(ops);
}

void GemmFusion::findAccumulations(ArrayRef<Operation *> ops) {
  llvm::DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = static_cast<int64_t>(i);
  // The value's only user, or null.
  auto onlyUser = [](Value v) { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; };
  for (Operation *op : ops) {
    auto add = dyn_cast<BinaryOp>(op);
    if (!add || add.getKind() != BinaryKind::Add || deadOps.isDead(op) || aliases.contains(op) ||
        !isF32(add.getResult()))
      continue;
    auto write = dyn_cast_or_null<StateWriteOp>(onlyUser(add.getResult()));
    if (!write || deadOps.isDead(write))
      continue;
    StringAttr state = write.getStateAttr().getAttr();
    for (auto [old, grad] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
      auto read = old.getDefiningOp<StateReadOp>();
      if (!read || read.getStateAttr().getAttr() != state || !old.hasOneUse() || tensorOf(old) != tensorOf(grad) ||
          tensorOf(grad) != tensorOf(add.getResult()) || !grad.hasOneUse())
        continue;
      // The GEMM that makes the gradient: a batch sum (through the transpose it writes), or a plain f32 matmul
      // without a bias, each value used once.
      Value product = grad;
      if (auto t = product.getDefiningOp<TransposeOp>(); t && aliases.contains(t)) {
        product = aliases.lookup(t);
        if (!product.hasOneUse())
          continue;
      }
      Operation *gemm = product.getDefiningOp();
      auto m = dyn_cast_or_null<MatmulOp>(gemm);
      auto s = dyn_cast_or_null<SumToOp>(gemm);
      if (!(s && summed.contains(s)) && !(m && !folded.contains(m) && !biases.contains(m) && !m.getAccumulate()))
        continue;
      if (gemm->getBlock() != op->getBlock() || deadOps.isDead(gemm) || !index.count(gemm) || !index.count(read))
        continue;
      // The contraction's length: the bits are the separate add's only when BLAS sums it in one pass.
      MatmulOp mm = s ? summed.lookup(s) : m;
      int64_t contraction = tensorOf(mm.getLhs()).getShape().back();
      if (s)
        contraction *= ShapedType::getNumElements(tensorOf(mm.getResult()).getShape().drop_back(2));
      if (contraction > kAccumulateMaxContraction)
        continue;
      // Between the first of GEMM and read and the write, nothing else may see or change the state: the GEMM
      // turns its storage into old + product there, where the add read the old value.
      const int64_t from = std::min(index[gemm], index[read]), to = index[write];
      bool clear = true;
      for (int64_t i = 0; i < to && clear; ++i) {
        Operation *other = ops[i];
        if (other == read.getOperation())
          continue;
        if (auto r = dyn_cast<StateReadOp>(other))
          clear = r.getStateAttr().getAttr() != state; // any other read of S before the write
        else if (auto w = dyn_cast<StateWriteOp>(other))
          clear = i < from || w.getStateAttr().getAttr() != state;
        else if (isa<func::CallOp>(other))
          clear = i < from;
      }
      if (!clear)
        continue;
      accumulated[gemm] = state;
      aliases[op] = grad;
      folded.insert(read);
      folded.insert(write);
      break;
    }
  }
}

GemmOperand GemmFusion::operand(MatmulOp m, unsigned index) const {
  return resolve(index == 0 ? m.getLhs() : m.getRhs(), takesHeads(m));
}

bool GemmFusion::takesHeads(MatmulOp m) const {
  if (!options.headPermutes || m.getAccumulate() || !isF32(m.getResult()) || !isF32(m.getLhs()) ||
      !isF32(m.getRhs()))
    return false;
  ArrayRef<int64_t> product = tensorOf(m.getResult()).getShape();
  return product.size() == 4 && tensorOf(m.getLhs()).getShape().take_front(2) == product.take_front(2) &&
         tensorOf(m.getRhs()).getShape().take_front(2) == product.take_front(2) &&
         tensorOf(m.getLhs()).getRank() == 4 && tensorOf(m.getRhs()).getRank() == 4;
}

bool GemmFusion::isStrided(MatmulOp m) const {
  return takesHeads(m) && (operand(m, 0).heads || operand(m, 1).heads || writesHeads(m));
}

ArrayRef<Value> GemmFusion::extraReads(Operation *op) const {
  auto it = reads.find(op);
  return it == reads.end() ? ArrayRef<Value>() : ArrayRef<Value>(it->second);
}
