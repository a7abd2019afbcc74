//===- LinearAlgebra.cpp - matmul and embedding kernels ------------------===//
//
// ptrain.matmul (batched, broadcast batch dimensions, dot products accumulated in double), the bf16 and f16
// matmuls with fp32 accumulation (the runtime's ptrain_gemm_bf16 / _f16, linked from ptrain_codecs: the same bits) and
// ptrain.embedding (row lookup with a range check on every id) and its adjoint ptrain.embedding_grad
// (scatter-add of gradient rows).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"
#include "ptrain/Interpreter/MixedPrecisionKernels.h"
#include "ptrain/Runtime/ptrain_runtime.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

namespace {

/// The shapes of a batched matmul [..., n, k] x [..., k, m] and the operands' batch entries for each result entry.
struct MatmulGeometry {
  int64_t n, k, m;
  std::vector<int64_t> lmap, rmap;
  llvm::SmallVector<int64_t> shape; // [broadcast batch..., n, m]
};

llvm::Expected<MatmulGeometry> matmulGeometry(const Tensor &lhs, const Tensor &rhs) {
  // (C1) rank >= 2; (C2) equal contracted dimensions; (C3) broadcast batch dimensions.
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return makeError("matmul needs operands of rank >= 2, got " + lhs.getTypeString() + " and " +
                     rhs.getTypeString());
  llvm::ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  MatmulGeometry g;
  g.n = ls[ls.size() - 2];
  g.k = ls.back();
  g.m = rs.back();
  if (rs[rs.size() - 2] != g.k)
    return makeError("matmul contracted dimensions differ: " + formatShape(ls) + " x " + formatShape(rs));
  llvm::ArrayRef<int64_t> lbatch = ls.drop_back(2), rbatch = rs.drop_back(2);
  llvm::Expected<llvm::SmallVector<int64_t>> batch = broadcastShapes(lbatch, rbatch);
  if (!batch)
    return batch.takeError();
  g.lmap = broadcastIndexMap(*batch, lbatch);
  g.rmap = broadcastIndexMap(*batch, rbatch);
  g.shape.assign(batch->begin(), batch->end());
  g.shape.push_back(g.n);
  g.shape.push_back(g.m);
  return g;
}

} // namespace

llvm::Expected<Tensor> mlir::ptrain::interp::evalMatmul(const Tensor &lhs, const Tensor &rhs) {
  if (!lhs.isFloat() || lhs.getDType() != rhs.getDType())
    return makeError("matmul needs two float tensors of one element type, got " + lhs.getTypeString() +
                     " and " + rhs.getTypeString());
  llvm::Expected<MatmulGeometry> geometry = matmulGeometry(lhs, rhs);
  if (!geometry)
    return geometry.takeError();
  const int64_t n = geometry->n, k = geometry->k, m = geometry->m;
  Tensor out(lhs.getDType(), geometry->shape);
  llvm::ArrayRef<double> a = lhs.floats(), b = rhs.floats();
  llvm::MutableArrayRef<double> o = out.floats();
  std::vector<double> row(m);
  for (size_t bi = 0; bi < geometry->lmap.size(); ++bi) {
    const double *abase = a.data() + geometry->lmap[bi] * n * k;
    const double *bbase = b.data() + geometry->rmap[bi] * k * m;
    double *obase = o.data() + static_cast<int64_t>(bi) * n * m;
    for (int64_t i = 0; i < n; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        double x = abase[i * k + p];
        const double *brow = bbase + p * m;
        for (int64_t j = 0; j < m; ++j)
          row[j] += x * brow[j];
      }
      std::copy(row.begin(), row.end(), obase + i * m);
    }
  }
  out.roundToDType();
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalMatmulHalf(const Tensor &lhs, const Tensor &rhs) {
  const DType half = lhs.getDType();
  if ((half != DType::BF16 && half != DType::F16) || rhs.getDType() != half)
    return makeError("16-bit matmul needs two bf16 or two f16 tensors, got " + lhs.getTypeString() + " and " +
                     rhs.getTypeString());
  llvm::Expected<MatmulGeometry> geometry = matmulGeometry(lhs, rhs);
  if (!geometry)
    return geometry.takeError();
  const int64_t n = geometry->n, k = geometry->k, m = geometry->m;
  const bool bf16 = half == DType::BF16;
  // The operands' 16-bit bits (their values are bf16 / f16 values, so the fp32 and 16-bit roundings are exact).
  auto toBits = [&](const Tensor &t) {
    std::vector<float> wide(t.floats().begin(), t.floats().end());
    std::vector<uint16_t> bits(wide.size());
    const int64_t count = static_cast<int64_t>(wide.size());
    (void)(bf16 ? ptrain_cast_f32_bf16(wide.data(), count, bits.data())
                : ptrain_cast_f32_f16(wide.data(), count, bits.data()));
    return bits;
  };
  const std::vector<uint16_t> a = toBits(lhs), b = toBits(rhs);
  std::vector<float> c(static_cast<size_t>(n * m));
  Tensor out(DType::F32, geometry->shape);
  llvm::MutableArrayRef<double> o = out.floats();
  for (size_t bi = 0; bi < geometry->lmap.size(); ++bi) {
    const uint16_t *ab = a.data() + geometry->lmap[bi] * n * k, *bb = b.data() + geometry->rmap[bi] * k * m;
    if (ptrain_status_t status = bf16 ? ptrain_gemm_bf16(0, 0, 1, n, m, k, 1.0f, ab, 0, bb, 0, 0.0f, c.data(), 0)
                                      : ptrain_gemm_f16(0, 0, 1, n, m, k, 1.0f, ab, 0, bb, 0, 0.0f, c.data(), 0))
      return makeError(llvm::Twine(bf16 ? "bf16" : "f16") + " matmul: " + ptrain_status_string(status) + ": " +
                       ptrain_last_error());
    std::copy(c.begin(), c.end(), o.begin() + static_cast<int64_t>(bi) * n * m);
  }
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalEmbedding(const Tensor &table, const Tensor &ids) {
  // (C1) a 2-D float table; (C2) integer ids.
  if (!table.isFloat() || table.getRank() != 2)
    return makeError("embedding table must be a 2-D float tensor, got " + table.getTypeString());
  if (ids.isFloat())
    return makeError("embedding ids must be integers, got " + ids.getTypeString());
  int64_t vocab = table.getShape()[0], hidden = table.getShape()[1];
  llvm::SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(hidden);
  Tensor out(table.getDType(), shape);
  llvm::MutableArrayRef<double> o = out.floats();
  for (int64_t p = 0, e = ids.getNumElements(); p < e; ++p) {
    int64_t id = ids.ints()[p];
    if (id < 0 || id >= vocab)
      return makeError("id " + llvm::Twine(id) + " at flat position " + llvm::Twine(p) + " is out of range [0, " +
                       llvm::Twine(vocab) + ")");
    std::copy_n(table.floats().begin() + id * hidden, hidden, o.begin() + p * hidden);
  }
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalEmbeddingGrad(const Tensor &grad, const Tensor &ids,
                                                               int64_t vocab) {
  // (C1) the result is a V x H table, grad is ids.shape x H, ids are integers.
  if (ids.isFloat())
    return makeError("embedding_grad ids must be integers, got " + ids.getTypeString());
  if (!grad.isFloat() || grad.getRank() != ids.getRank() + 1 || grad.getShape().drop_back() != ids.getShape())
    return makeError("embedding_grad gradient " + grad.getTypeString() + " must be a float tensor of shape ids x H" +
                     " for ids " + ids.getTypeString());
  if (vocab < 0)
    return makeError("embedding_grad vocabulary size " + llvm::Twine(vocab) + " is negative");
  int64_t hidden = grad.getShape().back();
  Tensor out(grad.getDType(), {vocab, hidden});
  llvm::MutableArrayRef<double> o = out.floats();
  for (int64_t p = 0, e = ids.getNumElements(); p < e; ++p) {
    int64_t id = ids.ints()[p];
    if (id < 0 || id >= vocab)
      return makeError("id " + llvm::Twine(id) + " at flat position " + llvm::Twine(p) + " is out of range [0, " +
                       llvm::Twine(vocab) + ")");
    const double *row = grad.floats().data() + p * hidden;
    for (int64_t h = 0; h < hidden; ++h)
      o[id * hidden + h] += row[h];
  }
  out.roundToDType();
  return out;
}
