"""Parameters of runs at different rank counts compared in a regime where rounding is not amplified (issue 20).

Why not AdamW: its update g / (sqrt(v) + eps) is scale-free, so where a gradient is within its rounding noise
(|g| ~ 1e-9), a last-bit difference of a sum (another tp split, another BLAS kernel: OpenBLAS's Haswell and
SkylakeX GEMMs group their sums otherwise) flips a step of size lr. After 3 steps at lr 1e-3 such entries
differ by up to ~2e-4 while the rest agree to 1e-8: a tolerance of 1e-4 passed on AVX2 machines and failed on
AVX-512 ones (1.587e-4). It measured the BLAS kernel, not the tp slicing.

The plans compared here train with SGD (SGD_FLAGS: heavy-ball momentum MU, no weight decay, peak lr LR). Per
entry, theta_T = theta_0 - sum_t lr_t b_t with b_t = MU b_(t-1) + g_t: linear in the gradients. Two runs whose
gradients differ by dg_t end with

    |d theta_T| <= sum_t lr_t sum_(s<=t) MU^(t-s) |dg_s|  +  T ulp(theta_T)          (1)
    |d b_T|     <= sum_(s<=T) MU^(T-s) |dg_s|            +  T ulp(b_T)               (2)

(the ulp terms: each step rounds theta and b to f32 and may round the other way in the other run; the effect of
d theta ~ 1e-8 on later gradients, H d theta, is second order). dg is rounding only: the f32 rounding of a sum
of n terms is at most gamma_n sum|terms| (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
2002, eq. 3.5), gamma_n = n u / (1 - n u), u = 2^-24. The longest sums are the weight gradients over the
n = 16 x 64 = 1024 tokens of a step: both runs together 2 gamma_n = 1.2e-4 of sum|terms|. The first sum of (1)
is the same linear combination as the displacement theta_T - theta_0 itself, so relative to the tensor's largest
displacement D = max |theta_T - theta_0| (and of (2) relative to max |b_T|) the bound is GRAD_NOISE = 1e-3: 2
gamma_n, allowing sum|terms| up to 8 x the largest |g| of the tensor (cancellation inside a sum). Per entry:

    |got - ref| <= GRAD_NOISE * D + T * ulp(|ref|)                                    (3)

A wrong slice compares the gradients of other rows or columns: off by the order of D itself, 1000 x
GRAD_NOISE D (and far more where the initial values were sliced wrongly: the weights' own size, 1e-2 against
D ~ 1e-3 at LR 0.05). Measured (AMD EPYC with AVX-512, OpenBLAS SkylakeX and Haswell kernels): the worst entry
uses a few percent of (3); tensor_parallel_e2e.py checks, as a control, that comparing each tp rank's part
against the other rank's part of the reference exceeds (3) by far.
"""

import numpy as np

MU, LR = 0.9, 0.05
SGD_FLAGS = ["--optimizer", "sgd", "--momentum", str(MU), "--weight-decay", "0", "--lr", str(LR)]
GRAD_NOISE = 1e-3  # of the tensor's largest displacement (or momentum buffer): 2 gamma_1024 with room 8 (above)


def bound_use(got, ref, init, steps):
    """How much of bound (3) the worst entry of one tensor uses: max |got - ref| / (GRAD_NOISE D + steps ulp(ref))
    with D = max |ref - init| (init None: the state starts at zero, a momentum buffer); <= 1 is within the bound.
    Also returns the worst |got - ref|. Arrays of one shape (flattened f32)."""
    got, ref = np.asarray(got, np.float32).ravel(), np.asarray(ref, np.float32).ravel()
    start = np.zeros_like(ref) if init is None else np.asarray(init, np.float32).ravel()
    diff = np.abs(got.astype(np.float64) - ref)
    scale = float(np.abs(ref.astype(np.float64) - start).max()) if ref.size else 0.0
    bound = GRAD_NOISE * scale + steps * np.spacing(np.abs(ref)).astype(np.float64)
    return (float((diff / bound).max()) if ref.size else 0.0), (float(diff.max()) if ref.size else 0.0)
