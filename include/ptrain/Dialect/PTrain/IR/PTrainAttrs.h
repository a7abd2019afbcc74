//===- PTrainAttrs.h - codec attributes and matrix views ---------*- C++ -*-===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"

#include "ptrain/Dialect/PTrain/IR/PTrainAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h.inc"

namespace mlir::ptrain {

/// Whether `type` is one of the 16-bit float types of a mixed-precision step's traffic (bf16, f16).
inline bool isHalfFloat(Type type) { return type.isBF16() || type.isF16(); }

/// The type a codec computes in and keeps its error-feedback residual in for an input of `type`
/// (docs/Compression.md, "Codecs on 16-bit traffic"): `type` with f32 elements for a bf16 or f16 input (the
/// input is widened exactly; issue 24 item 2: residuals and PowerSGD's factors stay fp32), else `type` itself.
inline RankedTensorType getCodecComputeType(RankedTensorType type) {
  return isHalfFloat(type.getElementType()) ? type.clone(Float32Type::get(type.getContext())) : type;
}

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_H
