#!/usr/bin/env python3
"""Independent reference values of unittests/Interpreter/CodecsTest.cpp (numpy, not the runtime's kernels).

Run: python3 unittests/Interpreter/Inputs/codec_reference.py
"""
import numpy as np

np.set_printoptions(precision=9, suppress=True)

# --- Data-parallel PowerSGD, 2 ranks, rank 1, warm-start Q0 = e0, avg, error feedback (Vogels et al. 2019,
# Algorithm 2; residuals e_i = M_i - P Q^T / N, warm-start Q = Q / N as in PyTorch's powerSGD_hook).
g0 = np.array([[1, 2, 0, -1], [0, 1, 3, 2], [2, -1, 1, 0], [1, 0, -2, 1]], dtype=np.float64)
g1 = np.array([[0, 1, 1, 2], [1, -1, 0, 1], [2, 0, 1, -1], [-1, 2, 1, 0]], dtype=np.float64)
q0 = np.array([[1.0], [0.0], [0.0], [0.0]])
p = g0 @ q0 + g1 @ q0                  # all-reduce (sum) of P = M Q0
p_hat = p / np.linalg.norm(p)          # orthogonalize (one column: normalize)
q = g0.T @ p_hat + g1.T @ p_hat        # all-reduce (sum) of Q = M^T P
out = 0.5 * p_hat @ q.T                # avg: alpha = 1 / N
e0 = g0 - 0.5 * p_hat @ q.T            # beta = 1 / N
e1 = g1 - 0.5 * p_hat @ q.T
print("P^ =", p_hat.ravel().tolist())
print("Q (summed) =", q.ravel().tolist())
print("warm-start Q / N =", (q / 2).ravel().tolist())
print("out =", out.ravel().tolist())
print("e0 =", e0.ravel().tolist())
print("e1 =", e1.ravel().tolist())

# --- Rand-k positions (lib/Runtime/cpu/codecs/RandK.cpp's rule, reimplemented).
M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def splitmix(x):
    while True:
        x = (x + GAMMA) & M64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def randk_positions(seed, counter, n, k):
    gen = splitmix(seed ^ ((GAMMA * (counter + 1)) & M64))
    taken = set()
    for j in range(n - k, n):
        t = (next(gen) * (j + 1)) >> 64
        taken.add(j if t in taken else t)
    return sorted(taken)


print("randk seed 7 n 8 k 3: counter 0", randk_positions(7, 0, 8, 3), "counter 1", randk_positions(7, 1, 8, 3))
