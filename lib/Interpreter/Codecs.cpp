//===- Codecs.cpp - ptrain.compress / ptrain.decompress -----------*- C++ -*-===//
//
// The reference semantics of the codec ops run the runtime's own CPU codec kernels (lib/Runtime/cpu/codecs,
// linked as the MPI-free object library ptrain_codecs), so that an interpreted plan and a compiled one
// encode bit for bit alike. Tensors are converted to fp32 around the kernel call (the codecs are fp32).
// PowerSGD only for now (docs/Compression.md); other codecs are reported as unsupported.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include "ptrain/Runtime/ptrain_runtime.h"

#include <vector>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {
std::vector<float> toFloats(const Tensor &t) { return std::vector<float>(t.floats().begin(), t.floats().end()); }

Tensor fromFloats(llvm::ArrayRef<int64_t> shape, const std::vector<float> &values) {
  return Tensor::fromFloats(DType::F32, shape, std::vector<double>(values.begin(), values.end()));
}

llvm::Error kernelError(ptrain_status_t status) {
  return makeError(llvm::Twine("codec kernel failed (") + ptrain_status_string(status) + "): " + ptrain_last_error());
}

/// The PowerSGD matrix view (n, m) of `type`.
std::pair<int64_t, int64_t> matrixOf(PowerSGDAttr codec, RankedTensorType type) {
  return *MatrixViewAttr::getMatrixShape(codec.getView(), type, nullptr);
}
} // namespace

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evalCompress(CompressOp op,
                                                                       llvm::function_ref<const Tensor &(Value)> get) {
  auto codec = dyn_cast<PowerSGDAttr>(op.getCodec());
  if (!codec)
    return makeError("the interpreter runs only the #ptrain.powersgd codec");
  auto type = op.getInput().getType();
  const Tensor &input = get(op.getInput());
  if (!input.isFloat())
    return makeError("PowerSGD needs a float input");
  auto [n, m] = matrixOf(codec, cast<RankedTensorType>(type));
  const int64_t r = codec.getRank();
  std::vector<float> g = toFloats(input), residual, q;
  size_t next = 0;
  if (op.getErrorFeedback())
    residual = toFloats(get(op.getState()[next++]));
  if (codec.isWarmStart())
    q = toFloats(get(op.getState()[next++]));
  std::vector<float> outP(static_cast<size_t>(n * r)), outQ(static_cast<size_t>(m * r));
  // Seed 0 draws the initial (or, without warm start, every) Q; the C++ emitter lowering uses the same.
  if (ptrain_status_t status = ptrain_powersgd_encode_f32(g.data(), residual.empty() ? nullptr : residual.data(),
                                                          q.empty() ? nullptr : q.data(), 1, n, m, r,
                                                          /*seed=*/0, outP.data(), outQ.data()))
    return kernelError(status);
  std::vector<Tensor> results{fromFloats({n, r}, outP), fromFloats({m, r}, outQ)};
  if (op.getErrorFeedback())
    results.push_back(fromFloats(input.getShape(), residual));
  if (codec.isWarmStart())
    results.push_back(fromFloats({m, r}, q));
  return results;
}

llvm::Expected<std::vector<Tensor>>
mlir::ptrain::interp::evalDecompress(DecompressOp op, llvm::function_ref<const Tensor &(Value)> get) {
  auto codec = dyn_cast<PowerSGDAttr>(op.getCodec());
  if (!codec)
    return makeError("the interpreter runs only the #ptrain.powersgd codec");
  auto type = cast<RankedTensorType>(op.getResult().getType());
  auto [n, m] = matrixOf(codec, type);
  const int64_t r = codec.getRank();
  std::vector<float> p = toFloats(get(op.getCodes()[0])), q = toFloats(get(op.getCodes()[1]));
  std::vector<float> out(static_cast<size_t>(n * m));
  if (ptrain_status_t status = ptrain_powersgd_decode_f32(p.data(), q.data(), 1, n, m, r, out.data()))
    return kernelError(status);
  return std::vector<Tensor>{fromFloats(type.getShape(), out)};
}

llvm::Expected<std::vector<std::pair<Tensor, std::vector<Tensor>>>>
mlir::ptrain::interp::evalCompressedAllReduce(CompressedAllReduceStartOp op, llvm::ArrayRef<const Tensor *> inputs,
                                              llvm::ArrayRef<std::vector<Tensor>> states) {
  auto codec = dyn_cast<PowerSGDAttr>(op.getCodec());
  if (!codec)
    return makeError("the interpreter runs compressed all-reduces only with the #ptrain.powersgd codec");
  if (op.getReduction() != ReductionKind::Sum && op.getReduction() != ReductionKind::Avg)
    return makeError("a compressed all-reduce sums or averages");
  auto type = cast<RankedTensorType>(op.getInput().getType());
  auto [n, m] = matrixOf(codec, type);
  const int64_t r = codec.getRank(), size = static_cast<int64_t>(inputs.size());
  const bool ef = op.getErrorFeedback(), warm = codec.isWarmStart();
  const bool exact = (n + m) * r >= n * m;
  // Per rank: M (in the residual with error feedback), P and Q codes, the warm-start Q.
  std::vector<std::vector<float>> g(size), e(size), q(size), p(size, std::vector<float>(n * r)),
      qs(size, std::vector<float>(m * r));
  for (int64_t i = 0; i < size; ++i) {
    g[i] = toFloats(*inputs[i]);
    size_t next = 0;
    if (ef)
      e[i] = toFloats(states[i][next++]);
    if (warm)
      q[i] = toFloats(states[i][next++]);
    if (ptrain_status_t status =
            ptrain_powersgd_phase_p_f32(g[i].data(), ef ? e[i].data() : nullptr, warm ? q[i].data() : nullptr, 1, n, m,
                                        r, /*seed=*/0, p[i].data(), qs[i].data()))
      return kernelError(status);
  }
  // The all-reduces: fp32 sums in rank order (the executor's deterministic stand-in for MPI_SUM).
  auto sum = [&](std::vector<std::vector<float>> &parts) {
    std::vector<float> total(parts[0].size(), 0.0f);
    for (const std::vector<float> &part : parts)
      for (size_t j = 0; j < total.size(); ++j)
        total[j] += part[j];
    return total;
  };
  std::vector<float> pSum = sum(p), qSum;
  if (exact) {
    qSum = sum(qs);
  } else {
    for (int64_t i = 0; i < size; ++i) {
      std::vector<float> pi = pSum; // every rank orthogonalizes the same reduced P
      if (ptrain_status_t status =
              ptrain_powersgd_phase_q_f32(ef ? e[i].data() : g[i].data(), 1, n, m, r, pi.data(), qs[i].data()))
        return kernelError(status);
      if (i + 1 == size)
        pSum = pi;
    }
    qSum = sum(qs);
  }
  const float alpha = op.getReduction() == ReductionKind::Avg ? 1.0f / static_cast<float>(size) : 1.0f;
  std::vector<std::pair<Tensor, std::vector<Tensor>>> results;
  for (int64_t i = 0; i < size; ++i) {
    std::vector<float> out(static_cast<size_t>(n * m));
    if (ptrain_status_t status =
            ptrain_powersgd_finish_f32(pSum.data(), qSum.data(), 1, n, m, r, alpha, 1.0f / static_cast<float>(size),
                                       out.data(), ef ? e[i].data() : nullptr, warm && !exact ? q[i].data() : nullptr))
      return kernelError(status);
    std::vector<Tensor> newStates;
    if (ef)
      newStates.push_back(fromFloats(type.getShape(), e[i]));
    if (warm)
      newStates.push_back(fromFloats({m, r}, q[i]));
    results.emplace_back(fromFloats(type.getShape(), out), std::move(newStates));
  }
  return results;
}
