"""The generated kernels on a GPU (CTest `codegen-cuda-gpu-fused`; exits 77, a skip, without a usable GPU;
docs/GeneratedKernels.md, "The CUDA route").

1. test/Target/Cuda/emit-cuda-kernels.mlir built three ways: --emit-cuda with --emit-cuda-kernels=sm_80,sm_90
   (the PTX kernels), --emit-cuda without (the runtime's kernels), and --emit-cpp with --emit-cpp-kernels (the
   CPU's object code of the same kernels). Each function on random inputs with infinities, NaNs, subnormals and
   signed zeros planted. Every PTX kernel (@mlp: bias + GELU + residual; @scores: scale + mask + softmax, a row
   group per thread; @bcast: sub, mul and div with broadcasts and an intermediate output) is bit-equal to the
   CPU's generated kernel: the same operations in the same order (@scores on a causal -inf mask, the others
   with the specials). Against the unfused CUDA step: @bcast
   bit-equal (add, sub, mul and div round alike), @mlp and @scores within 1e-6 relative on the finite values
   with the same non-finite positions (the CUDA runtime's GELU evaluates CUDA's erf, its softmax sums a row as a
   tree); @vector (a 1-D softmax: no GPU kernel, the runtime's calls) bit-equal. Where two NaNs meet, which NaN
   comes out is not promised: NaNs compare by position.
2. The bundled GPT, --target cuda with and without --fuse-elementwise on, three AdamW steps on
   models/gpt/test_data_set_0: the fused step (its attention scores' scale, mask and softmax and their backward
   in generated kernels, the CPU's order of the softmax sums) within 1e-4 relative of the unfused one per loss,
   the tolerance of the CUDA steps against the CPU's (codegen-cuda-gpu).

Usage: gpu_fused_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import ctypes
import os
import subprocess
import sys
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_e2e import SKIP, TOLERANCE, check, compile_step, f32p, gpt_batch, gpu_count, relative  # noqa: E402

BOUND = 1e-6  # the PTX kernels (the CPU's GELU and softmax order) against the CUDA runtime's


def build_three(build, source, scratch):
    """emit-cuda-kernels.mlir as the fused and unfused CUDA libraries and the fused CPU library."""
    from ptrain.compile import build_cuda_library
    module = os.path.join(source, "test/Target/Cuda/emit-cuda-kernels.mlir")
    runtime, include = os.path.join(build, "lib", "Runtime"), os.path.join(source, "include")
    translate = os.path.join(build, "bin", "ptrain-translate")
    out = os.path.join(scratch, "kernels")
    os.makedirs(out, exist_ok=True)
    libs = {}
    for name, flags in (("cuda-fused", ["--emit-cuda-kernels=sm_80,sm_90"]), ("cuda", [])):
        cu = os.path.join(out, f"{name}.cu")
        subprocess.run([translate, "--emit-cuda", module, "-o", cu, *flags], check=True)
        build_cuda_library(types.SimpleNamespace(nvcc=None), cu, os.path.join(out, f"lib{name}.so"), runtime, include)
    cpp, obj = os.path.join(out, "cpu-fused.cpp"), os.path.join(out, "kernels.o")
    subprocess.run([translate, "--emit-cpp", module, "-o", cpp, f"--emit-cpp-kernels={obj}"], check=True)
    subprocess.run(["c++", "-std=c++17", "-O2", "-shared", "-fPIC", f"-I{include}", cpp, obj, "-o",
                    os.path.join(out, "libcpu-fused.so"), f"-L{runtime}", "-lptrain_runtime",
                    f"-Wl,-rpath,{runtime}"], check=True)
    onnx_file = os.path.join(source, "models/gpt/gpt.onnx").encode()  # the module has no states
    for name in ("cuda-fused", "cuda", "cpu-fused"):
        lib = ctypes.CDLL(os.path.join(out, f"lib{name}.so"))
        lib.ptrain_step_last_error.restype = ctypes.c_char_p
        lib.ptrain_step_init.argtypes = [ctypes.c_char_p]
        check(lib, lib.ptrain_step_init(onnx_file), f"{name} init")
        libs[name] = lib
    return libs


def planted(rng, shape):
    """Normal values with an infinity of each sign, a NaN, a subnormal and signed zeros among them."""
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    specials = [np.inf, -np.inf, np.nan, 1e-40, -0.0, 0.0, 3e38]
    for k, v in enumerate(specials):
        if flat.size > 4 * len(specials):
            flat[(k * 7919) % flat.size] = v
    return x


def same_bits(a, b):
    """Bit-equal, any NaN for a NaN."""
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    return np.array_equal(nan_a, nan_b) and np.array_equal(a[~nan_a].view(np.uint32), b[~nan_b].view(np.uint32))


def check_kernels(build, source, scratch):
    failures = []
    libs = build_three(build, source, scratch)
    rng = np.random.default_rng(26)
    calls = [("mlp", [(4, 16), (16,), (4, 16)], [(4, 16)], False),
             ("scores", [(2, 4, 8, 8), (8, 8)], [(2, 4, 8, 8)], False),
             ("vector", [(16,), (16,)], [(16,)], True),
             ("bcast", [(7, 11, 15), (15,), (7, 1, 1)], [(7, 11, 15), (7, 11, 15)], True)]
    for func, inputs, results, exact in calls:
        args = [planted(rng, shape) for shape in inputs]
        if func == "scores":  # a causal mask of -inf (rows fully masked but for their first keys), no other special
            args = [rng.standard_normal(inputs[0]).astype(np.float32),
                    np.triu(np.full((8, 8), -np.inf, np.float32), 1)]
        got = {}
        for name, lib in libs.items():
            outs = [np.zeros(shape, np.float32) for shape in results]
            check(lib, getattr(lib, f"ptrain_step_{func}")(*[f32p(v) for v in args + outs]), f"{name} @{func}")
            got[name] = outs
        for k, fused in enumerate(got["cuda-fused"]):
            unfused = got["cuda"][k]
            vs_cpu, vs_unfused = same_bits(fused, got["cpu-fused"][k]), same_bits(fused, unfused)
            finite = np.isfinite(fused) & np.isfinite(unfused)
            err = relative(fused[finite].astype(np.float64), unfused[finite].astype(np.float64)) if finite.any() else 0
            print(f"@{func} result {k}: fused CUDA vs the CPU's generated kernel "
                  f"{'bit-equal' if vs_cpu else 'DIFFERENT'}; vs the unfused CUDA step "
                  f"{'bit-equal' if vs_unfused else f'max relative {err:.2e}'}")
            if func != "vector" and not vs_cpu:
                failures.append(f"@{func} result {k}: the PTX kernel differs from the CPU's generated kernel")
            if exact and not vs_unfused:
                failures.append(f"@{func} result {k}: the fused CUDA step differs from the unfused one")
            if not exact and not vs_unfused and not (
                    err <= BOUND and np.array_equal(np.isfinite(fused), np.isfinite(unfused))):
                failures.append(f"@{func} result {k}: {err:.2e} relative from the unfused CUDA step (> {BOUND})")
    return failures


def check_gpt(build, source, scratch):
    """Three AdamW steps of the bundled GPT, fused and unfused on CUDA: each loss within TOLERANCE."""
    _, tok_p = gpt_batch(source)
    options = ["--optimizer", "adamw", "--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100"]
    losses = {}
    for name, extra in (("fused", ["--fuse-elementwise", "on"]), ("unfused", [])):
        out = os.path.join(scratch, f"gpt-{name}")
        _, lib = compile_step(build, source, out, "cuda", *options, *extra)
        if name == "fused" and "ptrain_cuda_kernel_launch(" not in open(os.path.join(out, "step.cu")).read():
            return ["gpt: the fused CUDA step launches no generated kernel"]
        check(lib, lib.ptrain_step_init(None), f"gpt {name} init")
        losses[name] = []
        for _ in range(3):
            out_loss = np.zeros((), np.float32)
            check(lib, lib.ptrain_step_train_step(tok_p, f32p(out_loss)), f"gpt {name} step")
            losses[name].append(float(out_loss))
    print("gpt losses: fused " + " ".join(f"{v:.9g}" for v in losses["fused"]) + ", unfused " +
          " ".join(f"{v:.9g}" for v in losses["unfused"]))
    failures = []
    for step, (a, b) in enumerate(zip(losses["fused"], losses["unfused"])):
        if not abs(a - b) <= TOLERANCE * abs(b):
            failures.append(f"gpt step {step + 1}: the fused CUDA step's loss {a} vs the unfused {b}")
    return failures


def main(build, source, scratch):
    if gpu_count(build) < 1:
        print("SKIP: no usable CUDA device (ptrain_cuda_device_count failed or found none)")
        return SKIP
    failures = check_kernels(build, source, scratch) + check_gpt(build, source, scratch)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
