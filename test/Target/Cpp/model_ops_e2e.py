#!/usr/bin/env python3
"""CTest codegen-cpu-model-ops: the model ops beyond the GPT core, executed through generated code.

    model_ops_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

Emits Inputs/model-ops.mlir with ptrain-translate --emit-cpp, builds it against the runtime (-Wall -Werror) and
calls each function through ctypes on random inputs; the reference interpreter (ptrain-interpret --expect ...
--atol 0) runs the same function on the same inputs and must give the same bits:
  - @dropout_rows: a micro-batch's dropout (batch_rows layout) draws its rows of the whole batch's mask;
  - @dropout: ptrain.dropout at two sites (seed 7, ratio 0.3; seed INT64_MIN, ratio 0.1) and its gradient form,
    for the counters 0, 1 and 2**40 + 3: bit-equal masks and values; the kept fraction is near 1 - ratio, the
    kept values are x / (1 - ratio), and the masks of two counters differ;
  - @masks: i1 tensors from compare (f32, i64, broadcast), and/or/xor, a constant causal mask, select of f32
    and i64;
  - @reduce: sum/mean/max over several axes with and without keepdims, broadcast_to of i64 and f32;
  - @llama: rms_norm over one and two trailing dimensions, rotary_embedding (half-split and interleaved with
    rotary_dim 8 of 16) and its gradient form with -sin, which undoes the rotation within 1e-6.
  - @selection: gather of f32 (axis 1, 2-D indices with a negative one) and i64, log_softmax over the last and a
    middle axis, casts f32 -> i64 (toward zero), i64 -> f32 (2**53 + 1 rounds), i64 -> i1 -> f32, i1 -> i64.
Runs under .venv/bin/python (ort_venv.py: onnx writes the interpreter's inputs). No MPI: the module has no grid.
"""

import ctypes
import os
import sys

import ort_venv

ort_venv.require(sys.argv[2])

import numpy as np
from onnx import numpy_helper

from e2e import check, emitted_library, finish, run, setup

build, source, work, BIN, MODEL = setup(sys.argv)
mlir = os.path.join(source, "test", "Target", "Cpp", "Inputs", "model-ops.mlir")
L = emitted_library(build, source, work, BIN, "model-ops.mlir", "-Wextra")
status = L.ptrain_step_init(MODEL.encode())  # no states
check(status == 0, "ptrain_step_init")
rng = np.random.default_rng(2026)


def compiled_and_interpreted(func, inputs, results):
    """Calls ptrain_step_<func>(inputs..., results...) and checks the interpreter's results are the same bits;
    returns the compiled results."""
    inputs = [np.array(x, order="C") for x in inputs]  # (ascontiguousarray would make rank 0 rank 1)
    outs = [np.zeros(shape, dtype) for shape, dtype in results]
    ptrs = [a.ctypes.data_as(ctypes.c_void_p) for a in inputs + outs]
    status = getattr(L, "ptrain_step_" + func)(*ptrs)
    check(status == 0, f"ptrain_step_{func}" + ("" if status == 0 else f": {L.ptrain_step_last_error().decode()}"))
    cmd = [os.path.join(BIN, "ptrain-interpret"), mlir, "--weights", MODEL, "--entry", func, "--atol", "0"]
    for kind, arrays in (("input", inputs), ("expect", outs)):
        for i, a in enumerate(arrays):
            path = os.path.join(work, f"{func}.{kind}_{i}.pb")
            with open(path, "wb") as f:
                f.write(numpy_helper.from_array(a).SerializeToString())
            cmd += [f"--{kind}", path]
    rc, out = run(cmd)
    oks = out.count(": ok")
    check(rc == 0 and oks == len(outs),
          f"@{func}: the interpreter's {len(outs)} results equal the compiled ones bit for bit (atol 0)"
          + ("" if rc == 0 and oks == len(outs) else ":\n" + out))
    return outs


x = rng.standard_normal((4, 64)).astype(np.float32)
masks = []
for counter in (0, 1, 2**40 + 3):
    a, b, c = compiled_and_interpreted("dropout", [x, np.array(counter, np.int64)], [((4, 64), np.float32)] * 3)
    for y, ratio in ((a, 0.3), (b, np.float32(0.1))):
        kept = y != 0
        scale = np.float32(1.0 / (1.0 - float(ratio)))
        check(abs(kept.mean() - (1 - ratio)) < 0.08 and np.array_equal(y[kept], (x[kept].astype(np.float64) * (
            1.0 / (1.0 - float(ratio)))).astype(np.float32)),
              f"dropout counter {counter} ratio {float(ratio):.2f}: kept {kept.mean():.3f}, kept values x / (1 - ratio)"
              f" (scale {scale})")
    check(np.array_equal(c != 0, a != 0), f"dropout counter {counter}: its gradient form uses the same mask")
    masks.append(a != 0)
check(not np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2]),
      "dropout: the counters 0, 1, 2**40 + 3 draw different masks")

# Micro-batch rows: counter 1 + 2^32 r on rows [r, r + 2) of x draws those rows of the whole batch's mask at step 1.
whole = compiled_and_interpreted("dropout", [x, np.array(1, np.int64)], [((4, 64), np.float32)] * 3)[0]
for r in (0, 2):
    (rows,) = compiled_and_interpreted("dropout_rows", [x[r:r + 2].copy(), np.array(1 + (r << 32), np.int64)],
                                       [((2, 64), np.float32)])
    check(np.array_equal(rows, whole[r:r + 2]), f"dropout rows {r}-{r + 1} (batch_rows layout): the whole batch's rows")

a = rng.standard_normal((2, 8)).astype(np.float32)
b = rng.standard_normal(8).astype(np.float32)
a[0, 3] = b[3]  # a tie for le/lt
i = rng.integers(0, 6, (2, 8)).astype(np.int64)
s, si, masked = compiled_and_interpreted("masks", [a, b, i], [((2, 8), np.float32), ((2, 8), np.int64),
                                                              ((2, 8, 8), np.float32)])
orm = ((a < b) & ~(i >= 3)) | (i == 3)
check(np.array_equal(s, np.where(orm > (a <= b), a, b)) and np.array_equal(si, np.where(orm, i, -1)),
      "masks: compare/and/or/xor/select equal numpy's")
check(np.array_equal(masked, np.where(np.tril(np.ones((8, 8), bool)), a[:, None, :], np.float32(-3.4028235e38))),
      "masks: the constant causal mask selects the lower triangle")

xr = rng.standard_normal((3, 4, 5)).astype(np.float32)
ir = rng.integers(-5, 5, (4, 1)).astype(np.int64)
outs = compiled_and_interpreted("reduce", [xr, ir], [((3, 1, 1), np.float32), ((4,), np.float32),
                                                     ((3, 4), np.float32), ((2, 4, 3), np.int64),
                                                     ((2, 3, 4, 5), np.float32)])
x64 = xr.astype(np.float64)
check(np.allclose(outs[0], x64.sum((1, 2), keepdims=True), rtol=1e-6) and
      np.allclose(outs[1], x64.mean((0, 2)), rtol=1e-6) and np.array_equal(outs[2], xr.max(2)) and
      np.array_equal(outs[3], np.broadcast_to(ir, (2, 4, 3))) and np.array_equal(outs[4], np.broadcast_to(xr, (2, 3, 4, 5))),
      "reduce / broadcast_to equal numpy's")

xl = rng.standard_normal((2, 4, 16)).astype(np.float32)
g = rng.standard_normal(16).astype(np.float32)
g2 = rng.standard_normal((4, 16)).astype(np.float32)
q = rng.standard_normal((2, 3, 4, 16)).astype(np.float32)
angle = rng.uniform(-3, 3, (2, 4, 8))
angle4 = rng.uniform(-3, 3, (2, 4, 4))
tables = [np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32), np.cos(angle4).astype(np.float32),
          np.sin(angle4).astype(np.float32)]
r1, r2, q1, q2, back = compiled_and_interpreted("llama", [xl, g, g2, q, *tables],
                                                [((2, 4, 16), np.float32)] * 2 + [((2, 3, 4, 16), np.float32)] * 3)
x64 = xl.astype(np.float64)
ref1 = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * g
ref2 = x64 / np.sqrt((x64 ** 2).mean((1, 2), keepdims=True) + 1e-5) * g2
check(np.allclose(r1, ref1, rtol=1e-6, atol=1e-6) and np.allclose(r2, ref2, rtol=1e-6, atol=1e-6),
      "rms_norm equals numpy's over one and two trailing dimensions")
c, sn = tables[0].astype(np.float64)[:, None], tables[1].astype(np.float64)[:, None]
q64 = q.astype(np.float64)
half = np.concatenate([q64[..., :8] * c - q64[..., 8:] * sn, q64[..., 8:] * c + q64[..., :8] * sn], -1)
check(np.allclose(q1, half, rtol=1e-6, atol=1e-6), "rotary_embedding (half-split) equals numpy's")
check(np.array_equal(q2[..., 8:], q[..., 8:]), "rotary_embedding rotary_dim 8: channels 8..15 pass through")
err = float(np.abs(back - q).max())
check(err < 1e-6, f"rotary_embedding with -sin undoes the rotation (max error {err:.1e})")

xs = rng.standard_normal((3, 4, 5)).astype(np.float32)
idx = np.array([[0, 3], [-1, 2]], np.int64)
n = np.array([0, -7, 5, 2**53 + 1, 1, -(2**40)], np.int64)
g, gi, ls, ls1, xi, nf, nmf, xmi = compiled_and_interpreted(
    "selection", [xs, idx, n], [((3, 2, 2, 5), np.float32), ((2, 2), np.int64), ((3, 4, 5), np.float32),
                                ((3, 4, 5), np.float32), ((3, 4, 5), np.int64), ((6,), np.float32), ((6,), np.float32),
                                ((3, 4, 5), np.int64)])
check(np.array_equal(g, np.take(xs, idx, axis=1)) and np.array_equal(gi, np.take(n, idx, axis=0)),
      "gather (f32 axis 1, i64 axis 0, a negative index) equals numpy's take")
x64 = xs.astype(np.float64)
for y, axis in ((ls, -1), (ls1, 1)):
    ref = x64 - x64.max(axis, keepdims=True)
    ref -= np.log(np.exp(ref).sum(axis, keepdims=True))
    check(np.allclose(y, ref, rtol=0, atol=1e-6), f"log_softmax axis {axis} equals numpy's within 1e-6")
scaled = xs * np.float32(3.7)
check(np.array_equal(xi, np.trunc(scaled).astype(np.int64)) and np.array_equal(nf, n.astype(np.float32))
      and np.array_equal(nmf, (n != 0).astype(np.float32)) and np.array_equal(xmi, (xi != 0).astype(np.int64)),
      "cast f32 -> i64 truncates, i64 -> f32 rounds, i64 -> i1 -> f32 and i64 -> i1 -> i64 are != 0")
finish()
