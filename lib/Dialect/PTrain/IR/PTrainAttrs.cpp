//===- PTrainAttrs.cpp - codec attributes and matrix views -------*- C++ -*-===//
//
// Each codec states, for a tensor type, the types of its codes, state and parameters (DESIGN decision 4).
// Algorithms and code layouts: the attribute descriptions in PTrainAttrs.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>


using namespace mlir;
using namespace mlir::ptrain;

#include "ptrain/Dialect/PTrain/IR/PTrainAttrInterfaces.cpp.inc"

/// `[@a, @b]`: the stage list of #ptrain.pipeline (PTrain_SymbolListParameter).
static FailureOr<SmallVector<FlatSymbolRefAttr>> parseSymbolList(AsmParser &parser) {
  SmallVector<FlatSymbolRefAttr> symbols;
  if (failed(parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() -> ParseResult {
        FlatSymbolRefAttr symbol;
        if (parser.parseAttribute(symbol))
          return failure();
        symbols.push_back(symbol);
        return success();
      })))
    return failure();
  return symbols;
}

static void printSymbolList(AsmPrinter &printer, ArrayRef<FlatSymbolRefAttr> symbols) {
  printer << '[';
  llvm::interleaveComma(symbols, printer, [&](FlatSymbolRefAttr symbol) { printer.printAttribute(symbol); });
  printer << ']';
}

/// `true` or `false` (PTrain_FlagParameter).
static FailureOr<bool> parseFlag(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(), "expected 'true' or 'false'");
}

#define GET_ATTRDEF_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.cpp.inc"

void PTrainDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.cpp.inc"
      >();
}

using EmitErrorFn = function_ref<InFlightDiagnostic()>;

/// Fails unless `type` has a static shape and, when `needFloat`, a float element type.
static LogicalResult verifyCodecInput(EmitErrorFn emitError, RankedTensorType type, StringRef codec,
                                      bool needFloat) {
  if (!type.hasStaticShape())
    return emitError() << codec << " needs a static shape, got " << type;
  if (needFloat && !isa<FloatType>(type.getElementType()))
    return emitError() << codec << " needs a float element type, got " << type;
  return success();
}

/// Kept-value count for k-sparsification: `k` when given, else ceil(ratio * numElements), at least 1.
static int64_t sparsityK(int64_t k, double ratio, int64_t numElements) {
  if (k > 0)
    return k;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(ratio * numElements)));
}

/// (C1) of top-k and rand-k: exactly one of k >= 1 and ratio in (0, 1].
static LogicalResult verifySparsity(EmitErrorFn emitError, StringRef codec, int64_t k, FloatAttr ratioAttr) {
  double ratio = ratioAttr ? ratioAttr.getValueAsDouble() : 0.0;
  if (k < 0)
    return emitError() << codec << " k must be >= 1, got " << k;
  if (k > 0 && ratioAttr)
    return emitError() << codec << " takes either k or ratio, not both";
  if (k == 0 && !(ratio > 0.0 && ratio <= 1.0))
    return emitError() << codec << " needs k >= 1 or a ratio in (0, 1], got ratio " << ratio;
  return success();
}

static LogicalResult verifySparsityForType(EmitErrorFn emitError, StringRef codec, int64_t k,
                                           RankedTensorType type) {
  if (failed(verifyCodecInput(emitError, type, codec, /*needFloat=*/false)))
    return failure();
  if (k > type.getNumElements())
    return emitError() << codec << " k = " << k << " exceeds the " << type.getNumElements()
                       << " elements of " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// MatrixViewAttr
//===----------------------------------------------------------------------===//

LogicalResult MatrixViewAttr::verify(EmitErrorFn emitError, ArrayRef<int64_t> rows,
                                     ArrayRef<int64_t> cols) {
  // (C1)
  if (rows.empty() || cols.empty())
    return emitError() << "matrix view needs at least one row and one column dimension";
  // (C2)
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t dim : llvm::concat<const int64_t>(rows, cols)) {
    if (dim < 0)
      return emitError() << "matrix view dimension " << dim << " is negative";
    if (!seen.insert(dim).second)
      return emitError() << "matrix view lists dimension " << dim << " twice";
  }
  return success();
}

FailureOr<std::pair<int64_t, int64_t>>
MatrixViewAttr::getMatrixShape(MatrixViewAttr view, RankedTensorType type, EmitErrorFn emitError) {
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank();
  if (!view) {
    if (rank == 0)
      return std::make_pair<int64_t, int64_t>(1, 1);
    int64_t n = 1;
    for (int64_t d : shape.drop_back())
      n *= d;
    return std::make_pair(n, shape.back());
  }
  // (C3)
  if (static_cast<int64_t>(view.getRows().size() + view.getCols().size()) != rank)
    return emitError() << "matrix view " << view << " does not cover the " << rank << " dimensions of "
                       << type;
  int64_t n = 1, m = 1;
  for (int64_t d : view.getRows()) {
    if (d >= rank)
      return emitError() << "matrix view dimension " << d << " is out of range for " << type;
    n *= shape[d];
  }
  for (int64_t d : view.getCols()) {
    if (d >= rank)
      return emitError() << "matrix view dimension " << d << " is out of range for " << type;
    m *= shape[d];
  }
  return std::make_pair(n, m);
}

//===----------------------------------------------------------------------===//
// PowerSGDAttr
//===----------------------------------------------------------------------===//

LogicalResult PowerSGDAttr::verify(EmitErrorFn emitError, int64_t rank, BoolAttr warmStart,
                                   MatrixViewAttr view) {
  // (C1)
  if (rank < 1)
    return emitError() << "PowerSGD rank must be >= 1, got " << rank;
  return success();
}

LogicalResult PowerSGDAttr::verifyForType(EmitErrorFn emitError, RankedTensorType type) const {
  // (C3)
  if (failed(verifyCodecInput(emitError, type, "PowerSGD", /*needFloat=*/true)))
    return failure();
  auto nm = MatrixViewAttr::getMatrixShape(getView(), type, emitError);
  if (failed(nm))
    return failure();
  // (C2)
  auto [n, m] = *nm;
  if (getRank() > std::min(n, m))
    return emitError() << "PowerSGD rank " << getRank() << " exceeds min(n, m) = " << std::min(n, m)
                       << " of the " << n << "x" << m << " matrix view of " << type;
  return success();
}

SmallVector<Type> PowerSGDAttr::getCodeTypes(RankedTensorType type) const {
  auto [n, m] = *MatrixViewAttr::getMatrixShape(getView(), type, nullptr);
  // A bf16 / f16 input gives f32 factors: they are computed from the widened input (C3).
  Type elt = getCodecComputeType(type).getElementType();
  return {RankedTensorType::get({n, getRank()}, elt), RankedTensorType::get({m, getRank()}, elt)};
}

SmallVector<Type> PowerSGDAttr::getEncoderStateTypes(RankedTensorType type) const {
  if (!isWarmStart())
    return {};
  auto [n, m] = *MatrixViewAttr::getMatrixShape(getView(), type, nullptr);
  (void)n;
  return {RankedTensorType::get({m, getRank()}, getCodecComputeType(type).getElementType())};
}

bool PowerSGDAttr::isSummable() const { return true; }

//===----------------------------------------------------------------------===//
// TopKAttr
//===----------------------------------------------------------------------===//

LogicalResult TopKAttr::verify(EmitErrorFn emitError, int64_t k, FloatAttr ratio) {
  return verifySparsity(emitError, "top-k", k, ratio);
}

int64_t TopKAttr::getKFor(int64_t numElements) const { return sparsityK(getK(), getRatioValue(), numElements); }

LogicalResult TopKAttr::verifyForType(EmitErrorFn emitError, RankedTensorType type) const {
  if (failed(verifySparsityForType(emitError, "top-k", getKFor(type.getNumElements()), type)))
    return failure();
  // (C2) indices are int32.
  if (type.getNumElements() > std::numeric_limits<int32_t>::max())
    return emitError() << "top-k indices are int32; " << type << " has too many elements";
  return success();
}

SmallVector<Type> TopKAttr::getCodeTypes(RankedTensorType type) const {
  int64_t k = getKFor(type.getNumElements());
  return {RankedTensorType::get({k}, type.getElementType()),
          RankedTensorType::get({k}, IntegerType::get(type.getContext(), 32))};
}

bool TopKAttr::isSummable() const { return false; }

//===----------------------------------------------------------------------===//
// RandKAttr
//===----------------------------------------------------------------------===//

LogicalResult RandKAttr::verify(EmitErrorFn emitError, int64_t k, FloatAttr ratio, int64_t seed) {
  return verifySparsity(emitError, "rand-k", k, ratio);
}

int64_t RandKAttr::getKFor(int64_t numElements) const { return sparsityK(getK(), getRatioValue(), numElements); }

LogicalResult RandKAttr::verifyForType(EmitErrorFn emitError, RankedTensorType type) const {
  return verifySparsityForType(emitError, "rand-k", getKFor(type.getNumElements()), type);
}

SmallVector<Type> RandKAttr::getCodeTypes(RankedTensorType type) const {
  return {RankedTensorType::get({getKFor(type.getNumElements())}, type.getElementType())};
}

/// The call counter that, with the seed, selects this call's positions on both sides.
static Type getCounterType(MLIRContext *ctx) { return RankedTensorType::get({}, IntegerType::get(ctx, 64)); }

SmallVector<Type> RandKAttr::getEncoderStateTypes(RankedTensorType type) const {
  return {getCounterType(getContext())};
}

SmallVector<Type> RandKAttr::getDecoderStateTypes(RankedTensorType type) const {
  return {getCounterType(getContext())};
}

bool RandKAttr::isSummable() const { return true; }

//===----------------------------------------------------------------------===//
// QuantAttr
//===----------------------------------------------------------------------===//

LogicalResult QuantAttr::verify(EmitErrorFn emitError, int64_t bits, QuantGranularity granularity,
                                int64_t blockSize, BoolAttr symmetric, MatrixViewAttr view) {
  // (C1)
  if (bits != 2 && bits != 4 && bits != 8)
    return emitError() << "quantization bits must be 2, 4 or 8, got " << bits;
  // (C2)
  bool isBlock = granularity == QuantGranularity::Block;
  if (isBlock && blockSize < 1)
    return emitError() << "block quantization needs block_size >= 1, got " << blockSize;
  if (!isBlock && blockSize != 0)
    return emitError() << "block_size is only allowed with granularity = block";
  return success();
}

LogicalResult QuantAttr::verifyForType(EmitErrorFn emitError, RankedTensorType type) const {
  // (C3)
  if (failed(verifyCodecInput(emitError, type, "quantization", /*needFloat=*/true)))
    return failure();
  if (getGranularity() == QuantGranularity::Channel)
    return MatrixViewAttr::getMatrixShape(getView(), type, emitError);
  return success();
}

int64_t QuantAttr::getNumScales(RankedTensorType type) const {
  switch (getGranularity()) {
  case QuantGranularity::Tensor:
    return 1;
  case QuantGranularity::Channel:
    return MatrixViewAttr::getMatrixShape(getView(), type, nullptr)->second;
  case QuantGranularity::Block:
    return llvm::divideCeil(type.getNumElements(), getBlockSize());
  }
  llvm_unreachable("unknown granularity");
}

SmallVector<Type> QuantAttr::getCodeTypes(RankedTensorType type) const {
  MLIRContext *ctx = type.getContext();
  int64_t packedBytes = llvm::divideCeil(type.getNumElements() * getBits(), 8);
  auto scales = RankedTensorType::get({getNumScales(type)}, Float32Type::get(ctx));
  SmallVector<Type> codes = {RankedTensorType::get({packedBytes}, IntegerType::get(ctx, 8)), scales};
  if (!isSymmetric())
    codes.push_back(scales);
  return codes;
}

bool QuantAttr::isSummable() const { return false; }

//===----------------------------------------------------------------------===//
// TahQuantAttr
//===----------------------------------------------------------------------===//

LogicalResult TahQuantAttr::verify(EmitErrorFn emitError, int64_t tileSize, int64_t lowBits, int64_t highBits,
                                   FloatAttr highRatio) {
  // (C1)
  if (tileSize != 8 && tileSize != 16 && tileSize != 32 && tileSize != 64)
    return emitError() << "tahquant tile_size must be 8, 16, 32 or 64, got " << tileSize;
  // (C2)
  if (lowBits < 1 || lowBits > highBits || highBits > 8)
    return emitError() << "tahquant needs 1 <= low_bits <= high_bits <= 8, got low_bits = " << lowBits
                       << ", high_bits = " << highBits;
  // (C3)
  if (highRatio) {
    double r = highRatio.getValueAsDouble();
    if (!(r >= 0.0 && r <= 1.0))
      return emitError() << "tahquant high_ratio must be in [0, 1], got " << r;
  }
  return success();
}

LogicalResult TahQuantAttr::verifyForType(EmitErrorFn emitError, RankedTensorType type) const {
  // (C4)
  if (failed(verifyCodecInput(emitError, type, "tahquant", /*needFloat=*/true)))
    return failure();
  if (type.getRank() == 0 || type.getShape().back() % getTileSize() != 0)
    return emitError() << "tahquant needs the last dimension to be a multiple of tile_size = " << getTileSize()
                       << ", got " << type;
  return success();
}

int64_t TahQuantAttr::getNumTiles(RankedTensorType type) const { return type.getNumElements() / getTileSize(); }

int64_t TahQuantAttr::getHighTilesFor(int64_t numTiles) const {
  return std::min<int64_t>(numTiles, std::llround(getHighRatioValue() * static_cast<double>(numTiles)));
}

int64_t TahQuantAttr::getPackedBytes(RankedTensorType type) const {
  const int64_t tiles = getNumTiles(type), high = getHighTilesFor(tiles);
  return (high * getHighBits() + (tiles - high) * getLowBits()) * getTileSize() / 8;
}

SmallVector<Type> TahQuantAttr::getCodeTypes(RankedTensorType type) const {
  MLIRContext *ctx = type.getContext();
  auto i8 = IntegerType::get(ctx, 8);
  const int64_t tiles = getNumTiles(type);
  auto perTile = RankedTensorType::get({tiles}, Float32Type::get(ctx));
  return {RankedTensorType::get({getPackedBytes(type)}, i8), perTile, perTile, RankedTensorType::get({tiles}, i8)};
}

bool TahQuantAttr::isSummable() const { return false; }

//===----------------------------------------------------------------------===//
// CastAttr
//===----------------------------------------------------------------------===//

LogicalResult CastAttr::verify(EmitErrorFn emitError, Type type) {
  // (C1)
  if (!type.isF16() && !type.isBF16())
    return emitError() << "cast codec target must be f16 or bf16, got " << type;
  return success();
}

LogicalResult CastAttr::verifyForType(EmitErrorFn emitError, RankedTensorType type) const {
  // (C2)
  if (failed(verifyCodecInput(emitError, type, "cast", /*needFloat=*/true)))
    return failure();
  // (C3) a 16-bit input: the codes would be as large as the input (a bf16 link's message already is 16-bit).
  if (isHalfFloat(type.getElementType()))
    return emitError() << "cast codec " << getType() << " on the 16-bit input " << type
                       << " saves no bytes: a bf16 or f16 tensor travels uncompressed instead";
  return success();
}

SmallVector<Type> CastAttr::getCodeTypes(RankedTensorType type) const { return {type.clone(getType())}; }

bool CastAttr::isSummable() const { return true; }

//===----------------------------------------------------------------------===//
// LinearAEAttr
//===----------------------------------------------------------------------===//

LogicalResult LinearAEAttr::verify(EmitErrorFn emitError, int64_t dim, MatrixViewAttr view) {
  // (C1)
  if (dim < 1)
    return emitError() << "linear autoencoder dim must be >= 1, got " << dim;
  return success();
}

LogicalResult LinearAEAttr::verifyForType(EmitErrorFn emitError, RankedTensorType type) const {
  if (failed(verifyCodecInput(emitError, type, "linear autoencoder", /*needFloat=*/true)))
    return failure();
  // (C3) the encoder and decoder are fp32 model parameters (--ptrain-insert-linear-ae).
  if (isHalfFloat(type.getElementType()))
    return emitError() << "linear autoencoder codes f32 tensors (its weights are fp32 model parameters), got "
                       << type;
  auto nm = MatrixViewAttr::getMatrixShape(getView(), type, emitError);
  if (failed(nm))
    return failure();
  // (C2)
  if (getDim() > nm->second)
    return emitError() << "linear autoencoder dim " << getDim() << " exceeds m = " << nm->second
                       << " of the matrix view of " << type;
  return success();
}

SmallVector<Type> LinearAEAttr::getCodeTypes(RankedTensorType type) const {
  int64_t n = MatrixViewAttr::getMatrixShape(getView(), type, nullptr)->first;
  return {RankedTensorType::get({n, getDim()}, type.getElementType())};
}

SmallVector<Type> LinearAEAttr::getEncoderParamTypes(RankedTensorType type) const {
  int64_t m = MatrixViewAttr::getMatrixShape(getView(), type, nullptr)->second;
  return {RankedTensorType::get({m, getDim()}, type.getElementType())};
}

SmallVector<Type> LinearAEAttr::getDecoderParamTypes(RankedTensorType type) const {
  int64_t m = MatrixViewAttr::getMatrixShape(getView(), type, nullptr)->second;
  return {RankedTensorType::get({getDim(), m}, type.getElementType())};
}

bool LinearAEAttr::isSummable() const { return true; }
