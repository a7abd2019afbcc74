//===- EmitCodecs.cpp - Codec ops in the CPU code generator ---------------===//
//
// Per codec op, the runtime calls of docs/CodegenCpu.md's codec table:
//
//   op                               codec     runtime call(s)
//   ptrain.compress                  powersgd  ptrain_powersgd_encode_f32
//                                    topk      ptrain_topk_encode_f32
//                                    randk     ptrain_randk_encode_f32
//                                    quant     ptrain_quant_encode_f32
//                                    cast      ptrain_cast_encode_f32
//   ptrain.decompress                each      ptrain_<codec>_decode_f32
//   ptrain.compressed_all_reduce_start each    ptrain_compressed_all_reduce_start
//
// The codec attribute's parameters become literal arguments (or a static
// ptrain_codec_t); the encoders fuse error feedback, so the op's residual is
// passed as the kernel's residual. State is SSA in the IR and in place in the
// runtime: each new state is first a copy of its old state, then the kernel
// updates it. PowerSGD draws its initial Q from seed 0, as the interpreter
// does (lib/Interpreter/Codecs.cpp), so compiled and interpreted plans encode
// alike.
//
//===----------------------------------------------------------------------===//

#include "EmitCodecs.h"

#include "CppTypes.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

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

/// (n, m) of the codec's matrix view of `type`. The kernels read the tensor's memory as n x m row-major, which is
/// the view only when the rows are the leading dimensions in order and the columns the rest (checkCodecOp).
std::pair<int64_t, int64_t> matrixOf(CodecAttrInterface codec, RankedTensorType type) {
  return *MatrixViewAttr::getMatrixShape(viewOf(codec), type, nullptr);
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

const char *castDtype(CastAttr c) { return c.getType().isF16() ? "PTRAIN_DTYPE_F16" : "PTRAIN_DTYPE_BF16"; }

const char *granularity(QuantAttr q) {
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

std::string seedLiteral(int64_t seed) { return std::to_string(static_cast<uint64_t>(seed)) + "ULL"; }

/// new_state[i] = state[i]: the kernels then update the new states in place.
LogicalResult copyStates(ValueRange state, ValueRange newState, CallWriter &w) {
  for (auto [old, fresh] : llvm::zip(state, newState))
    if (failed(w.call(RuntimeCall::ptrain_copy_bytes, {w.ptr(old), str(bytesOf(old)), w.ptr(fresh)})))
      return failure();
  return success();
}

} // namespace

LogicalResult mlir::ptrain::cpp::checkCodecOp(Operation *op) {
  auto [codec, type] = codecOf(op);
  if (isa<LinearAEAttr>(codec))
    return op->emitError("--emit-cpp: the codec ")
           << codec << " has no runtime kernel; the CPU code generator emits #ptrain.powersgd, #ptrain.topk, "
           << "#ptrain.randk, #ptrain.quant and #ptrain.cast";
  if (!isa<PowerSGDAttr, TopKAttr, RandKAttr, QuantAttr, CastAttr>(codec))
    return op->emitError("--emit-cpp: the codec ") << codec << " is not supported by the CPU code generator";
  if (!type.getElementType().isF32())
    return op->emitError("--emit-cpp: the runtime's codec kernels code f32 tensors, not ") << type;
  if (!isMemoryOrderView(viewOf(codec)))
    return op->emitError("--emit-cpp: the matrix view ")
           << viewOf(codec) << " of " << type
           << " is not a split of the dimensions in order (rows leading, columns trailing); the runtime's kernels "
              "read the tensor as a row-major n x m matrix";
  auto params = isa<CompressOp>(op)     ? cast<CompressOp>(op).getParams()
                : isa<DecompressOp>(op) ? cast<DecompressOp>(op).getParams()
                                        : cast<CompressedAllReduceStartOp>(op).getParams();
  if (!params.empty())
    return op->emitError("--emit-cpp: codec parameters (params) are not supported");
  return success();
}

LogicalResult mlir::ptrain::cpp::emitCompress(CompressOp op, CallWriter &w) {
  if (failed(copyStates(op.getState(), op.getNewState(), w)))
    return failure();
  auto type = cast<RankedTensorType>(op.getInput().getType());
  CodecAttrInterface codec = op.getCodec();
  const std::string g = w.ptr(op.getInput()), numel = str(type.getNumElements());
  size_t next = 0;
  const std::string residual = op.getErrorFeedback() ? w.ptr(op.getNewState()[next++]) : "nullptr";
  auto code = [&](unsigned i) { return w.ptr(op.getCodes()[i]); };
  const auto [nView, mView] = matrixOf(codec, type);
  const int64_t n = nView, m = mView;
  return llvm::TypeSwitch<Attribute, LogicalResult>(codec)
      .Case<PowerSGDAttr>([&](PowerSGDAttr p) {
        std::string q = p.isWarmStart() ? w.ptr(op.getNewState()[next]) : "nullptr";
        return w.call(RuntimeCall::ptrain_powersgd_encode_f32,
                      {g, residual, q, "1", str(n), str(m), str(p.getRank()), "0", code(0), code(1)});
      })
      .Case<TopKAttr>([&](TopKAttr t) {
        return w.call(RuntimeCall::ptrain_topk_encode_f32,
                      {g, residual, numel, str(t.getKFor(type.getNumElements())), code(0), code(1)});
      })
      .Case<RandKAttr>([&](RandKAttr r) {
        return w.call(RuntimeCall::ptrain_randk_encode_f32,
                      {g, residual, numel, str(r.getKFor(type.getNumElements())), seedLiteral(r.getSeed()),
                       w.ptr(op.getNewState()[next]), code(0)});
      })
      .Case<QuantAttr>([&](QuantAttr q) {
        return w.call(RuntimeCall::ptrain_quant_encode_f32,
                      {g, residual, str(n), str(m), str(q.getBits()), granularity(q), str(q.getBlockSize()),
                       q.isSymmetric() ? "1" : "0", code(0), code(1), q.isSymmetric() ? "nullptr" : code(2)});
      })
      .Case<CastAttr>([&](CastAttr c) {
        return w.call(RuntimeCall::ptrain_cast_encode_f32, {g, residual, numel, castDtype(c), code(0)});
      })
      .Default([&](Attribute) { return checkCodecOp(op); });
}

LogicalResult mlir::ptrain::cpp::emitDecompress(DecompressOp op, CallWriter &w) {
  if (failed(copyStates(op.getState(), op.getNewState(), w)))
    return failure();
  auto type = cast<RankedTensorType>(op.getResult().getType());
  CodecAttrInterface codec = op.getCodec();
  const std::string out = w.ptr(op.getResult()), numel = str(type.getNumElements());
  auto code = [&](unsigned i) { return w.ptr(op.getCodes()[i]); };
  const auto [nView, mView] = matrixOf(codec, type);
  const int64_t n = nView, m = mView;
  return llvm::TypeSwitch<Attribute, LogicalResult>(codec)
      .Case<PowerSGDAttr>([&](PowerSGDAttr p) {
        return w.call(RuntimeCall::ptrain_powersgd_decode_f32,
                      {code(0), code(1), "1", str(n), str(m), str(p.getRank()), out});
      })
      .Case<TopKAttr>([&](TopKAttr t) {
        return w.call(RuntimeCall::ptrain_topk_decode_f32,
                      {code(0), code(1), str(t.getKFor(type.getNumElements())), numel, out});
      })
      .Case<RandKAttr>([&](RandKAttr r) {
        return w.call(RuntimeCall::ptrain_randk_decode_f32,
                      {code(0), numel, str(r.getKFor(type.getNumElements())), seedLiteral(r.getSeed()),
                       w.ptr(op.getNewState()[0]), out});
      })
      .Case<QuantAttr>([&](QuantAttr q) {
        return w.call(RuntimeCall::ptrain_quant_decode_f32,
                      {code(0), code(1), q.isSymmetric() ? "nullptr" : code(2), str(n), str(m), str(q.getBits()),
                       granularity(q), str(q.getBlockSize()), q.isSymmetric() ? "1" : "0", out});
      })
      .Case<CastAttr>([&](CastAttr c) {
        return w.call(RuntimeCall::ptrain_cast_decode_f32, {code(0), numel, castDtype(c), out});
      })
      .Default([&](Attribute) { return checkCodecOp(op); });
}

LogicalResult mlir::ptrain::cpp::emitCompressedAllReduceStart(CompressedAllReduceStartOp op, const std::string &comm,
                                                              CallWriter &w) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  CodecAttrInterface codec = op.getCodec();
  const auto [nView, mView] = matrixOf(codec, type);
  const int64_t n = nView, m = mView;
  // ptrain_codec_t {kind, bits, granularity, symmetric, warm_start, cast_dtype, batch, rows, cols, rank, k,
  // block_size, seed}.
  std::string kind, bits = "0", gran = "0", sym = "0", warm = "0", dtype = "PTRAIN_DTYPE_F32", rank = "0", k = "0",
                    block = "0", seed = "0ULL";
  LogicalResult known = llvm::TypeSwitch<Attribute, LogicalResult>(codec)
                            .Case<PowerSGDAttr>([&](PowerSGDAttr p) {
                              kind = "PTRAIN_CODEC_POWERSGD";
                              warm = p.isWarmStart() ? "1" : "0";
                              rank = str(p.getRank());
                              return success();
                            })
                            .Case<TopKAttr>([&](TopKAttr t) {
                              kind = "PTRAIN_CODEC_TOPK";
                              k = str(t.getKFor(type.getNumElements()));
                              return success();
                            })
                            .Case<RandKAttr>([&](RandKAttr r) {
                              kind = "PTRAIN_CODEC_RANDK";
                              k = str(r.getKFor(type.getNumElements()));
                              seed = seedLiteral(r.getSeed());
                              return success();
                            })
                            .Case<QuantAttr>([&](QuantAttr q) {
                              kind = "PTRAIN_CODEC_QUANT";
                              bits = str(q.getBits());
                              gran = granularity(q);
                              sym = q.isSymmetric() ? "1" : "0";
                              block = str(q.getBlockSize());
                              return success();
                            })
                            .Case<CastAttr>([&](CastAttr c) {
                              kind = "PTRAIN_CODEC_CAST";
                              dtype = castDtype(c);
                              return success();
                            })
                            .Default([&](Attribute) { return checkCodecOp(op); });
  if (failed(known))
    return failure();
  w.line("static const ptrain_codec_t codec = {" + kind + ", " + bits + ", " + gran + ", " + sym + ", " + warm + ", " +
         dtype + ", 1, " + str(n) + ", " + str(m) + ", " + rank + ", " + k + ", " + block + ", " + seed + "};");
  if (failed(copyStates(op.getState(), op.getNewState(), w)))
    return failure();
  size_t next = 0;
  const std::string residual = op.getErrorFeedback() ? w.ptr(op.getNewState()[next++]) : "nullptr";
  const std::string state = next < op.getNewState().size() ? w.ptr(op.getNewState()[next]) : "nullptr";
  const char *reduction = op.getReduction() == ReductionKind::Avg ? "PTRAIN_REDUCE_AVG" : "PTRAIN_REDUCE_SUM";
  if (op.getReduction() != ReductionKind::Avg && op.getReduction() != ReductionKind::Sum)
    return op.emitError("--emit-cpp: a compressed all-reduce sums or averages");
  const std::string request = w.ptr(op.getRequest());
  return w.call(RuntimeCall::ptrain_compressed_all_reduce_start, {comm, "&codec", w.ptr(op.getInput()), residual, state,
                                                                  request, reduction, "&" + request + "_request"});
}
