//===- OpGeometry.h - Op shapes as runtime-call arguments, for both targets -*- C++ -*-===//
//
// What --emit-cpp (EmitCpp.cpp) and --emit-cuda (lib/Target/Cuda) both derive
// from an op before naming their own runtime call: the enum spellings of the
// runtime header for op kinds, a matmul's strided-batch GEMM geometry, the
// rows x cols view of a normalization, and the offsets of split / concat
// pieces. One definition each; the call names stay the emitters'.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_OPGEOMETRY_H
#define PTRAIN_TARGET_COMMON_OPGEOMETRY_H

#include "Common/CppTypes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStateInit.h"

#include <array>

namespace mlir::ptrain::target {

/// PTRAIN_BINARY_* / PTRAIN_UNARY_* / PTRAIN_STATE_* of ptrain_runtime.h.
inline const char *binaryKindEnum(BinaryKind kind) {
  static const char *names[] = {"PTRAIN_BINARY_ADD", "PTRAIN_BINARY_SUB", "PTRAIN_BINARY_MUL", "PTRAIN_BINARY_DIV",
                                "PTRAIN_BINARY_POW", "PTRAIN_BINARY_MAX", "PTRAIN_BINARY_MIN"};
  return names[static_cast<int>(kind)];
}
inline const char *unaryKindEnum(UnaryKind kind) {
  static const char *names[] = {"PTRAIN_UNARY_NEG",  "PTRAIN_UNARY_EXP",   "PTRAIN_UNARY_LOG",
                                "PTRAIN_UNARY_SQRT", "PTRAIN_UNARY_RSQRT", "PTRAIN_UNARY_RECIPROCAL",
                                "PTRAIN_UNARY_ERF",  "PTRAIN_UNARY_TANH",  "PTRAIN_UNARY_RELU"};
  return names[static_cast<int>(kind)];
}
inline const char *stateKindEnum(StateKind kind) {
  static const char *names[] = {"PTRAIN_STATE_PARAMETER",      "PTRAIN_STATE_OPTIMIZER_MOMENT",
                                "PTRAIN_STATE_CODEC_RESIDUAL", "PTRAIN_STATE_CODEC_WARM_START",
                                "PTRAIN_STATE_CODEC_SEED",     "PTRAIN_STATE_STEP_COUNTER",
                                "PTRAIN_STATE_GRADIENT"};
  return names[static_cast<int>(kind)];
}

/// The ptrain_state_desc_t initializer of `state`, whose storage is the array `var` (and `var`_dims, or the
/// expression `dims` when given): key, data (`data` when given: "nullptr" for storage allocated at init), dtype,
/// kind, rank, dims, and the default of a parameter the model lacks (its `ptrain.init`).
inline std::string stateDescriptor(StateOp state, const std::string &var, const std::string &data = "",
                                   const std::string &dims = "") {
  RankedTensorType type = state.getTensorType();
  std::optional<StateInit> init = getStateInit(state);
  return "{" + stringLiteral(state.getKey()) + ", " + (data.empty() ? var : data) + ", " +
         (type.getElementType().isF32() ? "PTRAIN_DTYPE_F32" : "PTRAIN_DTYPE_I64") + ", " +
         stateKindEnum(state.getKind()) + ", " + std::to_string(type.getRank()) + ", " +
         (type.getRank() == 0 ? std::string("nullptr")
          : dims.empty()      ? var + "_dims"
                              : dims) +
         ", " +
         (init ? std::string(init->kind == kOrthogonalTransposedInit ? "PTRAIN_STATE_INIT_ORTHOGONAL_TRANSPOSED, "
                                                                     : "PTRAIN_STATE_INIT_ORTHOGONAL, ") +
                     std::to_string(init->seed) + "u"
               : std::string("PTRAIN_STATE_INIT_NONE, 0")) +
         "}";
}

/// A ptrain.matmul as one strided-batched row-major GEMM: C[batch] = A[batch] (rows x k) B[batch] (k x cols),
/// each operand's batch stride its matrix size, or 0 when its batch is all 1 (broadcast).
struct GemmGeometry {
  int64_t batch, rows, cols, k, strideA, strideB;
};

/// The geometry of `m`, or an error at `m` (prefixed by `emitter`, e.g. "--emit-cpp") when an operand's batch
/// is neither the whole result batch nor all 1.
inline FailureOr<GemmGeometry> gemmGeometry(MatmulOp m, StringRef emitter) {
  ArrayRef<int64_t> a = tensorOf(m.getLhs()).getShape(), b = tensorOf(m.getRhs()).getShape();
  ArrayRef<int64_t> outBatch = tensorOf(m.getResult()).getShape().drop_back(2);
  GemmGeometry g{numElements(outBatch), a[a.size() - 2], b.back(), a.back(), 0, 0};
  auto strideOf = [&](ArrayRef<int64_t> shape, int64_t matrix, int64_t &stride) {
    ArrayRef<int64_t> own = shape.drop_back(2);
    if (numElements(own) == 1) {
      stride = 0;
      return true;
    }
    SmallVector<int64_t> padded(outBatch.size() - own.size(), 1);
    padded.append(own.begin(), own.end());
    stride = matrix;
    return ArrayRef<int64_t>(padded) == outBatch;
  };
  if (!strideOf(a, g.rows * g.k, g.strideA) || !strideOf(b, g.k * g.cols, g.strideB))
    return m.emitError(emitter) << ": 'ptrain.matmul' with partially broadcast batch dimensions ("
                                << m.getLhs().getType() << " x " << m.getRhs().getType() << ") is not supported";
  return g;
}

/// A tensor of `shape` as rows x cols split before dimension `axis` (negative: from the end).
inline std::pair<int64_t, int64_t> rowsCols(ArrayRef<int64_t> shape, int64_t axis) {
  if (axis < 0)
    axis += shape.size();
  return {numElements(shape.take_front(axis)), numElements(shape.drop_front(axis))};
}

/// `shape` as [outer, len, inner] around `axis` (negative counts from the end; the verifiers bound it): the
/// view of gather and log_softmax kernels.
inline std::array<int64_t, 3> aroundAxis(ArrayRef<int64_t> shape, int64_t axis) {
  if (axis < 0)
    axis += shape.size();
  return {numElements(shape.take_front(axis)), shape[axis], numElements(shape.drop_front(axis + 1))};
}

/// The offsets of consecutive pieces along `axis` (negative: from the end) of a rank-`rank` tensor, the
/// pieces' sizes along it taken from `pieces` (split results or concat inputs).
inline SmallVector<SmallVector<int64_t>> pieceOffsets(int64_t rank, int64_t axis, ValueRange pieces) {
  if (axis < 0)
    axis += rank;
  SmallVector<SmallVector<int64_t>> offsets;
  int64_t start = 0;
  for (Value piece : pieces) {
    offsets.emplace_back(rank, 0);
    offsets.back()[axis] = start;
    start += tensorOf(piece).getShape()[axis];
  }
  return offsets;
}

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_OPGEOMETRY_H
