//===- CodecOps.cpp - The codec ops of both code generators -------------===//
//
// StepFunction::emitCodecOp (StepFunction.h): ptrain.compress, decompress and
// compressed_all_reduce_start on either target. Each op's new states are
// first copies of its old ones (SSA in the IR, updated in place by the
// runtime: the residual with error feedback, PowerSGD's warm-start Q, rand-k's
// counter); then the codec kernel of CodecKernels.h with its arguments
// (codecCall: ptrain_<codec>_encode_f32 on the CPU, ptrain_cuda_... on CUDA,
// where rand-k's counter goes through a host variable), or the compressed
// all-reduce of a static ptrain_codec_t (startCompressedAllReduce: an MPI
// request whose wait completes the states on the CPU, NCCL on the stream on
// CUDA); after an encode, the site's telemetry record (CodecTelemetry.h).
// The codecs are Vogels et al. 2019 (PowerSGD), Stich et al. 2018 (top-k,
// rand-k with error feedback) and Bian et al. 2024 (quantization, TAH-Quant);
// see docs/Compression.md.
//
//===----------------------------------------------------------------------===//

#include "Common/StepFunction.h"

#include "Common/CodecKernels.h"
#include "Common/CommGroups.h"
#include "Common/CppTypes.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

LogicalResult StepFunction::emitCodecOp(Operation *op) {
  auto ptr = [&](Value v) { return valuePtr(v); };
  // new_state[i] = state[i]: the kernels then update the new states in place.
  auto copyStates = [&](ValueRange state, ValueRange newState) -> LogicalResult {
    for (auto [old, fresh] : llvm::zip(state, newState))
      if (failed(callKernel(Kernel::copy_bytes, {ptr(old), std::to_string(bytesOf(old)), ptr(fresh)})))
        return failure();
    return success();
  };
  if (auto c = dyn_cast<CompressOp>(op)) {
    if (failed(copyStates(c.getState(), c.getNewState())))
      return failure();
    std::optional<LogicalResult> generated = generatedEncoder(c);
    if (generated ? failed(*generated) : failed(codecCall(compressKernelCall(c, ptr))))
      return failure();
    compressTelemetry(c);
    return success();
  }
  if (auto d = dyn_cast<DecompressOp>(op)) {
    if (failed(copyStates(d.getState(), d.getNewState())))
      return failure();
    return codecCall(decompressKernelCall(d, ptr));
  }
  auto c = cast<CompressedAllReduceStartOp>(op);
  FailureOr<std::string> comm = communicators().lookup(c, c.getGridAttr().getValue(), c.getGridAxes());
  if (failed(comm))
    return failure();
  FailureOr<CompressedAllReduceArgs> a = compressedAllReduceArgs(c, ptr, flag());
  if (failed(a))
    return failure();
  blockLine("static const ptrain_codec_t codec = " + a->codec + ";");
  if (failed(copyStates(c.getState(), c.getNewState())))
    return failure();
  return startCompressedAllReduce(c, *comm, *a);
}
