//===- CodecKernels.cpp - Codec ops as runtime kernel calls, any target ---===//
//
// Per codec, the kernel and the argument list of CodecKernels.h:
//
//   codec     ptrain.compress                          ptrain.decompress
//   powersgd  (g, residual, q, 1, n, m, rank, 0, P, Q)  (P, Q, 1, n, m, rank, out)
//   topk      (g, residual, numel, k, values, indices)  (values, indices, k, numel, out)
//   randk     (g, residual, numel, k, seed, counter,    (values, numel, k, seed, counter, out)
//              values)
//   quant     (g, residual, n, m, bits, granularity,    (packed, scales, zero points, n, m, bits,
//              block, symmetric, packed, scales, zp)     granularity, block, symmetric, out)
//   tahquant  (g, residual, numel, tile, low bits,      (packed, scales, zero points, flags, numel,
//              high bits, high tiles, packed, scales,    tile, low bits, high bits, high tiles, out)
//              zero points, flags)
//   cast      (g, residual, numel, dtype, code)         (code, numel, dtype, out)
//
// A compressed all-reduce takes a ptrain_codec_t {kind, bits, granularity,
// symmetric, warm_start, cast_dtype, batch, rows, cols, rank, k, block_size,
// seed, low_bits, tile_size, value_dtype} of the same parameters
// (tahquant: bits the high width, k the high tiles) (batch 1, the matrix
// view's rows and cols; value_dtype F32 unless the op's value_type makes
// top-k's and rand-k's values 16-bit: descriptor version 2), then (input,
// residual, state, ..., reduction) on both runtimes.
//
// PowerSGD draws its initial Q from seed 0, as the interpreter does
// (lib/Interpreter/Codecs.cpp), so compiled and interpreted plans encode
// alike; a symmetric quantization has no zero points (nullptr).
//
//===----------------------------------------------------------------------===//

#include "Common/CodecKernels.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

/// The codec and the tensor type it codes.
std::pair<CodecAttrInterface, RankedTensorType> codecOf(Operation *op) {
  if (auto c = dyn_cast<CompressOp>(op))
    return {c.getCodec(), cast<RankedTensorType>(c.getInput().getType())};
  if (auto d = dyn_cast<DecompressOp>(op))
    return {d.getCodec(), cast<RankedTensorType>(d.getResult().getType())};
  auto a = cast<CompressedAllReduceStartOp>(op);
  return {a.getCodec(), cast<RankedTensorType>(a.getInput().getType())};
}

MatrixViewAttr viewOf(CodecAttrInterface codec) {
  if (auto p = dyn_cast<PowerSGDAttr>(codec))
    return p.getView();
  if (auto q = dyn_cast<QuantAttr>(codec))
    return q.getView();
  return MatrixViewAttr();
}

bool isMemoryOrderView(MatrixViewAttr view) {
  if (!view)
    return true;
  int64_t d = 0;
  for (int64_t r : view.getRows())
    if (r != d++)
      return false;
  for (int64_t c : view.getCols())
    if (c != d++)
      return false;
  return true;
}

} // namespace

std::pair<int64_t, int64_t> mlir::ptrain::target::codecMatrix(CodecAttrInterface codec, RankedTensorType type) {
  return *MatrixViewAttr::getMatrixShape(viewOf(codec), type, nullptr);
}

const char *mlir::ptrain::target::castDtypeEnum(CastAttr c) {
  return c.getType().isF16() ? "PTRAIN_DTYPE_F16" : "PTRAIN_DTYPE_BF16";
}

const char *mlir::ptrain::target::quantGranularityEnum(QuantAttr q) {
  switch (q.getGranularity()) {
  case QuantGranularity::Tensor:
    return "PTRAIN_QUANT_TENSOR";
  case QuantGranularity::Channel:
    return "PTRAIN_QUANT_CHANNEL";
  case QuantGranularity::Block:
    return "PTRAIN_QUANT_BLOCK";
  }
  return "PTRAIN_QUANT_TENSOR";
}

std::string mlir::ptrain::target::seedLiteral(int64_t seed) { return std::to_string(static_cast<uint64_t>(seed)) + "ULL"; }

LogicalResult mlir::ptrain::target::checkCodecKernel(Operation *op, StringRef flag, StringRef generator) {
  auto [codec, type] = codecOf(op);
  if (isa<LinearAEAttr>(codec))
    return op->emitError(flag) << ": the codec " << codec << " has no runtime kernel; the " << generator
                               << " emits #ptrain.powersgd, #ptrain.topk, #ptrain.randk, #ptrain.quant, #ptrain.tahquant and "
                                  "#ptrain.cast";
  if (!isa<PowerSGDAttr, TopKAttr, RandKAttr, QuantAttr, TahQuantAttr, CastAttr>(codec))
    return op->emitError(flag) << ": the codec " << codec << " is not supported by the " << generator;
  if (!type.getElementType().isF32())
    return op->emitError(flag) << ": the runtime's codec kernels code f32 tensors, not " << type;
  if (!isMemoryOrderView(viewOf(codec)))
    return op->emitError(flag) << ": the matrix view " << viewOf(codec) << " of " << type
                               << " is not a split of the dimensions in order (rows leading, columns trailing); the "
                                  "runtime's kernels read the tensor as a row-major n x m matrix";
  auto params = isa<CompressOp>(op)     ? cast<CompressOp>(op).getParams()
                : isa<DecompressOp>(op) ? cast<DecompressOp>(op).getParams()
                                        : cast<CompressedAllReduceStartOp>(op).getParams();
  if (!params.empty())
    return op->emitError(flag) << ": codec parameters (params) are not supported";
  return success();
}

CodecKernelCall mlir::ptrain::target::compressKernelCall(CompressOp op, llvm::function_ref<std::string(Value)> ptr) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  CodecAttrInterface codec = op.getCodec();
  const std::string g = ptr(op.getInput()), numel = str(type.getNumElements());
  size_t next = 0;
  const std::string residual = op.getErrorFeedback() ? ptr(op.getNewState()[next++]) : "nullptr";
  auto code = [&](unsigned i) { return ptr(op.getCodes()[i]); };
  const auto [n, m] = codecMatrix(codec, type);
  return llvm::TypeSwitch<Attribute, CodecKernelCall>(codec)
      .Case<PowerSGDAttr>([&](PowerSGDAttr p) {
        std::string q = p.isWarmStart() ? ptr(op.getNewState()[next]) : "nullptr";
        return CodecKernelCall{CodecKernel::PowerSGDEncode,
                               {g, residual, q, "1", str(n), str(m), str(p.getRank()), "0", code(0), code(1)}};
      })
      .Case<TopKAttr>([&](TopKAttr t) {
        return CodecKernelCall{CodecKernel::TopKEncode,
                               {g, residual, numel, str(t.getKFor(type.getNumElements())), code(0), code(1)}};
      })
      .Case<RandKAttr>([&](RandKAttr r) {
        return CodecKernelCall{CodecKernel::RandKEncode,
                               {g, residual, numel, str(r.getKFor(type.getNumElements())), seedLiteral(r.getSeed()),
                                ptr(op.getNewState()[next]), code(0)},
                               5};
      })
      .Case<QuantAttr>([&](QuantAttr q) {
        return CodecKernelCall{CodecKernel::QuantEncode,
                               {g, residual, str(n), str(m), str(q.getBits()), quantGranularityEnum(q),
                                str(q.getBlockSize()), q.isSymmetric() ? "1" : "0", code(0), code(1),
                                q.isSymmetric() ? "nullptr" : code(2)}};
      })
      .Case<TahQuantAttr>([&](TahQuantAttr q) {
        return CodecKernelCall{CodecKernel::TahQuantEncode,
                               {g, residual, numel, str(q.getTileSize()), str(q.getLowBits()), str(q.getHighBits()),
                                str(q.getHighTilesFor(q.getNumTiles(type))), code(0), code(1), code(2), code(3)}};
      })
      .Default([&](Attribute) {
        // CastAttr: checkCodecKernel admits nothing else.
        return CodecKernelCall{CodecKernel::CastEncode,
                               {g, residual, numel, castDtypeEnum(cast<CastAttr>(codec)), code(0)}};
      });
}

CodecKernelCall mlir::ptrain::target::decompressKernelCall(DecompressOp op, llvm::function_ref<std::string(Value)> ptr) {
  auto type = cast<RankedTensorType>(op.getResult().getType());
  CodecAttrInterface codec = op.getCodec();
  const std::string out = ptr(op.getResult()), numel = str(type.getNumElements());
  auto code = [&](unsigned i) { return ptr(op.getCodes()[i]); };
  const auto [n, m] = codecMatrix(codec, type);
  return llvm::TypeSwitch<Attribute, CodecKernelCall>(codec)
      .Case<PowerSGDAttr>([&](PowerSGDAttr p) {
        return CodecKernelCall{CodecKernel::PowerSGDDecode,
                               {code(0), code(1), "1", str(n), str(m), str(p.getRank()), out}};
      })
      .Case<TopKAttr>([&](TopKAttr t) {
        return CodecKernelCall{CodecKernel::TopKDecode,
                               {code(0), code(1), str(t.getKFor(type.getNumElements())), numel, out}};
      })
      .Case<RandKAttr>([&](RandKAttr r) {
        return CodecKernelCall{CodecKernel::RandKDecode,
                               {code(0), numel, str(r.getKFor(type.getNumElements())), seedLiteral(r.getSeed()),
                                ptr(op.getNewState()[0]), out},
                               4};
      })
      .Case<QuantAttr>([&](QuantAttr q) {
        return CodecKernelCall{CodecKernel::QuantDecode,
                               {code(0), code(1), q.isSymmetric() ? "nullptr" : code(2), str(n), str(m),
                                str(q.getBits()), quantGranularityEnum(q), str(q.getBlockSize()),
                                q.isSymmetric() ? "1" : "0", out}};
      })
      .Case<TahQuantAttr>([&](TahQuantAttr q) {
        return CodecKernelCall{CodecKernel::TahQuantDecode,
                               {code(0), code(1), code(2), code(3), numel, str(q.getTileSize()), str(q.getLowBits()),
                                str(q.getHighBits()), str(q.getHighTilesFor(q.getNumTiles(type))), out}};
      })
      .Default([&](Attribute) {
        return CodecKernelCall{CodecKernel::CastDecode, {code(0), numel, castDtypeEnum(cast<CastAttr>(codec)), out}};
      });
}

std::string mlir::ptrain::target::codecInitializer(CodecAttrInterface codec, RankedTensorType type,
                                                   Type valueType) {
  const auto [n, m] = codecMatrix(codec, type);
  std::string kind, bits = "0", gran = "0", sym = "0", warm = "0", dtype = "PTRAIN_DTYPE_F32", rank = "0", k = "0",
                    block = "0", seed = "0ULL", lowBits = "0", tile = "0";
  llvm::TypeSwitch<Attribute>(codec)
      .Case<PowerSGDAttr>([&](PowerSGDAttr p) {
        kind = "PTRAIN_CODEC_POWERSGD";
        warm = p.isWarmStart() ? "1" : "0";
        rank = str(p.getRank());
      })
      .Case<TopKAttr>([&](TopKAttr t) {
        kind = "PTRAIN_CODEC_TOPK";
        k = str(t.getKFor(type.getNumElements()));
      })
      .Case<RandKAttr>([&](RandKAttr r) {
        kind = "PTRAIN_CODEC_RANDK";
        k = str(r.getKFor(type.getNumElements()));
        seed = seedLiteral(r.getSeed());
      })
      .Case<QuantAttr>([&](QuantAttr q) {
        kind = "PTRAIN_CODEC_QUANT";
        bits = str(q.getBits());
        gran = quantGranularityEnum(q);
        sym = q.isSymmetric() ? "1" : "0";
        block = str(q.getBlockSize());
      })
      .Case<TahQuantAttr>([&](TahQuantAttr q) {
        kind = "PTRAIN_CODEC_TAHQUANT";
        bits = str(q.getHighBits());
        k = str(q.getHighTilesFor(q.getNumTiles(type)));
        lowBits = str(q.getLowBits());
        tile = str(q.getTileSize());
      })
      .Case<CastAttr>([&](CastAttr c) {
        kind = "PTRAIN_CODEC_CAST";
        dtype = castDtypeEnum(c);
      });
  if (kind.empty())
    return "";
  // Every field of descriptor version 2, value_dtype last (a shorter initializer would mean the same, but
  // -Wmissing-field-initializers, part of -Wextra, warns about it).
  std::string values = !valueType         ? ", PTRAIN_DTYPE_F32"
                       : valueType.isF16() ? ", PTRAIN_DTYPE_F16"
                                           : ", PTRAIN_DTYPE_BF16";
  return "{" + kind + ", " + bits + ", " + gran + ", " + sym + ", " + warm + ", " + dtype + ", 1, " + str(n) + ", " +
         str(m) + ", " + rank + ", " + k + ", " + block + ", " + seed + ", " + lowBits + ", " + tile + values + "}";
}

FailureOr<CompressedAllReduceArgs>
mlir::ptrain::target::compressedAllReduceArgs(CompressedAllReduceStartOp op, llvm::function_ref<std::string(Value)> ptr,
                                           StringRef flag) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  CodecAttrInterface codec = op.getCodec();
  std::string initializer = codecInitializer(codec, type, op.getValueType().value_or(Type()));
  if (initializer.empty())
    return op.emitError(flag) << ": the codec " << codec << " has no compressed all-reduce";
  if (isa<TahQuantAttr>(codec) && flag == "--emit-cuda")
    return op.emitError(flag) << ": the codec " << codec
                              << " has no NCCL compressed all-reduce (a pipeline-send codec on CUDA; the CPU runtime "
                                 "gathers its codes)";
  if (op.getReduction() != ReductionKind::Avg && op.getReduction() != ReductionKind::Sum)
    return op.emitError(flag) << ": a compressed all-reduce sums or averages";
  CompressedAllReduceArgs a;
  a.codec = initializer;
  size_t next = 0;
  a.input = ptr(op.getInput());
  a.residual = op.getErrorFeedback() ? ptr(op.getNewState()[next++]) : "nullptr";
  a.state = next < op.getNewState().size() ? ptr(op.getNewState()[next]) : "nullptr";
  a.reduction = op.getReduction() == ReductionKind::Avg ? "PTRAIN_REDUCE_AVG" : "PTRAIN_REDUCE_SUM";
  return a;
}
