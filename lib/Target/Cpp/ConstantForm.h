//===- ConstantForm.h - C literals of constant elements ---------*- C++ -*-===//
//
// The C side of include/ptrain/Analysis/ConstantForm.h: how the CPU target
// writes one element of a generated constant (a fill value, a mask's keep and
// masked values).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_CONSTANTFORM_H
#define PTRAIN_TARGET_CPP_CONSTANTFORM_H

#include "ptrain/Analysis/ConstantForm.h"

#include "mlir/IR/Types.h"

#include <cstdint>
#include <string>

namespace mlir::ptrain::cpp {

/// The C literal of one element of `type` (f32, i64 or i1) with the bits `bits`.
std::string elementLiteral(Type type, uint64_t bits);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_CONSTANTFORM_H
