//===- SoftmaxArith.cpp - The runtime's row softmax as scf + arith --------===//
//
// See SoftmaxArith.h. The comments quote the C++ of lib/Runtime/cpu/Softmax.cpp
// that each step reproduces.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/SoftmaxArith.h"

#include "ptrain/Transforms/GeluArith.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// The rows of `shape` (all but its last dimension): one loop per leading dimension, row-major, the innermost
/// stepping over kRowGroup rows at once where its size allows (the runtime's row groups: independent fp64 sums
/// that hide the add latency; each row's bits unchanged). The builder is left inside the innermost loop;
/// `rows[k]` are the leading indices of the group's row k.
struct RowLoops {
  static constexpr int64_t kRowGroup = 4;
  SmallVector<SmallVector<Value>> rows;

  RowLoops(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, bool grouped) {
    auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    const int64_t group = grouped && shape.size() >= 2 && shape[shape.size() - 2] % kRowGroup == 0 ? kRowGroup : 1;
    SmallVector<Value> row;
    for (auto [d, size] : llvm::enumerate(shape.drop_back())) {
      const bool innermost = d + 2 == shape.size();
      auto loop = scf::ForOp::create(b, loc, index(0), index(size), index(innermost ? group : 1));
      row.push_back(loop.getInductionVar());
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    for (int64_t k = 0; k < group; ++k) {
      SmallVector<Value> indices(row);
      if (k > 0)
        indices.back() = arith::AddIOp::create(b, loc, indices.back(), index(k));
      rows.push_back(std::move(indices));
    }
  }

  int64_t group() const { return rows.size(); }
  /// The indices of column `c` of the group's row `k`.
  SmallVector<Value> at(int64_t k, Value c) const {
    SmallVector<Value> indices(rows[k]);
    indices.push_back(c);
    return indices;
  }
};

/// A loop over the columns [from, end) carrying `init`; `body` returns the carried values' next ones.
ValueRange columns(OpBuilder &b, Location loc, Value from, Value end, ValueRange init,
                   function_ref<SmallVector<Value>(OpBuilder &, Value, ValueRange)> body) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  return scf::ForOp::create(b, loc, from, end, one, init,
                            [&](OpBuilder &lb, Location l, Value c, ValueRange carried) {
                              scf::YieldOp::create(lb, l, body(lb, c, carried));
                            })
      .getResults();
}

} // namespace

void mlir::ptrain::buildSoftmaxRowsF32(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value y,
                                       function_ref<Value(OpBuilder &, Location, ValueRange)> element) {
  const int64_t cols = shape.back();
  if (cols == 0)
    return; // no element to write
  OpBuilder::InsertionGuard guard(b);
  auto f32 = [&](float v) -> Value { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); };
  Value zero = arith::ConstantIndexOp::create(b, loc, 0), one = arith::ConstantIndexOp::create(b, loc, 1);
  Value end = arith::ConstantIndexOp::create(b, loc, cols);
  RowLoops rows(b, loc, shape, /*grouped=*/true);
  auto at = [&](int64_t k, Value c) { return rows.at(k, c); };
  Value zeroF32 = f32(0.0f);
  for (int64_t k = 0; k < rows.group(); ++k) {
    // 1. The softmax input, stored into y (the runtime reads it from the prologue's buffer).
    columns(b, loc, zero, end, {}, [&](OpBuilder &lb, Value c, ValueRange) {
      memref::StoreOp::create(lb, loc, element(lb, loc, at(k, c)), y, at(k, c));
      return SmallVector<Value>{};
    });
    // 2. float maxVal = xr[0]; for c >= 1: maxVal = xr[c] > maxVal ? xr[c] : maxVal;
    Value first = memref::LoadOp::create(b, loc, y, at(k, zero));
    Value max = columns(b, loc, one, end, first, [&](OpBuilder &lb, Value c, ValueRange carried) {
      Value x = memref::LoadOp::create(lb, loc, y, at(k, c));
      Value greater = arith::CmpFOp::create(lb, loc, arith::CmpFPredicate::OGT, x, carried[0]);
      return SmallVector<Value>{arith::SelectOp::create(lb, loc, greater, x, carried[0])};
    })[0];
    // 3. yr[c] = static_cast<float>(expNonPositive(static_cast<double>(xr[c] - maxVal))), or 0 in a row whose
    //    max is -inf (expRow's early return).
    Value masked =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max, f32(-std::numeric_limits<float>::infinity()));
    columns(b, loc, zero, end, {}, [&](OpBuilder &lb, Value c, ValueRange) {
      Value x = memref::LoadOp::create(lb, loc, y, at(k, c));
      Value shifted = arith::ExtFOp::create(lb, loc, lb.getF64Type(), arith::SubFOp::create(lb, loc, x, max).getResult());
      Value e = arith::TruncFOp::create(lb, loc, lb.getF32Type(), buildExpNonPositiveF64(lb, loc, shifted));
      memref::StoreOp::create(lb, loc, arith::SelectOp::create(lb, loc, masked, zeroF32, e), y, at(k, c));
      return SmallVector<Value>{};
    });
  }
  // 4. double sum = 0.0; for c: sum += yr[c]; one chain per row of the group, in one loop.
  Value zeroF64 = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0.0));
  SmallVector<Value> zeros(rows.group(), zeroF64);
  ValueRange sums = columns(b, loc, zero, end, zeros, [&](OpBuilder &lb, Value c, ValueRange carried) {
    SmallVector<Value> next;
    for (int64_t k = 0; k < rows.group(); ++k) {
      Value e = arith::ExtFOp::create(lb, loc, lb.getF64Type(), memref::LoadOp::create(lb, loc, y, at(k, c)).getResult());
      next.push_back(arith::AddFOp::create(lb, loc, carried[k], e));
    }
    return next;
  });
  // 5. const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f; yr[c] *= inv;
  for (int64_t k = 0; k < rows.group(); ++k) {
    Value sum = sums[k];
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, sum, zeroF64);
    Value reciprocal = arith::TruncFOp::create(
        b, loc, b.getF32Type(),
        arith::DivFOp::create(b, loc, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1.0)), sum));
    Value inv = arith::SelectOp::create(b, loc, positive, reciprocal, zeroF32);
    columns(b, loc, zero, end, {}, [&](OpBuilder &lb, Value c, ValueRange) {
      Value e = memref::LoadOp::create(lb, loc, y, at(k, c));
      memref::StoreOp::create(lb, loc, arith::MulFOp::create(lb, loc, e, inv), y, at(k, c));
      return SmallVector<Value>{};
    });
  }
}

void mlir::ptrain::buildSoftmaxGradRowsF32(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value dy, Value y,
                                           function_ref<void(OpBuilder &, Location, ValueRange, Value)> epilogue) {
  const int64_t cols = shape.back();
  if (cols == 0)
    return;
  OpBuilder::InsertionGuard guard(b);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0), end = arith::ConstantIndexOp::create(b, loc, cols);
  // One row at a time: with four, LLVM's SLP vectorizer packs the four dot products with gathers
  // (vgatherqps), 0.43x the runtime's speed (bench/README.md).
  RowLoops rows(b, loc, shape, /*grouped=*/false);
  Type f64 = b.getF64Type();
  auto load64 = [&](OpBuilder &lb, Value memref, ValueRange indices) -> Value {
    return arith::ExtFOp::create(lb, loc, f64, memref::LoadOp::create(lb, loc, memref, indices).getResult());
  };
  // double d = 0.0; for c: d += static_cast<double>(dyr[c]) * yr[c]; the group's rows in one loop, and all
  // their dots before any dx is written (dx may alias dy).
  Value zeroF64 = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0.0));
  SmallVector<Value> zeros(rows.group(), zeroF64);
  ValueRange dots = columns(b, loc, zero, end, zeros, [&](OpBuilder &lb, Value c, ValueRange carried) {
    SmallVector<Value> next;
    for (int64_t k = 0; k < rows.group(); ++k) {
      Value product = arith::MulFOp::create(lb, loc, load64(lb, dy, rows.at(k, c)), load64(lb, y, rows.at(k, c)));
      next.push_back(arith::AddFOp::create(lb, loc, carried[k], product));
    }
    return next;
  });
  // dxr[c] = static_cast<float>(yr[c] * (dyr[c] - dot)), then the chain's epilogue at that element.
  for (int64_t k = 0; k < rows.group(); ++k)
    columns(b, loc, zero, end, {}, [&](OpBuilder &lb, Value c, ValueRange) {
      SmallVector<Value> indices = rows.at(k, c);
      Value centered = arith::SubFOp::create(lb, loc, load64(lb, dy, indices), dots[k]);
      Value dx = arith::TruncFOp::create(lb, loc, lb.getF32Type(),
                                         arith::MulFOp::create(lb, loc, load64(lb, y, indices), centered).getResult());
      epilogue(lb, loc, indices, dx);
      return SmallVector<Value>{};
    });
}
