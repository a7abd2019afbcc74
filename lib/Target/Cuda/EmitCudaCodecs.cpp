//===- EmitCudaCodecs.cpp - Codec ops in the CUDA code generator ----------===//
//
// The CUDA calls of the codec ops of docs/CodegenCuda.md's codec table (the
// ops are written for both targets by Common/CodecOps.cpp; this file maps
// their codec kernels to the CUDA calls and writes the telemetry's state):
//
//   op                  codec     CUDA runtime call(s)
//   ptrain.compress     powersgd  ptrain_cuda_powersgd_encode_f32 (cuBLAS)
//                       topk      ptrain_cuda_topk_encode_f32
//                       randk     ptrain_cuda_copy_to_host (counter),
//                                 ptrain_cuda_randk_encode_f32,
//                                 ptrain_cuda_copy_to_device (counter)
//                       quant     ptrain_cuda_quant_encode_f32
//                       cast      ptrain_cuda_cast_encode_f32
//   ptrain.decompress   each      ptrain_cuda_<codec>_decode_f32
//   ptrain.compressed_  each      ptrain_nccl_compressed_all_reduce (a static
//     all_reduce_start            ptrain_codec_t; its ptrain.wait is
//                                 ptrain_nccl_wait of the communicator)
//
// each preceded by ptrain_cuda_copy_bytes of every old state into its new
// state (SSA in the IR, in place in the runtime). The arguments are
// lib/Target/Common/CodecKernels.h's, shared with --emit-cpp. A compressed
// all-reduce enqueues all its phases on the step's stream, so its new states
// are complete in stream order: the state writes right after the start (the
// IR's order) need no deferral to the wait, unlike on the CPU.
// After an encode at a codec site, the telemetry record of
// Common/CodecTelemetry.h (ptrain_cuda_codec_metrics_f32 on the device
// buffers).
//
//===----------------------------------------------------------------------===//

#include "EmitCudaCodecs.h"

#include "Common/CodecKernels.h"
#include "Common/CppTypes.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;
using namespace mlir::ptrain::cuda;

namespace {

/// The CUDA runtime's call of a codec kernel.
CudaCall cudaCall(CodecKernel kernel) {
  switch (kernel) {
  case CodecKernel::PowerSGDEncode:
    return CudaCall::ptrain_cuda_powersgd_encode_f32;
  case CodecKernel::PowerSGDDecode:
    return CudaCall::ptrain_cuda_powersgd_decode_f32;
  case CodecKernel::TopKEncode:
    return CudaCall::ptrain_cuda_topk_encode_f32;
  case CodecKernel::TopKDecode:
    return CudaCall::ptrain_cuda_topk_decode_f32;
  case CodecKernel::RandKEncode:
    return CudaCall::ptrain_cuda_randk_encode_f32;
  case CodecKernel::RandKDecode:
    return CudaCall::ptrain_cuda_randk_decode_f32;
  case CodecKernel::QuantEncode:
    return CudaCall::ptrain_cuda_quant_encode_f32;
  case CodecKernel::QuantDecode:
    return CudaCall::ptrain_cuda_quant_decode_f32;
  case CodecKernel::TahQuantEncode:
    return CudaCall::ptrain_cuda_tahquant_encode_f32;
  case CodecKernel::TahQuantDecode:
    return CudaCall::ptrain_cuda_tahquant_decode_f32;
  case CodecKernel::CastEncode:
    return CudaCall::ptrain_cuda_cast_encode_f32;
  case CodecKernel::CastDecode:
    return CudaCall::ptrain_cuda_cast_decode_f32;
  }
  return CudaCall::ptrain_cuda_cast_decode_f32;
}

} // namespace

LogicalResult mlir::ptrain::cuda::checkCudaCodecOp(Operation *op) {
  return checkCodecKernel(op, "--emit-cuda", "CUDA code generator");
}

/// rand-k's counter is a host pointer for the runtime (it draws the positions on the host, docs/Runtime.md): the
/// device state is read into a host variable (ptrain_cuda_copy_to_host waits for the stream), the kernel advances
/// it, and it is copied back (a pageable host-to-device copy is staged before the call returns).
LogicalResult mlir::ptrain::cuda::emitCudaCodecKernel(CodecKernelCall k, const CudaCodecWriter &w) {
  if (k.counterArg < 0)
    return w.call(cudaCall(k.kernel), k.args);
  const std::string device = k.args[k.counterArg];
  w.line("int64_t counter = 0; // the rand-k call counter, on the host for the runtime's position draw");
  if (failed(w.call(CudaCall::ptrain_cuda_copy_to_host, {device, "8", "&counter"})))
    return failure();
  k.args[k.counterArg] = "&counter";
  if (failed(w.call(cudaCall(k.kernel), k.args)))
    return failure();
  return w.call(CudaCall::ptrain_cuda_copy_to_device, {"&counter", "8", device});
}

void mlir::ptrain::cuda::emitCudaTelemetryState(const CodecSites &sites, llvm::raw_ostream &s) {
  emitTelemetryState(sites,
                     {getCudaCallInfo(CudaCall::ptrain_cuda_codec_metrics_f32).name,
                      getCudaCallInfo(CudaCall::ptrain_cuda_malloc).name},
                     s);
}
