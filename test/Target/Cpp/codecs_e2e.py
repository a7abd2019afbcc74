#!/usr/bin/env python3
"""CTest codegen-cpu-codecs: every codec op the emitter lowers, executed through generated code.

    codecs_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

Emits Inputs/codecs-roundtrip.mlir (one encode + decode function per codec) with ptrain-translate --emit-cpp,
builds it against the runtime and calls it through ctypes on a 4 x 64 tensor with distinct magnitudes:
  - top-k of all values returns the input bit for bit; top-k with ratio 0.25 keeps exactly the 64 largest
    magnitudes and zeroes the rest;
  - rand-k (k 32, seed 7) keeps 32 input values at 32 positions, zeroes the others, advances its counter
    state (0 -> 1 -> 2) and picks other positions on the next call;
  - 8-bit symmetric per-column quantization is within half a step (max |column| / 127 / 2) of every value;
  - the bf16 cast decodes to the round-to-nearest-even bf16 of g + e, and its error-feedback residual is
    g + e - decoded, carried into the next call through the state;
  - PowerSGD on the exact path ((n + m) r >= n m) returns the input bit for bit.
No MPI: the module has no grid.
"""

import ctypes
import struct
import subprocess
import sys

from e2e import check, emitted_library, finish, setup

build, source, work, BIN, MODEL = setup(sys.argv)
L = emitted_library(build, source, work, BIN, "codecs-roundtrip.mlir")
N = 256
F = ctypes.c_float * N


def call(fn, *args):
    status = getattr(L, "ptrain_step_" + fn)(*args)
    check(status == 0, f"ptrain_step_{fn}" + ("" if status == 0 else f": {L.ptrain_step_last_error().decode()}"))


call("init", MODEL.encode())  # the module has no parameter: every state is zeroed
# Distinct magnitudes, mixed signs, a spread of exponents.
g = [((-1) ** i) * (0.01 + ((i * 37) % N) / 17.0) * (1.5 if i % 5 == 0 else 1.0) for i in range(N)]
gin = F(*g)
g = list(gin)  # as f32

out = F()
call("topk_all", gin, out)
check(list(out) == g, "top-k of all 256 values is the input, bit for bit")

call("topk_quarter", gin, out)
keep = set(sorted(range(N), key=lambda i: (-abs(g[i]), i))[:64])
check(all((out[i] == g[i]) if i in keep else (out[i] == 0.0) for i in range(N)),
      "top-k ratio 0.25: exactly the 64 largest magnitudes survive")

counter = ctypes.c_int64()
positions = []
for expect in (1, 2):
    call("randk", gin, out, ctypes.byref(counter))
    kept = [i for i in range(N) if out[i] != 0.0]
    check(len(kept) == 32 and all(out[i] == g[i] for i in kept) and counter.value == expect,
          f"rand-k call {expect}: 32 input values kept, the rest zero, counter {counter.value}")
    positions.append(kept)
check(positions[0] != positions[1], "rand-k: the advanced counter selects other positions")

call("quant8", gin, out)
worst = 0.0
for c in range(64):
    step = max(abs(g[r * 64 + c]) for r in range(4)) / 127.0
    worst = max(worst, max(abs(out[r * 64 + c] - g[r * 64 + c]) / step for r in range(4)))
check(worst <= 0.5 + 1e-4, f"8-bit per-column quantization within half a step (worst {worst:.4f} steps)")


def bf16(x):
    """Round-to-nearest-even of an f32 to bf16, back as a float."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


residual = F()
e = [0.0] * N
for k in range(2):
    call("cast_ef", gin, out, residual)
    v = [f32(g[i] + e[i]) for i in range(N)]
    check(all(out[i] == bf16(v[i]) for i in range(N)), f"bf16 cast call {k + 1}: decoded = bf16(g + e)")
    check(all(residual[i] == f32(v[i] - out[i]) for i in range(N)), f"bf16 cast call {k + 1}: residual = g + e - decoded")
    e = list(residual)
check(any(x != 0.0 for x in e), "the cast's residual is carried (nonzero)")

call("powersgd_exact", gin, out)
check(list(out) == g, "PowerSGD on the exact path returns the input, bit for bit")
finish()
