//===- ExpandCodecs.td - --ptrain-expand-codecs -------------------*- tablegen -*-===//
//
// The pass that expands high-level codec collectives into their phases. Generated on its own
// (ExpandCodecs.h.inc, docs/Dialects/PTrainExpandCodecsPass.md) so that adding it does not rebuild every
// user of Passes.h; registered by registerPTrainExpandCodecsPasses() (ptrain/Transforms/ExpandCodecs.h).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_EXPANDCODECS_TD
#define PTRAIN_TRANSFORMS_EXPANDCODECS_TD

include "mlir/Pass/PassBase.td"

def ExpandCodecsPass : Pass<"ptrain-expand-codecs", "::mlir::ModuleOp"> {
  let summary = "Expands data-parallel PowerSGD all-reduces into their phases and two plain all-reduces.";
  let description = [{
    Runs after `--ptrain-lower-to-runtime` (or on any module with codec collectives). Each
    `ptrain.compressed_all_reduce_start` with `#ptrain.powersgd` and its one `ptrain.wait` become
    data-parallel PowerSGD as two communication rounds (Vogels et al., "PowerSGD", NeurIPS 2019,
    Algorithm 1 with Algorithm 2's error feedback; Optimus-CC section 4.4):

    1. at the start: `ptrain.powersgd_phase_p` (M = g + e, P = M Q0) and an all-reduce (sum) of P;
    2. at the wait: wait for P, `ptrain.powersgd_phase_q` (P^ = orthogonalize(sum P), Q = M^T P^), an
       all-reduce (sum) of Q, wait, and `ptrain.powersgd_finish`: the result alpha P^ Q^T (alpha = 1 for a
       sum, 1 / N for an average over the N members), the residual M - P^ Q^T / N (against the averaged
       approximation) and the warm-start Q = Q / N.

    On the exact path ((n + m) r >= n m: 1-D tensors, small matrices) there is no power step: both codes of
    phase P (which carry M) are all-reduced and finished, the residual becomes zero and the warm start is
    kept. The codec state the start returned (residual, warm-start Q) is produced by the finish instead; the
    `ptrain.state_write`s of it move after the finish. Every other codec (top-k, rand-k, quantization, casts)
    and the pipeline's `ptrain.compress` / `ptrain.decompress` (already one phase each) are left as they
    are. The phases run the runtime's own phase kernels (ptrain_powersgd_phase_p/q/finish_f32), so the
    expanded plan computes what the unexpanded one does: bit for bit on the in-process executor at dp = 2
    (its plain all-reduce sums in double and rounds once, which for two members is the fp32 sum the
    compressed all-reduce uses); with more members the sums can differ in the last bit.

    Errors: a start whose request is not used by exactly one `ptrain.wait` in its block, a use of its new
    state before that wait other than a `ptrain.state_write`, and a read or write of such a state between
    the start and the wait.

    ```mlir
    // before
    %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q0) on @grid axes [dp] reduction = avg
        {codec = #ptrain.powersgd<rank = 1>, error_feedback}
        : tensor<4x4xf32> state(tensor<4x4xf32>, tensor<4x1xf32>) -> state(tensor<4x4xf32>, tensor<4x1xf32>)
    %out = ptrain.wait %r : !ptrain.request<tensor<4x4xf32>>
    // after
    %m, %p, %q = ptrain.powersgd_phase_p %g residual(%e) warm_start_q(%q0) {codec = #ptrain.powersgd<rank = 1>}
        : tensor<4x4xf32> residual(tensor<4x4xf32>) warm_start_q(tensor<4x1xf32>)
        -> tensor<4x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>
    %rp = ptrain.all_reduce_start %p on @grid axes [dp] reduction = sum : tensor<4x1xf32>
    %ps = ptrain.wait %rp : !ptrain.request<tensor<4x1xf32>>
    %ph, %qi = ptrain.powersgd_phase_q %m, %ps {codec = #ptrain.powersgd<rank = 1>}
        : tensor<4x4xf32>, tensor<4x1xf32> -> tensor<4x1xf32>, tensor<4x1xf32>
    %rq = ptrain.all_reduce_start %qi on @grid axes [dp] reduction = sum : tensor<4x1xf32>
    %qs = ptrain.wait %rq : !ptrain.request<tensor<4x1xf32>>
    %out, %e1, %q1 = ptrain.powersgd_finish %ph, %qs, %m {alpha = 5.000000e-01 : f32, beta = 5.000000e-01 : f32,
        codec = #ptrain.powersgd<rank = 1>}
        : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x1xf32>
    ```
  }];
  let dependentDialects = ["::mlir::ptrain::PTrainDialect"];
  let statistics = [
    Statistic<"numExpanded", "expanded", "PowerSGD all-reduces expanded into phases">,
    Statistic<"numExact", "exact-path", "Of those, on the exact path (codes carry M)">,
    Statistic<"numKept", "kept", "Compressed all-reduces of other codecs, left as they are">,
  ];
}

#endif // PTRAIN_TRANSFORMS_EXPANDCODECS_TD
