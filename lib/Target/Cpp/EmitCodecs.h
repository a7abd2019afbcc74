//===- EmitCodecs.h - Codec ops in the CPU code generator -------*- C++ -*-===//
//
// --emit-cpp of ptrain.compress, ptrain.decompress and
// ptrain.compressed_all_reduce_start: per op (not per policy), onto the
// runtime's codec kernels with fused error feedback and its compressed
// all-reduce (docs/CodegenCpu.md, "Codecs"). The function emitter owns the
// memory plan; these functions only write an op's calls through a CallWriter.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITCODECS_H
#define PTRAIN_TARGET_CPP_EMITCODECS_H

#include "Common/CodecKernels.h"
#include "Common/RuntimeCallTable.h"

#include "mlir/Support/LogicalResult.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include <string>

namespace mlir::ptrain::cpp {

/// What the codec emitters need from the function being emitted.
class CallWriter {
public:
  virtual ~CallWriter() = default;
  /// The C pointer variable of `v` (a request: the buffer it yields).
  virtual std::string ptr(Value v) const = 0;
  /// One runtime call, its status checked.
  virtual LogicalResult call(RuntimeCall callee, ArrayRef<std::string> args) = 0;
  /// A line of C++ in the current op's block (indented, without its newline).
  virtual void line(const std::string &code) = 0;
};

/// Fails, at the op, when the emitter has no runtime kernel for the op's codec or the op's shape (the linear
/// autoencoder; a matrix view that is not a leading/trailing split of the dimensions). Called before any code is
/// written, so the error names the op's location.
LogicalResult checkCodecOp(Operation *op);

/// The CPU runtime's call of a codec kernel (CodecKernels.h): ptrain_<codec>_encode_f32 / _decode_f32. The codec
/// ops themselves (compress, decompress, compressed all-reduce) are both targets' (Common/CodecOps.cpp).
RuntimeCall cpuCodecCall(target::CodecKernel kernel);

/// A quantization site --ptrain-outline-codecs gave a kernel (`ptrain.codec_kernel` = `kernel`; QuantArith.h,
/// docs/GeneratedKernels.md): one call of the generated encoder with the runtime encoder's pointers (g, the
/// residual, the codes); a non-finite block is coded as one (NaN scale), as the runtime's encoder codes it, not
/// an error. Fails, at the op, when the op is no site of a generated kernel.
LogicalResult emitGeneratedEncoder(CompressOp op, SymbolRefAttr kernel, CallWriter &w);

/// ptrain.compressed_reduce_scatter_start (ZeRO-1's quantized bucket reduce-scatter) over `comm`: a static
/// ptrain_codec_t of the codec on one chunk, the new residual copied from the old one, and
/// ptrain_compressed_reduce_scatter_start, which updates the residual at the start (every chunk is encoded
/// there), so its state write needs no deferral.
LogicalResult emitCompressedReduceScatterStart(CompressedReduceScatterStartOp op, const std::string &comm,
                                               CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITCODECS_H
