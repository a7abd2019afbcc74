//===- QuantArith.cpp - The runtime's block quantizer as scf + vector -----===//
//
// See include/ptrain/Transforms/QuantArith.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/QuantArith.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cfloat>

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// Builds the kernel's ops at one insertion point; `index(n)` and the f32 constants are created on demand.
struct QuantBuilder {
  OpBuilder &b;
  Location loc;
  const QuantKernelShape &shape;
  VectorType lanes, ints;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(float v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); }
  Value splat(Value scalar) {
    return vector::BroadcastOp::create(b, loc, VectorType::get({kQuantKernelLanes}, scalar.getType()), scalar);
  }
  Value splatF32(float v) { return splat(f32(v)); }
  Value lt(Value x, Value y) { return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y); }
  Value select(Value c, Value x, Value y) { return arith::SelectOp::create(b, loc, c, x, y); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  /// |x| by clearing the sign bit (std::fabs).
  Value abs(Value x) {
    Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), x);
    Value mask = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0x7fffffff));
    return arith::BitcastOp::create(b, loc, b.getF32Type(), arith::AndIOp::create(b, loc, bits, mask));
  }
  /// x * 0 != 0 (unordered): x is inf or NaN; the runtime's !(|x| <= FLT_MAX).
  Value nonFinite(Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, mul(x, f32(0.0f)), f32(0.0f));
  }
};

/// Step 1 over one block: x = e + g (stored into e), the lanes' lo, hi and probe.
SmallVector<Value> buildBlockStats(QuantBuilder &q, Value g, Value e, Value begin) {
  OpBuilder &b = q.b;
  Value init[] = {q.splatF32(FLT_MAX), q.splatF32(-FLT_MAX), q.splatF32(0.0f)};
  auto loop = scf::ForOp::create(b, q.loc, q.index(0), q.index(q.shape.block), q.index(kQuantKernelLanes),
                                 ValueRange(init), [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
                                   QuantBuilder in{nb, l, q.shape, q.lanes, q.ints};
                                   Value at = arith::AddIOp::create(nb, l, begin, k);
                                   Value x = vector::LoadOp::create(nb, l, q.lanes, g, ValueRange{at});
                                   if (e) {
                                     Value r = vector::LoadOp::create(nb, l, q.lanes, e, ValueRange{at});
                                     x = in.add(r, x);
                                     vector::StoreOp::create(nb, l, x, e, ValueRange{at});
                                   }
                                   Value lo = in.select(in.lt(x, acc[0]), x, acc[0]);
                                   Value hi = in.select(in.lt(acc[1], x), x, acc[1]);
                                   Value probe = in.add(acc[2], in.mul(x, in.splatF32(0.0f)));
                                   scf::YieldOp::create(nb, l, ValueRange{lo, hi, probe});
                                 });
  return SmallVector<Value>(loop.getResults());
}

/// Step 2: the first element of [begin, begin + block) of v that is inf or NaN (one exists), as i64.
Value buildFirstNonFinite(QuantBuilder &q, Value v, Value begin) {
  OpBuilder &b = q.b;
  Value none = arith::ConstantOp::create(b, q.loc, b.getI64IntegerAttr(-1));
  auto loop = scf::ForOp::create(b, q.loc, q.index(0), q.index(q.shape.block), q.index(1), ValueRange{none},
                                 [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
                                   QuantBuilder in{nb, l, q.shape, q.lanes, q.ints};
                                   Value at = arith::AddIOp::create(nb, l, begin, k);
                                   Value x = memref::LoadOp::create(nb, l, v, ValueRange{at});
                                   Value notYet =
                                       arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, acc[0],
                                                             arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(0)));
                                   Value found = arith::AndIOp::create(nb, l, notYet, in.nonFinite(x));
                                   Value atI64 = arith::IndexCastOp::create(nb, l, nb.getI64Type(), at);
                                   scf::YieldOp::create(nb, l, ValueRange{in.select(found, atI64, acc[0])});
                                 });
  return loop.getResult(0);
}

/// Step 3's sign rule: where mn or mx is 0, it takes the first zero of the block's v (quantFirstZeroSign).
std::pair<Value, Value> buildFirstZeroSign(QuantBuilder &q, Value v, Value begin, Value mn, Value mx) {
  OpBuilder &b = q.b;
  Value zero = q.f32(0.0f);
  Value mnZero = arith::CmpFOp::create(b, q.loc, arith::CmpFPredicate::OEQ, mn, zero);
  Value mxZero = arith::CmpFOp::create(b, q.loc, arith::CmpFPredicate::OEQ, mx, zero);
  Value either = arith::OrIOp::create(b, q.loc, mnZero, mxZero);
  auto ifOp = scf::IfOp::create(
      b, q.loc, either,
      [&](OpBuilder &tb, Location l) {
        // The first zero: (found, value) carried through the block.
        Value init[] = {arith::ConstantOp::create(tb, l, tb.getBoolAttr(false)), zero};
        auto loop = scf::ForOp::create(
            tb, l, q.index(0), q.index(q.shape.block), q.index(1), ValueRange(init),
            [&](OpBuilder &nb, Location l2, Value k, ValueRange acc) {
              QuantBuilder in{nb, l2, q.shape, q.lanes, q.ints};
              Value x = memref::LoadOp::create(nb, l2, v, ValueRange{arith::AddIOp::create(nb, l2, begin, k)});
              Value isZero = arith::CmpFOp::create(nb, l2, arith::CmpFPredicate::OEQ, x, zero);
              Value notYet =
                  arith::XOrIOp::create(nb, l2, acc[0], arith::ConstantOp::create(nb, l2, nb.getBoolAttr(true)));
              Value take = arith::AndIOp::create(nb, l2, notYet, isZero);
              scf::YieldOp::create(
                  nb, l2, ValueRange{arith::OrIOp::create(nb, l2, acc[0], isZero), in.select(take, x, acc[1])});
            });
        QuantBuilder in{tb, l, q.shape, q.lanes, q.ints};
        Value first = loop.getResult(1);
        scf::YieldOp::create(tb, l, ValueRange{in.select(mnZero, first, mn), in.select(mxZero, first, mx)});
      },
      [&](OpBuilder &eb, Location l) {
        scf::YieldOp::create(eb, l, ValueRange{mn, mx});
      });
  return {ifOp.getResult(0), ifOp.getResult(1)};
}

/// Step 5's packing: the 32-bit codes `u` (N lanes) as N * bits / 8 bytes, code i at bits (i * bits) % 8 of
/// byte (i * bits) / 8: lanes i, i + per, ... shuffled together and shifted (x86 has no byte shifts).
Value buildPackedBytes(QuantBuilder &q, Value u) {
  OpBuilder &b = q.b;
  const int64_t perByte = 8 / q.shape.bits, m = kQuantKernelLanes / perByte;
  Value packed;
  for (int64_t j = 0; j < perByte; ++j) {
    SmallVector<int64_t> mask;
    for (int64_t i = 0; i < m; ++i)
      mask.push_back(i * perByte + j);
    Value part = perByte == 1 ? u : Value(vector::ShuffleOp::create(b, q.loc, u, u, mask));
    if (j > 0) {
      Value shift = arith::ConstantOp::create(
          b, q.loc,
          DenseElementsAttr::get(VectorType::get({m}, b.getI32Type()), b.getI32IntegerAttr(j * q.shape.bits)));
      part = arith::ShLIOp::create(b, q.loc, part, shift);
    }
    packed = j == 0 ? part : Value(arith::OrIOp::create(b, q.loc, packed, part));
  }
  return arith::TruncIOp::create(b, q.loc, VectorType::get({m}, b.getI8Type()), packed);
}

/// Steps 3-5 for one finite block: its quantizer stored into scales[s] (zeros[s]), then its codes and residual.
void buildBlockCodes(QuantBuilder &q, Value g, Value e, Value packed, Value scales, Value zeros, Value s, Value begin,
                     Value loLanes, Value hiLanes) {
  OpBuilder &b = q.b;
  const QuantKernelShape &shape = q.shape;
  Value v = e ? e : g;
  // The lanes hold finite values here (the probe passed) and a zero's sign is set below: `nnan nsz` lets LLVM
  // fold the lanes in a tree (vminps) without the NaN and signed-zero fix-ups; the value is the same.
  const auto finiteFlags = arith::FastMathFlags::nnan | arith::FastMathFlags::nsz;
  Value mn = vector::ReductionOp::create(b, q.loc, vector::CombiningKind::MINNUMF, loLanes, finiteFlags);
  Value mx = vector::ReductionOp::create(b, q.loc, vector::CombiningKind::MAXNUMF, hiLanes, finiteFlags);
  std::tie(mn, mx) = buildFirstZeroSign(q, v, begin, mn, mx);
  // QuantGroup::make.
  Value scale, zero;
  float minCode, maxCode, offset;
  if (shape.symmetric) {
    const float levels = static_cast<float>((1 << (shape.bits - 1)) - 1);
    Value a = q.abs(mn), c = q.abs(mx);
    scale = q.div(q.select(q.lt(a, c), c, a), q.f32(levels)); // std::fmax of two non-NaN values >= +0
    zero = q.f32(0.0f);
    minCode = -levels, maxCode = levels, offset = static_cast<float>(1 << (shape.bits - 1));
  } else {
    const float levels = static_cast<float>((1 << shape.bits) - 1);
    // common/QuantScale.h, quantAsymmetricScale: the range clamped to FLT_MAX (it overflows only past it).
    Value range = q.sub(mx, mn);
    scale = q.div(q.select(q.lt(q.f32(FLT_MAX), range), q.f32(FLT_MAX), range), q.f32(levels));
    zero = mn;
    minCode = 0.0f, maxCode = levels, offset = 0.0f;
  }
  // common/QuantScale.h: (s, 1 / s) where s > 0 and 1 / s is finite, (s, 0) where s is not > 0, else (0, 0).
  Value positive = arith::CmpFOp::create(b, q.loc, arith::CmpFPredicate::OGT, scale, q.f32(0.0f));
  Value reciprocal = q.div(q.f32(1.0f), scale);
  Value finite = arith::CmpFOp::create(b, q.loc, arith::CmpFPredicate::OLE, reciprocal, q.f32(FLT_MAX));
  Value coded = arith::AndIOp::create(b, q.loc, positive, finite);
  Value inv = q.select(coded, reciprocal, q.f32(0.0f));
  Value flushed = arith::XOrIOp::create(b, q.loc, positive, coded); // positive, reciprocal not finite
  scale = q.select(flushed, q.f32(0.0f), scale);
  memref::StoreOp::create(b, q.loc, scale, scales, ValueRange{s});
  if (zeros)
    memref::StoreOp::create(b, q.loc, zero, zeros, ValueRange{s});
  Value zeroV = q.splat(zero), invV = q.splat(inv), scaleV = q.splat(scale);
  Value minV = q.splatF32(minCode), maxV = q.splatF32(maxCode), offsetV = q.splatF32(offset);
  Value magicV = q.splatF32(12582912.0f); // roundEven's 1.5 * 2^23
  const int64_t perByte = 8 / shape.bits;
  scf::ForOp::create(b, q.loc, q.index(0), q.index(shape.block), q.index(kQuantKernelLanes), ValueRange{},
                     [&](OpBuilder &nb, Location l, Value k, ValueRange) {
                       QuantBuilder in{nb, l, shape, q.lanes, q.ints};
                       Value at = arith::AddIOp::create(nb, l, begin, k);
                       Value x = vector::LoadOp::create(nb, l, q.lanes, v, ValueRange{at});
                       Value t = in.mul(in.sub(x, zeroV), invV);
                       t = in.select(in.lt(t, minV), minV, t);
                       t = in.select(in.lt(maxV, t), maxV, t);
                       Value r = in.sub(in.add(t, magicV), magicV);
                       Value u = arith::FPToSIOp::create(nb, l, q.ints, in.add(r, offsetV));
                       if (e)
                         vector::StoreOp::create(nb, l, in.sub(x, in.add(in.mul(r, scaleV), zeroV)), e, ValueRange{at});
                       Value byteAt = arith::DivUIOp::create(nb, l, at, in.index(perByte));
                       vector::StoreOp::create(nb, l, buildPackedBytes(in, u), packed, ValueRange{byteAt});
                       scf::YieldOp::create(nb, l);
                     });
}

/// Step 2 for a non-finite block: scale (and zero point) NaN, its packed bytes 0, its residual NaN
/// (common/QuantScale.h, the runtime's quantNonFiniteBlock).
void buildNonFiniteBlock(QuantBuilder &q, Value e, Value packed, Value scales, Value zeros, Value s, Value begin) {
  OpBuilder &b = q.b;
  const QuantKernelShape &shape = q.shape;
  const float nan = __builtin_bit_cast(float, 0x7fc00000u); // quantNonFinite()
  memref::StoreOp::create(b, q.loc, q.f32(nan), scales, ValueRange{s});
  if (zeros)
    memref::StoreOp::create(b, q.loc, q.f32(nan), zeros, ValueRange{s});
  const int64_t perByte = 8 / shape.bits;
  auto bytes = VectorType::get({kQuantKernelLanes / perByte}, b.getI8Type());
  Value noCodes = arith::ConstantOp::create(b, q.loc, DenseElementsAttr::get(bytes, b.getI8IntegerAttr(0)));
  Value nanV = q.splatF32(nan);
  scf::ForOp::create(b, q.loc, q.index(0), q.index(shape.block), q.index(kQuantKernelLanes), ValueRange{},
                     [&](OpBuilder &nb, Location l, Value k, ValueRange) {
                       QuantBuilder in{nb, l, shape, q.lanes, q.ints};
                       Value at = arith::AddIOp::create(nb, l, begin, k);
                       if (e)
                         vector::StoreOp::create(nb, l, nanV, e, ValueRange{at});
                       Value byteAt = arith::DivUIOp::create(nb, l, at, in.index(perByte));
                       vector::StoreOp::create(nb, l, noCodes, packed, ValueRange{byteAt});
                       scf::YieldOp::create(nb, l);
                     });
}

} // namespace

func::FuncOp mlir::ptrain::buildQuantBlockEncoder(OpBuilder &builder, Location loc, StringRef name,
                                                  const QuantKernelShape &shape) {
  assert(shape.isSupported() && "the site has no generated kernel");
  Type f32 = builder.getF32Type();
  auto floats = [&](int64_t n) { return MemRefType::get({n}, f32); };
  SmallVector<Type> params = {floats(shape.numel)};
  if (shape.feedback)
    params.push_back(floats(shape.numel));
  params.push_back(MemRefType::get({shape.packedBytes()}, builder.getI8Type()));
  params.push_back(floats(shape.numBlocks()));
  if (!shape.symmetric)
    params.push_back(floats(shape.numBlocks()));
  auto func = func::FuncOp::create(builder, loc, name, builder.getFunctionType(params, {builder.getI64Type()}));
  Block *entry = func.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  ValueRange args = entry->getArguments();
  Value g = args[0], e = shape.feedback ? args[1] : Value();
  Value packed = args[shape.feedback ? 2 : 1], scales = args[shape.feedback ? 3 : 2];
  Value zeros = shape.symmetric ? Value() : args.back();
  QuantBuilder q{b, loc, shape, VectorType::get({kQuantKernelLanes}, f32),
                 VectorType::get({kQuantKernelLanes}, b.getI32Type())};
  Value none = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(-1));
  auto blocks = scf::ForOp::create(
      b, loc, q.index(0), q.index(shape.numBlocks()), q.index(1), ValueRange{none},
      [&](OpBuilder &nb, Location l, Value s, ValueRange bad) {
        QuantBuilder in{nb, l, shape, q.lanes, q.ints};
        Value begin = arith::MulIOp::create(nb, l, s, in.index(shape.block));
        SmallVector<Value> stats = buildBlockStats(in, g, e, begin);
        // Whether the sum is NaN does not depend on its order: `reassoc` lets LLVM add the lanes in a tree
        // instead of one chain of 16 dependent adds per block.
        Value probe =
            vector::ReductionOp::create(nb, l, vector::CombiningKind::ADD, stats[2], arith::FastMathFlags::reassoc);
        Value broken = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNE, probe, in.f32(0.0f));
        auto ifBroken = scf::IfOp::create(
            nb, l, broken,
            [&](OpBuilder &xb, Location l3) {
              // A non-finite block (every block after it is coded too): the first such element is returned.
              QuantBuilder xin{xb, l3, shape, q.lanes, q.ints};
              Value first = buildFirstNonFinite(xin, e ? e : g, begin);
              Value noneYet = arith::CmpIOp::create(xb, l3, arith::CmpIPredicate::slt, bad[0],
                                                    arith::ConstantOp::create(xb, l3, xb.getI64IntegerAttr(0)));
              Value firstBad = xin.select(noneYet, first, bad[0]);
              buildNonFiniteBlock(xin, e, packed, scales, zeros, s, begin);
              scf::YieldOp::create(xb, l3, ValueRange{firstBad});
            },
            [&](OpBuilder &cb, Location l3) {
              QuantBuilder cin{cb, l3, shape, q.lanes, q.ints};
              buildBlockCodes(cin, g, e, packed, scales, zeros, s, begin, stats[0], stats[1]);
              scf::YieldOp::create(cb, l3, ValueRange{bad[0]});
            });
        scf::YieldOp::create(nb, l, ifBroken.getResults());
      });
  func::ReturnOp::create(b, loc, blocks.getResults());
  return func;
}

std::optional<QuantKernelShape> mlir::ptrain::quantKernelShapeOf(CompressOp op) {
  auto quant = dyn_cast<QuantAttr>(op.getCodec());
  auto type = dyn_cast<RankedTensorType>(op.getInput().getType());
  if (!quant || !type || !type.hasStaticShape() || !type.getElementType().isF32() || !op.getParams().empty())
    return std::nullopt;
  QuantKernelShape shape;
  shape.numel = type.getNumElements();
  shape.bits = static_cast<int32_t>(quant.getBits());
  shape.symmetric = quant.isSymmetric();
  shape.feedback = op.getErrorFeedback();
  if (quant.getGranularity() == QuantGranularity::Block)
    shape.block = quant.getBlockSize();
  else if (quant.getGranularity() == QuantGranularity::Tensor)
    shape.block = shape.numel;
  else
    return std::nullopt;
  if (!shape.isSupported() || op.getState().size() != (shape.feedback ? 1u : 0u))
    return std::nullopt;
  return shape;
}
