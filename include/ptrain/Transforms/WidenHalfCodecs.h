//===- WidenHalfCodecs.h - 16-bit codec ops onto the f32 kernels --*- C++ -*-===//
//
// `--ptrain-widen-half-codecs` (Passes.td; docs/Compression.md, "Codecs on 16-bit traffic"): a 16-bit plan's
// `ptrain.compress` / `ptrain.decompress` / `ptrain.compressed_all_reduce_start` on bf16 or f16 tensors, rewritten
// into the f32 codec behind an exact widen, so that the runtime's f32 kernels (CPU and CUDA), the interpreter and
// the multi-rank executor run them with no kernel of their own:
//
//   compress x16 (residual e f32)  ->  x = cast x16 to f32 (exact); the f32 compress of x with e; each code the
//                                      codec keeps 16-bit (top-k's, rand-k's values v) cast to 16 bits (nearest
//                                      even); with error feedback, e' += decode(v - widen(round(v))) (the
//                                      rounding the residual keeps: Karimireddy et al., ICML 2019, e' = g + e -
//                                      decode(code) with the code that is sent)
//   decompress -> r16               ->  the 16-bit value codes widened, the f32 decompress, its result rounded
//   compressed all-reduce of x16    ->  the f32 compressed all-reduce of the widened x, its wait rounded; top-k
//                                      and rand-k get value_type = the 16-bit type (their values are sent as
//                                      16 bits by the runtimes' codec descriptor, value_dtype, and the executor,
//                                      which add the rounding to the residual as above)
//
// Exact by construction: a 16-bit value widens to f32 without rounding, so the codes equal those of the f32
// kernel on the widened input (quantization, TAH-Quant, PowerSGD: issue 24 item 2, "same codes as encoding the
// widened fp32 tensor").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_WIDENHALFCODECS_H
#define PTRAIN_TRANSFORMS_WIDENHALFCODECS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::ptrain {

/// The three rewrites above (one pattern per op); a codec op on f32 tensors does not match.
void populateWidenHalfCodecsPatterns(RewritePatternSet &patterns);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_WIDENHALFCODECS_H
