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

void mlir::ptrain::buildSoftmaxRowsF32(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Value y,
                                       function_ref<Value(OpBuilder &, Location, ValueRange)> element) {
  const int64_t cols = shape.back();
  if (cols == 0)
    return; // no element to write
  OpBuilder::InsertionGuard guard(b);
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  auto f32 = [&](float v) -> Value { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); };
  Value zero = index(0), one = index(1), end = index(cols);
  // The rows: one loop per leading dimension, row-major like the runtime's r = 0 .. rows-1; the innermost
  // leading loop steps over kRowGroup rows at once where its size allows (the runtime's softmaxForward: the
  // group's sums are independent fp64 chains that hide the add latency; each row's bits are unchanged).
  constexpr int64_t kRowGroup = 4;
  const int64_t group = shape.size() >= 2 && shape[shape.size() - 2] % kRowGroup == 0 ? kRowGroup : 1;
  SmallVector<Value> row;
  for (auto [d, size] : llvm::enumerate(shape.drop_back())) {
    const bool innermost = d + 2 == shape.size();
    auto loop = scf::ForOp::create(b, loc, zero, index(size), innermost ? index(group) : one);
    row.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  // Row k of the group: the innermost leading index plus k.
  SmallVector<SmallVector<Value>> rows;
  for (int64_t k = 0; k < group; ++k) {
    SmallVector<Value> indices(row);
    if (k > 0)
      indices.back() = arith::AddIOp::create(b, loc, indices.back(), index(k));
    rows.push_back(std::move(indices));
  }
  auto at = [&](int64_t k, Value c) {
    SmallVector<Value> indices(rows[k]);
    indices.push_back(c);
    return indices;
  };
  // A loop over the columns [from, cols) carrying `init`; `body` returns the carried values' next ones.
  auto columns = [&](Value from, ValueRange init, function_ref<SmallVector<Value>(OpBuilder &, Value, ValueRange)> body) {
    return scf::ForOp::create(b, loc, from, end, one, init,
                              [&](OpBuilder &lb, Location l, Value c, ValueRange carried) {
                                scf::YieldOp::create(lb, l, body(lb, c, carried));
                              })
        .getResults();
  };

  Value zeroF32 = f32(0.0f);
  for (int64_t k = 0; k < group; ++k) {
    // 1. The softmax input, stored into y (the runtime reads it from the prologue's buffer).
    columns(zero, {}, [&](OpBuilder &lb, Value c, ValueRange) {
      memref::StoreOp::create(lb, loc, element(lb, loc, at(k, c)), y, at(k, c));
      return SmallVector<Value>{};
    });
    // 2. float maxVal = xr[0]; for c >= 1: maxVal = xr[c] > maxVal ? xr[c] : maxVal;
    Value first = memref::LoadOp::create(b, loc, y, at(k, zero));
    Value max = columns(one, first, [&](OpBuilder &lb, Value c, ValueRange carried) {
      Value x = memref::LoadOp::create(lb, loc, y, at(k, c));
      Value greater = arith::CmpFOp::create(lb, loc, arith::CmpFPredicate::OGT, x, carried[0]);
      return SmallVector<Value>{arith::SelectOp::create(lb, loc, greater, x, carried[0])};
    })[0];
    // 3. yr[c] = static_cast<float>(expNonPositive(static_cast<double>(xr[c] - maxVal))), or 0 in a row whose
    //    max is -inf (expRow's early return).
    Value masked =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max, f32(-std::numeric_limits<float>::infinity()));
    columns(zero, {}, [&](OpBuilder &lb, Value c, ValueRange) {
      Value x = memref::LoadOp::create(lb, loc, y, at(k, c));
      Value shifted = arith::ExtFOp::create(lb, loc, lb.getF64Type(), arith::SubFOp::create(lb, loc, x, max).getResult());
      Value e = arith::TruncFOp::create(lb, loc, lb.getF32Type(), buildExpNonPositiveF64(lb, loc, shifted));
      memref::StoreOp::create(lb, loc, arith::SelectOp::create(lb, loc, masked, zeroF32, e), y, at(k, c));
      return SmallVector<Value>{};
    });
  }
  // 4. double sum = 0.0; for c: sum += yr[c]; one chain per row of the group, in one loop.
  Value zeroF64 = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0.0));
  SmallVector<Value> zeros(group, zeroF64);
  ValueRange sums = columns(zero, zeros, [&](OpBuilder &lb, Value c, ValueRange carried) {
    SmallVector<Value> next;
    for (int64_t k = 0; k < group; ++k) {
      Value e = arith::ExtFOp::create(lb, loc, lb.getF64Type(), memref::LoadOp::create(lb, loc, y, at(k, c)).getResult());
      next.push_back(arith::AddFOp::create(lb, loc, carried[k], e));
    }
    return next;
  });
  // 5. const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f; yr[c] *= inv;
  for (int64_t k = 0; k < group; ++k) {
    Value sum = sums[k];
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, sum, zeroF64);
    Value reciprocal = arith::TruncFOp::create(
        b, loc, b.getF32Type(),
        arith::DivFOp::create(b, loc, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1.0)), sum));
    Value inv = arith::SelectOp::create(b, loc, positive, reciprocal, zeroF32);
    columns(zero, {}, [&](OpBuilder &lb, Value c, ValueRange) {
      Value e = memref::LoadOp::create(lb, loc, y, at(k, c));
      memref::StoreOp::create(lb, loc, arith::MulFOp::create(lb, loc, e, inv), y, at(k, c));
      return SmallVector<Value>{};
    });
  }
}
