//===- EmitCudaCodecs.h - Codec ops in the CUDA code generator --*- C++ -*-===//
//
// --emit-cuda of ptrain.compress, ptrain.decompress and
// ptrain.compressed_all_reduce_start (docs/CodegenCuda.md, "Codecs"): per
// op, the codec kernels of libptrain_runtime_cuda
// (lib/Runtime/cuda/{PowerSGD,Quant,Sparse,Cast}.cu) with fused error
// feedback, on device buffers and the step's stream, and its compressed
// all-reduce over NCCL (lib/Runtime/cuda/CompressedAllReduce.cu). The kernel and its
// arguments are the CPU target's (lib/Target/Common/CodecKernels.h); the codec
// states (residuals, warm-start Q, rand-k counters) are ordinary states of the
// device block, so init, checkpoints and the stage tables cover them. The
// codes travel over the pipeline's NCCL sends and receives like any buffer.
// Codec telemetry shares --emit-cpp's site table and entry points.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_EMITCUDACODECS_H
#define PTRAIN_TARGET_CUDA_EMITCUDACODECS_H

#include "Common/CodecKernels.h"
#include "Common/CodecTelemetry.h"
#include "CudaCallTable.h"

#include "mlir/Support/LogicalResult.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include <functional>
#include <string>

namespace mlir::ptrain::cuda {

/// What the codec emitters need from the function being emitted.
struct CudaCodecWriter {
  /// The device pointer variable of a value.
  std::function<std::string(Value)> ptr;
  /// One runtime call, its status checked.
  std::function<LogicalResult(CudaCall, ArrayRef<std::string>)> call;
  /// A line of C++ in the current op's block (without indentation or newline).
  std::function<void(const std::string &)> line;
};

/// Fails, at the op, for what the CUDA target cannot code: everything checkCodecKernel refuses (the linear
/// autoencoder's codec, a reordering matrix view, params). Called before any code is written.
LogicalResult checkCudaCodecOp(Operation *op);

/// One codec kernel's call (CodecKernels.h) on the device: ptrain_cuda_<codec>_encode_f32 / _decode_f32; rand-k's
/// counter (a host pointer for the runtime) goes through a host copy. The codec ops themselves (the new states'
/// copies, the telemetry record, the compressed all-reduce's codec) are both targets' (Common/CodecOps.cpp).
LogicalResult emitCudaCodecKernel(target::CodecKernelCall k, const CudaCodecWriter &w);

/// The codec telemetry of --emit-cpp (Common/CodecTelemetry.h: the same site table, modes, fields and
/// entry points) on the device: the record helper measures with ptrain_cuda_codec_metrics_f32 on the device
/// buffers and keeps each site's previous input in device memory, allocated at the site's first compression with
/// telemetry on (docs/CodegenCuda.md, "Codec telemetry"). Nothing for a module without sites.
void emitCudaTelemetryState(const CodecSites &sites, llvm::raw_ostream &s);

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_EMITCUDACODECS_H
