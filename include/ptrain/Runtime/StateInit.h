//===- StateInit.h - deterministic default values of parameter states -*- C++ -*-===//
//
// The generators behind a state's `ptrain.init` (PTrainStateOps.td) and PTRAIN_STATE_INIT_* (ptrain_runtime.h): the
// initial value of a parameter that no model file holds, such as the linear autoencoder's encoder and decoder
// (--ptrain-insert-linear-ae). Plain C++ (no LLVM, no MPI), compiled once into the ptrain_codecs object
// library and linked into both the runtime (ptrain_state_init_onnx, lib/Runtime/common/OnnxInit.cpp) and the
// reference interpreter and multi-rank executor (lib/Interpreter), so every consumer and every rank computes
// the same bits from the same seed.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_STATEINIT_H
#define PTRAIN_RUNTIME_STATEINIT_H

#include <cstdint>

namespace ptrain::runtime {

/// Writes a rows x cols (row-major) matrix with orthonormal columns (rows >= cols) or rows (rows < cols) into
/// `out`: Saxe et al., ICLR 2014, as `torch.nn.init.orthogonal_` with gain 1. With n = max(rows, cols) and
/// k = min(rows, cols), entry (i, j) of a Gaussian n x k matrix A is
///   z = sqrt(-2 ln u1) cos(2 pi u2),  u1 = ((r1 >> 11) + 1) 2^-53,  u2 = (r2 >> 11) 2^-53,
///   r1 = splitmix64(s + 2 e), r2 = splitmix64(s + 2 e + 1),  e = i k + j,  s = splitmix64(seed)
/// (Box-Muller; splitmix64 is Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014); its columns are orthonormalized in order by Gram-Schmidt done twice ("twice is enough",
/// Giraud et al., Numer. Math. 2005), in double, so Q = A R^-1 with a positive diagonal of R (torch's sign
/// fix of the QR); a column that cancels to zero stays zero. The result, rounded once to f32, is Q when
/// rows >= cols and Q^T otherwise. With `transposed`, it is instead the transpose of the rows-and-cols-swapped
/// result (Q when rows > cols, Q^T otherwise): an (H x D) matrix and a `transposed` (D x H) one of the same
/// seed are exact transposes for every D <= H, the square case included (the linear autoencoder's encoder
/// and decoder). Returns false (writing nothing) when rows or cols is below 1 or the n k doubles of scratch
/// cannot be allocated. O(n k^2) time.
bool orthogonalInit(float *out, int64_t rows, int64_t cols, uint64_t seed, bool transposed = false);

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_STATEINIT_H
