//===- ConstantForm.cpp - C literals of constant elements -----------------===//

#include "ConstantForm.h"

#include "Common/EmitHelpers.h"

#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::ptrain::cpp;

std::string mlir::ptrain::cpp::elementLiteral(Type type, uint64_t bits) {
  if (type.isF32())
    return floatLiteral(llvm::bit_cast<float>(static_cast<uint32_t>(bits)));
  if (type.isInteger(1))
    return bits ? "1" : "0";
  return int64Literal(static_cast<int64_t>(bits));
}
