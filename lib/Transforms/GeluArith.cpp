//===- GeluArith.cpp - The runtime's exact GELU as arith ops --------------===//
//
// See GeluArith.h. Each function below mirrors one function of
// lib/Runtime/cpu/Gelu.cpp or lib/Runtime/cpu/VectorMath.h line by line; the
// comments quote the C++ it reproduces.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/GeluArith.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// Builds fp64 scalar arithmetic at one place, in the order of the C++ expressions.
struct F64 {
  OpBuilder &b;
  Location loc;

  Value c(double v) { return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v)); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  /// `x < y ? t : f` (ordered: false for NaN, as in C++).
  Value lessSelect(Value x, Value y, Value t, Value f) {
    Value less = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y);
    return arith::SelectOp::create(b, loc, less, t, f);
  }

  constexpr static double kInvSqrt2 = 0.70710678118654752440;
  constexpr static double kInvSqrt2Pi = 0.39894228040143267794;

  /// VectorMath.h, expNonPositive(x).
  Value expNonPositive(Value x) {
    x = lessSelect(x, c(-708.0), c(-708.0), x); // x = x < -708.0 ? -708.0 : x;
    constexpr double kLog2e = 1.4426950408889634074;
    constexpr double kLn2Hi = 6.93147180369123816490e-01;
    constexpr double kLn2Lo = 1.90821492927058770002e-10;
    constexpr double kShift = 6755399441055744.0;             // 1.5 * 2^52
    Value kd = add(mul(x, c(kLog2e)), c(kShift));             // x * kLog2e + kShift
    Value k = sub(kd, c(kShift));                             // kd - kShift
    Value r = sub(sub(x, mul(k, c(kLn2Hi))), mul(k, c(kLn2Lo))); // (x - k * kLn2Hi) - k * kLn2Lo
    // Horner from 1/11! down: the C++ constants are folded by the compiler, correctly rounded, like these.
    const double coefficients[] = {1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
                                   1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,    1.0 / 24.0,
                                   1.0 / 6.0,        0.5,             1.0,            1.0};
    Value p = c(coefficients[0]);
    for (double coefficient : ArrayRef<double>(coefficients).drop_front())
      p = add(mul(p, r), c(coefficient)); // p = p * r + coefficient;
    // bits = (bits - 0x4338000000000000LL + 1023) << 52: 2^k in the exponent.
    Type i64 = b.getI64Type();
    auto i = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v)); };
    Value bits = arith::BitcastOp::create(b, loc, i64, kd);
    bits = arith::SubIOp::create(b, loc, bits, i(0x4338000000000000LL));
    bits = arith::AddIOp::create(b, loc, bits, i(1023));
    bits = arith::ShLIOp::create(b, loc, bits, i(52));
    Value scale = arith::BitcastOp::create(b, loc, b.getF64Type(), bits);
    return mul(p, scale); // p * scale
  }

  /// VectorMath.h, erfcNonNegative(z, gauss).
  Value erfcNonNegative(Value z, Value &gauss) {
    Value zc = lessSelect(z, c(10.0), z, c(10.0));          // z < 10.0 ? z : 10.0
    Value t = div(c(1.0), add(c(1.0), mul(c(0.3275911), zc))); // 1.0 / (1.0 + 0.3275911 * zc)
    Value p = c(5.59791176653451628e-02);
    // p = p * t - c or p = p * t + c, as written there (true: +).
    const std::pair<bool, double> steps[] = {
        {false, 3.13597849479996638e-01}, {true, 6.19651051065603919e-01},  {false, 5.50575537992405328e-01},
        {true, 4.94147276857562268e-01},  {false, 4.68543083546088118e-02}, {true, 2.04852184768241519e-01},
        {true, 1.65845837498682758e-01},  {true, 1.85772194826545611e-01},  {true, 1.84780018442105093e-01}};
    for (auto [plus, coefficient] : steps)
      p = plus ? add(mul(p, t), c(coefficient)) : sub(mul(p, t), c(coefficient));
    gauss = expNonPositive(mul(neg(zc), zc)); // expNonPositive(-zc * zc)
    return lessSelect(z, c(10.0), mul(mul(t, p), gauss), c(0.0)); // z < 10.0 ? t * p * gauss : 0.0
  }

  /// Gelu.cpp, cdf(x, gauss).
  Value cdf(Value x, Value &gauss) {
    Value zero = c(0.0);
    Value z = mul(lessSelect(x, zero, neg(x), x), c(kInvSqrt2)); // (x < 0.0 ? -x : x) * kInvSqrt2
    Value half = mul(c(0.5), erfcNonNegative(z, gauss));        // 0.5 * erfcNonNegative(z, gauss)
    return lessSelect(x, zero, half, sub(c(1.0), half));         // x < 0.0 ? half : 1.0 - half
  }

  Value extend(Value f32) { return arith::ExtFOp::create(b, loc, b.getF64Type(), f32); }
  Value truncate(Value f64) { return arith::TruncFOp::create(b, loc, b.getF32Type(), f64); }
};

} // namespace

Value mlir::ptrain::buildExpNonPositiveF64(OpBuilder &b, Location loc, Value x) {
  return F64{b, loc}.expNonPositive(x);
}

Value mlir::ptrain::buildGeluF32(OpBuilder &b, Location loc, Value x) {
  F64 f{b, loc};
  Value xi = f.extend(x); // const double xi = x[i];
  Value gauss;
  return f.truncate(f.mul(xi, f.cdf(xi, gauss))); // static_cast<float>(xi * cdf(xi))
}

Value mlir::ptrain::buildGeluGradF32(OpBuilder &b, Location loc, Value dy, Value x) {
  F64 f{b, loc};
  Value xi = f.extend(x);
  Value gauss;
  Value phi = f.cdf(xi, gauss);
  // static_cast<float>(dy[i] * (phi + xi * kInvSqrt2Pi * gauss))
  Value slope = f.add(phi, f.mul(f.mul(xi, f.c(F64::kInvSqrt2Pi)), gauss));
  return f.truncate(f.mul(f.extend(dy), slope));
}
