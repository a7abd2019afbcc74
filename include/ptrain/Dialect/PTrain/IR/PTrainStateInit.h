//===- PTrainStateInit.h - a parameter state's default initializer -*- C++ -*-===//
//
// The attribute `ptrain.init = {kind = "orthogonal", seed = S}` of a `ptrain.state` parameter that no model
// file holds (the linear autoencoder's weights, --ptrain-insert-linear-ae): its deterministic default, used
// only when the state source (the ONNX model, a map of values) does not hold the key; without it a missing key
// stays an error. Weights stay out of the IR (DESIGN decision 10): the attribute names a generator and a seed.
// The runtime (ptrain_state_init_onnx), the reference interpreter and the multi-rank executor call one
// generator (include/ptrain/Runtime/StateInit.h), so every rank holding the state, and every data-parallel
// replica, starts from the same bits.
//
// `orthogonal` (Saxe, McClelland, Ganguli, "Exact solutions to the nonlinear dynamics of learning in deep
// linear neural networks", ICLR 2014; torch.nn.init.orthogonal_ with gain 1): for a rows x cols matrix with
// n = max(rows, cols), k = min(rows, cols), a Gaussian n x k matrix drawn from S is orthonormalized column by
// column (Gram-Schmidt twice, in double; the signs of a QR with a positive diagonal of R) into Q; the value is
// Q when rows >= cols and Q^T otherwise. `orthogonal_transposed` is the transpose of the `orthogonal` value of
// the transposed shape and the same seed: the autoencoder's encoder W_e (H x D, orthogonal) and decoder W_d
// (D x H, orthogonal_transposed) of a boundary share a seed, so W_d = W_e^T for every D <= H (also D = H,
// where the shapes alone could not tell them apart) with orthonormal columns, and decode(encode(x)) =
// x W_e W_e^T starts as an orthogonal projection onto a
// D-dimensional subspace (the identity when D = H), the form a trained linear autoencoder takes (Baldi and
// Hornik, "Neural networks and principal component analysis: learning from examples without local minima",
// Neural Networks 2(1), 1989).
//
// Constraints of ptrain.state, checked by StateOp::verify (test/Dialect/PTrain/state-ops-invalid.mlir):
//   (C4) a ptrain.init is given only for a `parameter` (moments and codec states start at zero);
//   (C5) it is a dictionary of exactly `kind`, a known generator ("orthogonal", "orthogonal_transposed"), and
//        `seed`, an integer >= 0;
//   (C6) an orthogonal init needs a rank-2 f32 tensor.
//
//   ptrain.state @ae_decoder_0 key "ae/0->1/decoder" kind parameter
//       {ptrain.init = {kind = "orthogonal_transposed", seed = 0 : i64}} : tensor<64x128xf32>
//
// Readers: the interpreter and executor (ptrain/Interpreter/StateDefaults.h), the C++/CUDA emitters (the
// PTRAIN_STATE_INIT_* field of the state table), ptrain-compile's plan.json; writer: --ptrain-insert-linear-ae.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTATEINIT_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTATEINIT_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include <optional>

namespace mlir::ptrain {

/// The name of the attribute.
constexpr llvm::StringLiteral kStateInitAttrName = "ptrain.init";
/// The generators (ptrain::runtime::orthogonalInit without and with `transposed`).
constexpr llvm::StringLiteral kOrthogonalInit = "orthogonal";
constexpr llvm::StringLiteral kOrthogonalTransposedInit = "orthogonal_transposed";

/// A state's default initializer: the generator's name and its seed.
struct StateInit {
  llvm::StringRef kind;
  int64_t seed;
};

/// The `ptrain.init` of `state` (verified: C4-C6), or std::nullopt when it has none.
std::optional<StateInit> getStateInit(StateOp state);

/// Gives `state` the default `ptrain.init = {kind = "orthogonal" or "orthogonal_transposed", seed = seed}`.
void setOrthogonalInit(StateOp state, int64_t seed, bool transposed);

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTATEINIT_H
