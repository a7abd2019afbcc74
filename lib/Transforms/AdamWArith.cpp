//===- AdamWArith.cpp - The runtime's AdamW update as scf + vector --------===//
//
// See include/ptrain/Transforms/AdamWArith.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/AdamWArith.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::ptrain;

std::string AdamWKernelShape::signature() const {
  // The betas and epsilon as the f32 arguments the runtime gets: equal f32 values share a kernel.
  auto bits = [](double v) { return std::to_string(llvm::bit_cast<uint32_t>(static_cast<float>(v))); };
  return "adamw:" + std::to_string(numel) + ":" + bits(beta1) + ":" + bits(beta2) + ":" + bits(epsilon) +
         (clipScale ? ":scale" : "");
}

std::optional<AdamWKernelShape> mlir::ptrain::adamwKernelShapeOf(AdamWOp op) {
  auto type = dyn_cast<RankedTensorType>(op.getParam().getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isF32() || type.getNumElements() == 0)
    return std::nullopt;
  AdamWKernelShape shape;
  shape.numel = type.getNumElements();
  shape.beta1 = op.getBeta1Attr().getValueAsDouble();
  shape.beta2 = op.getBeta2Attr().getValueAsDouble();
  shape.epsilon = op.getEpsilonAttr().getValueAsDouble();
  shape.clipScale = static_cast<bool>(foldedClipScaleOf(op));
  return shape;
}

func::FuncOp mlir::ptrain::buildAdamWKernel(OpBuilder &b, Location loc, StringRef name,
                                            const AdamWKernelShape &shape) {
  Type f32 = b.getF32Type();
  auto tensor = MemRefType::get({shape.numel}, f32);
  SmallVector<Type> inputs(4, tensor);
  if (shape.clipScale)
    inputs.push_back(MemRefType::get({1}, f32));
  inputs.append(3, f32);
  auto func = func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, {}));
  Block *entry = func.addEntryBlock();
  OpBuilder fb = OpBuilder::atBlockBegin(entry);
  Value p = entry->getArgument(0), grad = entry->getArgument(1), m = entry->getArgument(2),
        v = entry->getArgument(3);
  const unsigned k = shape.clipScale ? 5 : 4;
  auto index = [&](int64_t i) -> Value { return arith::ConstantIndexOp::create(fb, loc, i); };
  auto f32c = [&](double x) -> Value {
    return arith::ConstantOp::create(fb, loc, fb.getF32FloatAttr(static_cast<float>(x)));
  };
  // The scalars, as the runtime has them: the betas and epsilon its f32 arguments, 1 - beta in fp32.
  Value b1 = f32c(shape.beta1), b2 = f32c(shape.beta2), eps = f32c(shape.epsilon);
  Value omb1 = arith::SubFOp::create(fb, loc, f32c(1.0), b1), omb2 = arith::SubFOp::create(fb, loc, f32c(1.0), b2);
  Value scale = shape.clipScale ? memref::LoadOp::create(fb, loc, entry->getArgument(4), ValueRange{index(0)})
                                : Value();
  Value decay = entry->getArgument(k), stepSize = entry->getArgument(k + 1), invSqrtBc2 = entry->getArgument(k + 2);
  SmallVector<Value> scalars = {b1, b2, eps, omb1, omb2, decay, stepSize, invSqrtBc2};
  if (scale)
    scalars.push_back(scale);

  // One element (vt null) or kAdamWKernelLanes of them at `i`; `c` the scalars, splat where vt is a vector.
  auto update = [&](OpBuilder &nb, Location l, Value i, VectorType vt, ArrayRef<Value> c) {
    auto load = [&](Value mem) -> Value {
      return vt ? vector::LoadOp::create(nb, l, vt, mem, ValueRange{i}).getResult()
                : memref::LoadOp::create(nb, l, mem, ValueRange{i}).getResult();
    };
    auto store = [&](Value x, Value mem) {
      if (vt)
        vector::StoreOp::create(nb, l, x, mem, ValueRange{i});
      else
        memref::StoreOp::create(nb, l, x, mem, ValueRange{i});
    };
    auto mul = [&](Value x, Value y) -> Value { return arith::MulFOp::create(nb, l, x, y); };
    auto add = [&](Value x, Value y) -> Value { return arith::AddFOp::create(nb, l, x, y); };
    Value g = load(grad);
    if (c.size() > 8)
      g = mul(g, c[8]); // the clipping's ptrain.binary mul (grad * scale)
    // m = beta1 * m + (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g * g (left to right).
    Value mNew = add(mul(c[0], load(m)), mul(c[3], g));
    Value vNew = add(mul(c[1], load(v)), mul(mul(c[4], g), g));
    store(mNew, m);
    store(vNew, v);
    // denom = sqrt(v) * inv_sqrt_bc2 + eps; p = p * decay - step_size * m / denom.
    Value denom = add(mul(math::SqrtOp::create(nb, l, vNew), c[7]), c[2]);
    Value pNew = arith::SubFOp::create(nb, l, mul(load(p), c[5]),
                                       arith::DivFOp::create(nb, l, mul(c[6], mNew), denom));
    store(pNew, p);
  };
  const int64_t lanes = kAdamWKernelLanes, vectorEnd = shape.numel / lanes * lanes;
  if (vectorEnd > 0) {
    auto vt = VectorType::get({lanes}, f32);
    SmallVector<Value> splats;
    for (Value s : scalars)
      splats.push_back(vector::BroadcastOp::create(fb, loc, vt, s));
    scf::ForOp::create(fb, loc, index(0), index(vectorEnd), index(lanes), ValueRange{},
                       [&](OpBuilder &nb, Location l, Value i, ValueRange) {
                         update(nb, l, i, vt, splats);
                         scf::YieldOp::create(nb, l);
                       });
  }
  if (vectorEnd < shape.numel)
    scf::ForOp::create(fb, loc, index(vectorEnd), index(shape.numel), index(1), ValueRange{},
                       [&](OpBuilder &nb, Location l, Value i, ValueRange) {
                         update(nb, l, i, VectorType(), scalars);
                         scf::YieldOp::create(nb, l);
                       });
  func::ReturnOp::create(fb, loc);
  return func;
}
