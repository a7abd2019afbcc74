//===- PTrainCodecPhaseOps.cpp - the phases of data-parallel PowerSGD -*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.cpp.inc"

/// (C1) of the phase ops: the codec accepts `type`; its (n, m) in `nm`.
static LogicalResult verifyPhaseCodec(Operation *op, PowerSGDAttr codec, RankedTensorType type,
                                      std::pair<int64_t, int64_t> &nm) {
  if (failed(cast<CodecAttrInterface>(codec).verifyForType([&] { return op->emitOpError(); }, type)))
    return failure();
  nm = *MatrixViewAttr::getMatrixShape(codec.getView(), type, nullptr);
  return success();
}

/// Fails with "<what> must have type <expected>, got <actual>" unless they agree.
static LogicalResult expectType(Operation *op, StringRef what, Type actual, Type expected) {
  if (actual == expected)
    return success();
  return op->emitOpError() << what << " must have type " << expected << ", got " << actual;
}

LogicalResult PowerSGDPhasePOp::verify() {
  auto type = getInput().getType();
  std::pair<int64_t, int64_t> nm;
  PowerSGDAttr codec = getCodec();
  if (failed(verifyPhaseCodec(*this, codec, type, nm))) // (C1)
    return failure();
  const int64_t r = codec.getRank();
  Type elt = type.getElementType();
  auto pType = RankedTensorType::get({nm.first, r}, elt), qType = RankedTensorType::get({nm.second, r}, elt);
  // (C2)
  if (getResidual() && failed(expectType(*this, "residual", getResidual().getType(), type)))
    return failure();
  // (C3)
  if (codec.isWarmStart() != bool(getWarmStartQ()))
    return emitOpError() << (codec.isWarmStart() ? "the codec warm-starts: warm_start_q is required"
                                                 : "the codec does not warm-start: warm_start_q must be absent");
  if (getWarmStartQ() && failed(expectType(*this, "warm_start_q", getWarmStartQ().getType(), qType)))
    return failure();
  // (C4)
  if (failed(expectType(*this, "matrix", getMatrix().getType(), type)) ||
      failed(expectType(*this, "p", getP().getType(), pType)) ||
      failed(expectType(*this, "q", getQ().getType(), qType)))
    return failure();
  return success();
}

LogicalResult PowerSGDPhaseQOp::verify() {
  auto type = cast<RankedTensorType>(getMatrix().getType());
  std::pair<int64_t, int64_t> nm;
  PowerSGDAttr codec = getCodec();
  if (failed(verifyPhaseCodec(*this, codec, type, nm))) // (C1)
    return failure();
  const int64_t r = codec.getRank();
  if ((nm.first + nm.second) * r >= nm.first * nm.second)
    return emitOpError() << "rank " << r << " on a " << nm.first << " x " << nm.second
                         << " matrix is PowerSGD's exact path ((n + m) r >= n m), which has no power step";
  Type elt = type.getElementType();
  auto pType = RankedTensorType::get({nm.first, r}, elt), qType = RankedTensorType::get({nm.second, r}, elt);
  // (C2)
  if (failed(expectType(*this, "p", getP().getType(), pType)) ||
      failed(expectType(*this, "p_hat", getPHat().getType(), pType)) ||
      failed(expectType(*this, "q", getQ().getType(), qType)))
    return failure();
  return success();
}

LogicalResult PowerSGDFinishOp::verify() {
  auto type = cast<RankedTensorType>(getMatrix().getType());
  std::pair<int64_t, int64_t> nm;
  PowerSGDAttr codec = getCodec();
  if (failed(verifyPhaseCodec(*this, codec, type, nm))) // (C1)
    return failure();
  const int64_t r = codec.getRank();
  Type elt = type.getElementType();
  auto pType = RankedTensorType::get({nm.first, r}, elt), qType = RankedTensorType::get({nm.second, r}, elt);
  // (C2), (C3)
  if (failed(expectType(*this, "p_hat", getPHat().getType(), pType)) ||
      failed(expectType(*this, "q", getQ().getType(), qType)) ||
      failed(expectType(*this, "result", getResult().getType(), type)) ||
      failed(expectType(*this, "residual", getResidual().getType(), type)) ||
      failed(expectType(*this, "warm_start_q", getWarmStartQ().getType(), qType)))
    return failure();
  // (C4)
  for (auto [name, value] : {std::pair<StringRef, APFloat>{"alpha", getAlpha()}, {"beta", getBeta()}})
    if (!value.isFinite() || value.isNegative() || value.isZero())
      return emitOpError() << name << " must be finite and > 0, got " << value.convertToDouble();
  return success();
}
