//===- GemmOps.h - The GEMMs both targets emit, with their fusion -*- C++ -*-===//
//
// The ops whose code depends on GEMM fusion (include/ptrain/Analysis/
// GemmFusion.h), written once over the KernelTarget interface for both code
// generators (issue 23 item 1): a matmul as one strided-batch GEMM (OpenBLAS
// on the CPU, cuBLAS on CUDA) whose operands may be read transposed through
// the BLAS transpose flags and whose C may start from a bias (beta = 1); a
// weight gradient's batch sum as one GEMM over the batch-long contraction;
// the transposes and bias adds the GEMMs made aliases or folded away.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_GEMMOPS_H
#define PTRAIN_TARGET_COMMON_GEMMOPS_H

#include "Common/KernelTarget.h"

namespace mlir::ptrain {
class GemmFusion;
} // namespace mlir::ptrain

namespace mlir::ptrain::target {

/// Whether emitGemmOp writes `op` under `gemms`: every matmul, a sum_to that is one GEMM (summedMatmul), a
/// transpose a GEMM folds (reads with its transpose flag) or writes (alias), and a bias add a GEMM starts from.
bool isGemmOp(Operation *op, const GemmFusion &gemms);

/// The code of `op` (isGemmOp) on `target`. A matmul (batch x rows x k times k x cols, strides in elements)
/// is gemm_f32 or, with fp32 accumulation of bf16 / f16 operands (docs/MixedPrecision.md), gemm_bf16 / gemm_f16, after a
/// broadcast of its bias into C; folded ops write nothing, aliases a note. Errors: gemmGeometry's.
LogicalResult emitGemmOp(Operation *op, const GemmFusion &gemms, KernelTarget &target);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_GEMMOPS_H
