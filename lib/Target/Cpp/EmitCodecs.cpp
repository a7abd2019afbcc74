//===- EmitCodecs.cpp - Codec ops in the CPU code generator ---------------===//
//
// The CPU's runtime calls of the codec ops of docs/CodegenCpu.md's codec table
// (the ops are written for both targets by Common/CodecOps.cpp; this file maps
// their codec kernels to the CPU's calls, cpuCodecCall, and writes ZeRO's
// compressed reduce-scatter, which only the CPU target has):
//
//   op                               codec     runtime call(s)
//   ptrain.compress                  powersgd  ptrain_powersgd_encode_f32
//                                    topk      ptrain_topk_encode_f32
//                                    randk     ptrain_randk_encode_f32
//                                    quant     ptrain_quant_encode_f32
//                                    tahquant  ptrain_tahquant_encode_f32
//                                    cast      ptrain_cast_encode_f32
//   ptrain.decompress                each      ptrain_<codec>_decode_f32
//   ptrain.compressed_all_reduce_start each    ptrain_compressed_all_reduce_start
//   ptrain.compressed_reduce_scatter_start quant ptrain_compressed_reduce_scatter_start
//
// A quantization site --ptrain-outline-codecs marked (`ptrain.codec_kernel`,
// with --emit-cpp-kernels) calls its generated encoder instead
// (docs/GeneratedKernels.md).
// The codec attribute's parameters become literal arguments (CodecKernels.h,
// shared with --emit-cuda; or a static ptrain_codec_t); the encoders fuse
// error feedback, so the op's residual is passed as the kernel's residual.
// State is SSA in the IR and in place in the runtime: each new state is first
// a copy of its old state, then the kernel updates it.
//
//===----------------------------------------------------------------------===//

#include "EmitCodecs.h"

#include "Common/CodecKernels.h"
#include "Common/CppTypes.h"

#include "ptrain/Transforms/QuantArith.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

/// new_state[i] = state[i]: the kernels then update the new states in place.
LogicalResult copyStates(ValueRange state, ValueRange newState, CallWriter &w) {
  for (auto [old, fresh] : llvm::zip(state, newState))
    if (failed(w.call(RuntimeCall::ptrain_copy_bytes, {w.ptr(old), str(bytesOf(old)), w.ptr(fresh)})))
      return failure();
  return success();
}

} // namespace

RuntimeCall mlir::ptrain::cpp::cpuCodecCall(CodecKernel kernel) {
  switch (kernel) {
  case CodecKernel::PowerSGDEncode:
    return RuntimeCall::ptrain_powersgd_encode_f32;
  case CodecKernel::PowerSGDDecode:
    return RuntimeCall::ptrain_powersgd_decode_f32;
  case CodecKernel::TopKEncode:
    return RuntimeCall::ptrain_topk_encode_f32;
  case CodecKernel::TopKDecode:
    return RuntimeCall::ptrain_topk_decode_f32;
  case CodecKernel::RandKEncode:
    return RuntimeCall::ptrain_randk_encode_f32;
  case CodecKernel::RandKDecode:
    return RuntimeCall::ptrain_randk_decode_f32;
  case CodecKernel::QuantEncode:
    return RuntimeCall::ptrain_quant_encode_f32;
  case CodecKernel::QuantDecode:
    return RuntimeCall::ptrain_quant_decode_f32;
  case CodecKernel::TahQuantEncode:
    return RuntimeCall::ptrain_tahquant_encode_f32;
  case CodecKernel::TahQuantDecode:
    return RuntimeCall::ptrain_tahquant_decode_f32;
  case CodecKernel::CastEncode:
    return RuntimeCall::ptrain_cast_encode_f32;
  case CodecKernel::CastDecode:
    return RuntimeCall::ptrain_cast_decode_f32;
  }
  return RuntimeCall::ptrain_cast_decode_f32;
}

LogicalResult mlir::ptrain::cpp::checkCodecOp(Operation *op) {
  return checkCodecKernel(op, "--emit-cpp", "CPU code generator");
}

/// A site --ptrain-outline-codecs gave a kernel (QuantArith.h): one call of it with the runtime encoder's
/// pointers (g, the residual, the codes). Its result, the first non-finite element or -1, is not an error: the
/// kernel codes that block as a non-finite block, as ptrain_quant_encode_f32 does (common/QuantScale.h).
LogicalResult mlir::ptrain::cpp::emitGeneratedEncoder(CompressOp op, SymbolRefAttr kernel, CallWriter &w) {
  std::optional<QuantKernelShape> shape = quantKernelShapeOf(op);
  if (!shape)
    return op.emitError("--emit-cpp: '") << kCodecKernelAttr << "' names " << kernel
                                         << ", but the op is no site of a generated quantization kernel";
  std::string args = w.ptr(op.getInput());
  if (shape->feedback)
    args += ", " + w.ptr(op.getNewState()[0]);
  for (Value code : op.getCodes())
    args += ", " + w.ptr(code);
  w.line("// the encoder generated for this site (--ptrain-outline-codecs; the same bits as ptrain_quant_encode_f32,");
  w.line("// a block with an inf or NaN coded as a non-finite block: its result, that element or -1, is no error)");
  w.line("static_cast<void>(" + kernel.getLeafReference().str() + "(" + args + "));");
  return success();
}

LogicalResult mlir::ptrain::cpp::emitCompressedReduceScatterStart(CompressedReduceScatterStartOp op,
                                                                  const std::string &comm, CallWriter &w) {
  auto chunk = cast<RankedTensorType>(op.getRequest().getType().getValueType());
  if (!chunk.getElementType().isF32())
    return op.emitError("--emit-cpp: the runtime's codec kernels code f32 tensors, not ") << chunk;
  w.line("static const ptrain_codec_t codec = " + target::codecInitializer(op.getCodec(), chunk) + ";");
  if (failed(copyStates(op.getState(), op.getNewState(), w)))
    return failure();
  const std::string request = w.ptr(op.getRequest());
  return w.call(RuntimeCall::ptrain_compressed_reduce_scatter_start,
                {comm, "&codec", w.ptr(op.getInput()),
                 op.getErrorFeedback() ? w.ptr(op.getNewState()[0]) : std::string("nullptr"), request,
                 op.getReduction() == ReductionKind::Avg ? "PTRAIN_REDUCE_AVG" : "PTRAIN_REDUCE_SUM",
                 "&" + request + "_request"});
}
