//===- PTrainCodecPhaseOps.td - the phases of data-parallel PowerSGD -*- tablegen -*-===//
//
// The phase ops --ptrain-expand-codecs writes for `ptrain.compressed_all_reduce_start` with PowerSGD
// (Vogels et al., "PowerSGD", NeurIPS 2019, Algorithm 1; Algorithm 2's error feedback): phase P before the
// first all-reduce, phase Q between the two, finish after the second. Each runs the runtime's phase kernel
// (ptrain_powersgd_phase_p/q/finish_f32), so an expanded plan computes what the unexpanded op does.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECPHASEOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECPHASEOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "ptrain/Dialect/PTrain/IR/PTrainAttrs.td"

def PTrain_PowerSGDPhasePOp : PTrain_Op<"powersgd_phase_p", [Pure, AttrSizedOperandSegments]> {
  let summary = "First phase of data-parallel PowerSGD: M = g (+ e), P = M Q0.";
  let description = [{
    The encoder's first phase (Vogels et al., "PowerSGD", NeurIPS 2019, Algorithm 1 lines 1-3), the part of
    `ptrain.compressed_all_reduce_start` before its first all-reduce, as `--ptrain-expand-codecs` writes it.
    `matrix` is M = g + e with error feedback (`residual` given), else g. `p` is P = M Q0 (n x r) and `q` is
    Q0 (m x r): the warm-start Q when given, each zero column redrawn from seed 0, else Q0 drawn from seed 0
    (the runtime's ptrain_powersgd_phase_p_f32, so P and the unexpanded op's agree bit for bit). On the exact
    path ((n + m) r >= n m) `p` and `q` carry M itself (n r floats of M in P, the rest in Q, zero-filled):
    their sums are the sum of M.

    Constraints:
    * (C1) the codec (a `#ptrain.powersgd`, by the attribute's type) accepts the input type (rank <= min(n, m)
      of its view);
    * (C2) `residual`, when given, has the input type;
    * (C3) `warm_start_q` is given iff the codec warm-starts, with type m x r;
    * (C4) `matrix` has the input type, `p` and `q` the codec's code types (n x r, m x r).

    ```mlir
    %m, %p, %q = ptrain.powersgd_phase_p %g residual(%e) warm_start_q(%q0) {codec = #ptrain.powersgd<rank = 1>}
        : tensor<4x4xf32> residual(tensor<4x4xf32>) warm_start_q(tensor<4x1xf32>)
        -> tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Optional<AnyRankedTensor>:$residual,
                       Optional<AnyRankedTensor>:$warm_start_q, PTrain_PowerSGDAttr:$codec);
  let results = (outs AnyRankedTensor:$matrix, AnyRankedTensor:$p, AnyRankedTensor:$q);
  let assemblyFormat = [{
    $input (`residual` `(` $residual^ `)`)? (`warm_start_q` `(` $warm_start_q^ `)`)? attr-dict
    `:` type($input) (`residual` `(` type($residual)^ `)`)? (`warm_start_q` `(` type($warm_start_q)^ `)`)?
    `->` type($matrix) `,` type($p) `,` type($q)
  }];
  let hasVerifier = 1;
}

def PTrain_PowerSGDPhaseQOp : PTrain_Op<"powersgd_phase_q", [Pure]> {
  let summary = "Second phase of data-parallel PowerSGD: P^ = orthogonalize(P), Q = M^T P^.";
  let description = [{
    Between the two all-reduces of data-parallel PowerSGD (Algorithm 1 lines 4-5): `p` is the summed P of
    every member, `p_hat` its orthogonalization (modified Gram-Schmidt on its columns; a zero column stays
    zero) and `q` = M^T P^ of this member's M (`matrix` from `ptrain.powersgd_phase_p`). The runtime's
    ptrain_powersgd_phase_q_f32. Every member orthogonalizes the same summed P, so P^ is the same everywhere.

    Constraints:
    * (C1) the codec (a `#ptrain.powersgd`, by the attribute's type) accepts the matrix type and is not on its
      exact path ((n + m) r < n m; the exact path has no power step: its codes are summed and finished
      directly);
    * (C2) `p` and `p_hat` have type n x r, `q` type m x r.

    ```mlir
    %ph, %qi = ptrain.powersgd_phase_q %m, %psum {codec = #ptrain.powersgd<rank = 1>}
        : tensor<4x4xf32>, tensor<4x1xf32> -> tensor<4x1xf32>, tensor<4x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$matrix, AnyRankedTensor:$p, PTrain_PowerSGDAttr:$codec);
  let results = (outs AnyRankedTensor:$p_hat, AnyRankedTensor:$q);
  let assemblyFormat = [{
    $matrix `,` $p attr-dict `:` type($matrix) `,` type($p) `->` type($p_hat) `,` type($q)
  }];
  let hasVerifier = 1;
}

def PTrain_PowerSGDFinishOp : PTrain_Op<"powersgd_finish", [Pure]> {
  let summary = "Last phase of data-parallel PowerSGD: decode alpha P^ Q^T, residual, warm-start Q.";
  let description = [{
    After the second all-reduce (Algorithm 1 lines 6-7; Algorithm 2's error feedback): with `p_hat` the
    orthogonalized summed P and `q` the summed Q, `result` = alpha P^ Q^T (the decoded reduction: alpha = 1
    for a sum, 1 / N for an average over N members), `residual` = M - beta P^ Q^T (the error against the
    averaged approximation, beta = 1 / N) and `warm_start_q` = beta Q. On the exact path (`p_hat` and `q`
    the summed codes of `ptrain.powersgd_phase_p`) `result` is alpha times the summed M, `residual` is zero
    and `warm_start_q` is `q` unchanged (the runtime does not update the warm start there; the expansion
    keeps the old one). The runtime's ptrain_powersgd_finish_f32.

    Constraints:
    * (C1) the codec (a `#ptrain.powersgd`, by the attribute's type) accepts the matrix type;
    * (C2) `p_hat` has type n x r and `q` type m x r;
    * (C3) `result` and `residual` have the matrix type, `warm_start_q` type m x r;
    * (C4) `alpha` and `beta` are finite and > 0.

    ```mlir
    %out, %e1, %q1 = ptrain.powersgd_finish %ph, %qsum, %m {codec = #ptrain.powersgd<rank = 1>,
        alpha = 5.000000e-01 : f32, beta = 5.000000e-01 : f32}
        : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$p_hat, AnyRankedTensor:$q, AnyRankedTensor:$matrix,
                       PTrain_PowerSGDAttr:$codec, F32Attr:$alpha, F32Attr:$beta);
  let results = (outs AnyRankedTensor:$result, AnyRankedTensor:$residual, AnyRankedTensor:$warm_start_q);
  let assemblyFormat = [{
    $p_hat `,` $q `,` $matrix attr-dict `:` type($p_hat) `,` type($q) `,` type($matrix)
    `->` type($result) `,` type($residual) `,` type($warm_start_q)
  }];
  let hasVerifier = 1;
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECPHASEOPS_TD
