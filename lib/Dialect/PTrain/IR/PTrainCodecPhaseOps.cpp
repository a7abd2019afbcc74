//===- PTrainCodecPhaseOps.cpp - the phases of data-parallel PowerSGD -*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.cpp.inc"

/// (C1) of the phase ops: the codec accepts `type`; the factor types P (n x r) and Q (m x r) of its view.
static LogicalResult verifyPhaseCodec(Operation *op, PowerSGDAttr codec, RankedTensorType type, RankedTensorType &pType,
                                      RankedTensorType &qType) {
  if (failed(cast<CodecAttrInterface>(codec).verifyForType([&] { return op->emitOpError(); }, type)))
    return failure();
  auto [n, m] = *MatrixViewAttr::getMatrixShape(codec.getView(), type, nullptr);
  pType = RankedTensorType::get({n, codec.getRank()}, type.getElementType());
  qType = RankedTensorType::get({m, codec.getRank()}, type.getElementType());
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
  PowerSGDAttr codec = getCodec();
  RankedTensorType pType, qType;
  if (failed(verifyPhaseCodec(*this, codec, type, pType, qType))) // (C1)
    return failure();
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
  PowerSGDAttr codec = getCodec();
  RankedTensorType pType, qType;
  if (failed(verifyPhaseCodec(*this, codec, type, pType, qType))) // (C1)
    return failure();
  const int64_t n = pType.getDimSize(0), m = qType.getDimSize(0), r = codec.getRank();
  if ((n + m) * r >= n * m)
    return emitOpError() << "rank " << r << " on a " << n << " x " << m
                         << " matrix is PowerSGD's exact path ((n + m) r >= n m), which has no power step";
  // (C2)
  if (failed(expectType(*this, "p", getP().getType(), pType)) ||
      failed(expectType(*this, "p_hat", getPHat().getType(), pType)) ||
      failed(expectType(*this, "q", getQ().getType(), qType)))
    return failure();
  return success();
}

LogicalResult PowerSGDFinishOp::verify() {
  auto type = cast<RankedTensorType>(getMatrix().getType());
  PowerSGDAttr codec = getCodec();
  RankedTensorType pType, qType;
  if (failed(verifyPhaseCodec(*this, codec, type, pType, qType))) // (C1)
    return failure();
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
