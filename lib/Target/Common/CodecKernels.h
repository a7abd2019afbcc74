//===- CodecKernels.h - Codec ops as runtime kernel calls, any target -*- C++ -*-===//
//
// What --emit-cpp and --emit-cuda share about ptrain.compress and
// ptrain.decompress: which codec kernel an op runs and its argument list.
// Both runtimes take the same parameter lists (RuntimeCalls.def's
// ptrain_<codec>_{encode,decode}_f32 and RuntimeCallsCuda.def's
// ptrain_cuda_<codec>_{encode,decode}_f32), so the arguments are computed
// once here; each target maps a CodecKernel to its own call and stores the
// pointers where its memory lives (docs/CodegenCpu.md "Codecs",
// docs/CodegenCuda.md "Codecs").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_CODECKERNELS_H
#define PTRAIN_TARGET_COMMON_CODECKERNELS_H

#include "mlir/Support/LogicalResult.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <utility>

namespace mlir::ptrain::target {

/// The codec kernels both runtimes provide (CPU ptrain_<name>_f32, CUDA ptrain_cuda_<name>_f32).
enum class CodecKernel {
  PowerSGDEncode,
  PowerSGDDecode,
  TopKEncode,
  TopKDecode,
  RandKEncode,
  RandKDecode,
  QuantEncode,
  QuantDecode,
  TahQuantEncode,
  TahQuantDecode,
  CastEncode,
  CastDecode,
};

/// One codec kernel call: the kernel and its arguments (C expressions: pointers from the target's `ptr`, codec
/// parameters as literals).
struct CodecKernelCall {
  CodecKernel kernel;
  SmallVector<std::string, 12> args;
  /// rand-k: the argument that is the call counter (the int64 codec state the kernel advances in place; a host
  /// pointer on both runtimes); -1 for the other codecs.
  int counterArg = -1;
};

/// Fails, at the op, when no runtime kernel codes the op's codec or shape: the linear autoencoder (its matmuls
/// are model ops, --ptrain-insert-linear-ae), a non-f32 tensor, a matrix view that is not a leading/trailing
/// split of the dimensions, codec parameters (params). `flag` (--emit-cpp, --emit-cuda) and `generator` (the CPU
/// code generator, ...) name the caller in the messages. Called before any code is written.
LogicalResult checkCodecKernel(Operation *op, StringRef flag, StringRef generator);

/// ptrain.compress (after checkCodecKernel): the encoder of the op's codec on its input, with the op's first new
/// state as the fused error-feedback residual (nullptr without error feedback), PowerSGD's next new state as
/// the warm-start Q, rand-k's as its counter. The new states must already hold copies of the old ones.
CodecKernelCall compressKernelCall(CompressOp op, llvm::function_ref<std::string(Value)> ptr);

/// ptrain.decompress (after checkCodecKernel): the decoder into the op's result (rand-k: its new counter state,
/// already a copy of the old one).
CodecKernelCall decompressKernelCall(DecompressOp op, llvm::function_ref<std::string(Value)> ptr);

/// ptrain.compressed_all_reduce_start (after checkCodecKernel): what both runtimes' compressed all-reduces take
/// besides the communicator (CPU ptrain_compressed_all_reduce_start, CUDA ptrain_nccl_compressed_all_reduce).
struct CompressedAllReduceArgs {
  /// The ptrain_codec_t of the op's codec and shape, as a C initializer ("{PTRAIN_CODEC_POWERSGD, ...}").
  std::string codec;
  /// The input; the residual (the first new state with error feedback, else nullptr); the codec state (the next
  /// new state: PowerSGD's warm-start Q or rand-k's counter, else nullptr); PTRAIN_REDUCE_SUM or _AVG.
  std::string input, residual, state, reduction;
};

/// The ptrain_codec_t of `codec` on `type` as a C initializer ("{PTRAIN_CODEC_QUANT, 8, ...}"); empty for a codec
/// without a runtime descriptor (the linear autoencoder). `valueType` (bf16 / f16; null: f32) is the type of the
/// values top-k and rand-k send (`ptrain.compressed_all_reduce_start`'s value_type; the descriptor's value_dtype).
std::string codecInitializer(CodecAttrInterface codec, RankedTensorType type, Type valueType = Type());

/// The arguments of `op`, whose new states must already hold copies of the old ones (the runtime updates them in
/// place); fails at the op, naming `flag`, for a reduction other than sum and avg.
FailureOr<CompressedAllReduceArgs> compressedAllReduceArgs(CompressedAllReduceStartOp op,
                                                           llvm::function_ref<std::string(Value)> ptr, StringRef flag);

/// (n, m) of the codec's matrix view of `type` (the kernels read the tensor as a row-major n x m matrix).
std::pair<int64_t, int64_t> codecMatrix(CodecAttrInterface codec, RankedTensorType type);

/// The runtime's spellings of codec parameters: PTRAIN_DTYPE_F16/BF16, PTRAIN_QUANT_*, a uint64 seed literal.
const char *castDtypeEnum(CastAttr c);
const char *quantGranularityEnum(QuantAttr q);
std::string seedLiteral(int64_t seed);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_CODECKERNELS_H
