"""One training step of the bundled GPT on a GPU against the CPU step (CTest `codegen-cuda-gpu`; exits 77, a
skip, without a usable GPU; docs/CodegenCuda.md).

1. --optimizer none: the CUDA step's loss and all 52 gradients against the CPU step's on
   models/gpt/test_data_set_0/input_0.pb, within 1e-4 relative (max|a - b| / max|b| per tensor); the same
   with the cross-entropy's options (--class-weights w[c] = 0.5 + 0.25 (c mod 5) and --ignore-index the
   batch's most frequent target: the weighted kernels of ModelCrossEntropy.cu).
2. --optimizer adamw (lr 1e-3, warm-up 1): three steps on that batch, each loss within 1e-4 relative of the
   CPU's; the parameters after them (ptrain_step_pull_states) within 1e-4 relative; a checkpoint saved before
   the steps and loaded back reproduces the first step's loss exactly; a corrupt checkpoint is refused.
3. --optimizer sgd --momentum 0.9 --clip-norm 0.5 (global-norm clipping: sum_squares / clip_scale on the
   device, the scale applied to every gradient; SGD with momentum and weight decay): three steps, each loss and
   the parameters after them within 1e-4 relative of the CPU's.
4. Codecs (docs/CodegenCuda.md, "Codecs"): test/Target/Cuda/emit-cuda-codecs.mlir (PowerSGD with error
   feedback and warm start, top-k at ratio 1 (the identity), rand-k, 2/4/8-bit quantization, bf16 with error
   feedback, fp16) through --emit-cpp + c++ and --emit-cuda + nvcc, each function called three times on the
   same random inputs so the codec states evolve: the identity returns its input bit for bit; every other
   output and every codec state (residual, warm-start Q, rand-k counter) after the calls equals the CPU's bit
   for bit, except PowerSGD's (cuBLAS sums in another order), within 1e-4 relative. A pipeline plan with
   codecs needs 2 GPUs (NCCL: one rank per device): test/Target/Cuda/gpu_multirank_e2e.py.
5. Masks and the LLaMA-style ops (docs/CodegenCuda.md): test/Target/Cpp/Inputs/model-ops.mlir's @masks,
   @llama, @dropout and @dropout_rows through --emit-cpp + c++ and --emit-cuda + nvcc on the same random
   inputs (dropout at the counters 0, 1 and 2**40 + 3; a row-packed counter): every result bit-equal to the
   CPU's (the GPU draws the CPU's dropout mask), except rms_norm's (a tree sum of squares), within 1e-6
   relative.
6. The LLaMA-style fixture (test/Import/ONNX/opset18+/Inputs/llama_tiny.onnx, --signature auto) with
   --optimizer none: the CUDA step's loss and every gradient against the CPU step's on one random batch,
   within 1e-4 relative.
7. The Hugging Face GPT-2 exported in training mode (test/Import/ONNX/Inputs/exports/gpt2-opset17-training.onnx:
   7 dropouts drawn on the device, the bool causal mask selected by Where), --optimizer none: the loss and
   every gradient against the CPU step's within 1e-4 relative (the masks must be the CPU's for that).

Usage: gpu_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import ctypes
import json
import os
import subprocess
import sys
import types

import numpy as np
import onnx
from onnx import numpy_helper

TOLERANCE = 1e-4
SKIP = 77


class StateDesc(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("kind", ctypes.c_int32), ("rank", ctypes.c_int32), ("dims", ctypes.POINTER(ctypes.c_int64)),
                ("init", ctypes.c_int32), ("init_seed", ctypes.c_uint64)]  # ptrain_state_desc_t


def gpu_count(build):
    rt = ctypes.CDLL(os.path.join(build, "lib/Runtime/cuda/libptrain_runtime_cuda.so"))
    count = ctypes.c_int32(0)
    return count.value if rt.ptrain_cuda_device_count(ctypes.byref(count)) == 0 else 0


def compile_step(build, source, out, target, *extra, model="models/gpt/gpt.onnx"):
    subprocess.run([os.path.join(build, "bin", "ptrain-compile"), os.path.join(source, model),
                    "--target", target, "-o", out, *extra], check=True)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    lib = ctypes.CDLL(os.path.join(out, "libstep.so"))
    lib.ptrain_step_last_error.restype = ctypes.c_char_p
    lib.ptrain_step_states.restype = ctypes.POINTER(StateDesc)
    lib.ptrain_step_num_states.restype = ctypes.c_int64
    return plan, lib


def check(lib, status, what):
    if status != 0:
        raise SystemExit(f"FAIL: {what}: status {status}: {lib.ptrain_step_last_error().decode()}")


def f32p(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def relative(got, want):
    scale = float(np.max(np.abs(want)))
    return float(np.max(np.abs(got - want))) / (scale if scale > 0 else 1.0)


def parameters(lib):
    """Every f32 parameter of the step's state table (a copy), by key."""
    table = lib.ptrain_step_states()
    out = {}
    for i in range(lib.ptrain_step_num_states()):
        d = table[i]
        if d.kind != 0 or d.dtype != 0:
            continue
        n = int(np.prod([d.dims[j] for j in range(d.rank)])) if d.rank else 1
        out[d.key.decode()] = np.ctypeslib.as_array(ctypes.cast(d.data, ctypes.POINTER(ctypes.c_float)),
                                                    shape=(n,)).copy()
    return out


# The functions of emit-cuda-codecs.mlir: (name, number of 4 x 64 x 128 results, bit-exact on CUDA, the codec
# states it updates).
CODEC_FUNCTIONS = (("powersgd", 1, False, ("link/residual", "link/warm_start_q")), ("topk", 1, True, ()),
                   ("randk", 1, True, ("link/counter",)), ("quant", 3, True, ()), ("cast", 2, True, ("link/residual",)))


def states(lib):
    """Every state of the step's table (a copy, as float64), by key."""
    table = lib.ptrain_step_states()
    out = {}
    for i in range(lib.ptrain_step_num_states()):
        d = table[i]
        n = int(np.prod([d.dims[j] for j in range(d.rank)])) if d.rank else 1
        ctype = ctypes.c_float if d.dtype == 0 else ctypes.c_int64
        out[d.key.decode()] = np.ctypeslib.as_array(ctypes.cast(d.data, ctypes.POINTER(ctype)),
                                                    shape=(n,)).astype(np.float64)
    return out


def build_codec_steps(build, source, scratch, module="test/Target/Cuda/emit-cuda-codecs.mlir", name="codecs"):
    """A module (emit-cuda-codecs.mlir) as a CPU and a CUDA library (ptrain-compile's nvcc command)."""
    from ptrain.compile import build_cuda_library
    module = os.path.join(source, module)
    runtime, include = os.path.join(build, "lib", "Runtime"), os.path.join(source, "include")
    out = os.path.join(scratch, name)
    os.makedirs(out, exist_ok=True)
    translate = os.path.join(build, "bin", "ptrain-translate")
    cpp, cu = os.path.join(out, "step.cpp"), os.path.join(out, "step.cu")
    subprocess.run([translate, "--emit-cpp", module, "-o", cpp,
                    "--emit-cpp-constants=" + os.path.join(out, "step.consts.bin")], check=True)
    # Each target's constant file beside its library (the CUDA target keeps one copy per value, so the files differ).
    subprocess.run([translate, "--emit-cuda", module, "-o", cu,
                    "--emit-cuda-constants=" + os.path.join(out, "step.cu.consts.bin")], check=True)
    subprocess.run(["c++", "-std=c++17", "-O2", "-shared", "-fPIC", f"-I{include}", cpp, "-o",
                    os.path.join(out, "libcpu.so"), f"-L{runtime}", "-lptrain_runtime", f"-Wl,-rpath,{runtime}"],
                   check=True)
    build_cuda_library(types.SimpleNamespace(nvcc=None), cu, os.path.join(out, "libcuda.so"), runtime, include)
    libs = {}
    for target in ("cpu", "cuda"):
        lib = ctypes.CDLL(os.path.join(out, f"lib{target}.so"))
        lib.ptrain_step_last_error.restype = ctypes.c_char_p
        lib.ptrain_step_states.restype = ctypes.POINTER(StateDesc)
        lib.ptrain_step_num_states.restype = ctypes.c_int64
        lib.ptrain_step_init.argtypes = [ctypes.c_char_p]
        libs[target] = lib
    return libs


def compare_codec_telemetry(name, cuda, cpu, exact):
    """The codec telemetry of the three calls (ptrain_step_codec_telemetry: per site compressions, mean error,
    last residual norm, mean LEP cosine, cosines, mean input norm): the CUDA kernel's against the CPU's, the
    counts equal, the values within 1e-9 relative where the codec is bit-exact (the same buffers, fp64 sums in
    another order) and 1e-3 for PowerSGD (its residual within 1e-4)."""
    tolerance = 1e-9 if exact else 1e-3
    print(f"codec {name}: telemetry per site (compressions, error, residual norm, LEP cosine, cosines, input "
          f"norm): cuda {cuda.tolist()} cpu {cpu.tolist()}")
    if not np.array_equal(cuda[0::6], cpu[0::6]) or not np.array_equal(cuda[4::6], cpu[4::6]):
        return [f"codec {name}: telemetry counts differ: cuda {cuda.tolist()} cpu {cpu.tolist()}"]
    worst = float(np.max(np.abs(cuda - cpu) / np.maximum(np.abs(cpu), 1e-30))) if cpu.size else 0.0
    if worst > tolerance:
        return [f"codec {name}: telemetry differs by {worst:.2e} relative (> {tolerance})"]
    return []


def check_codecs(build, source, scratch):
    failures = []
    libs = build_codec_steps(build, source, scratch)
    onnx_file = os.path.join(source, "models/gpt/gpt.onnx").encode()  # no parameter states: all start at zero
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((4, 64, 128)).astype(np.float32) for _ in range(3)]
    for name, results, exact, touched in CODEC_FUNCTIONS:
        got, state = {}, {}
        metrics = {}
        for target, lib in libs.items():
            check(lib, lib.ptrain_step_init(onnx_file), f"codecs {target} init")  # fresh codec states
            check(lib, lib.ptrain_step_set_telemetry(2), f"codecs {target} telemetry on")
            got[target] = []
            for g in inputs:
                outs = [np.zeros((4, 64, 128), np.float32) for _ in range(results)]
                check(lib, getattr(lib, f"ptrain_step_{name}")(f32p(g), *[f32p(o) for o in outs]), f"{target} {name}")
                got[target].append(outs)
            if target == "cuda":
                check(lib, lib.ptrain_step_pull_states(), "codecs cuda pull_states")
            state[target] = states(lib)
            metrics[target] = np.zeros(6 * lib.ptrain_step_num_codec_sites())
            check(lib, lib.ptrain_step_codec_telemetry(metrics[target].ctypes.data_as(ctypes.c_void_p)),
                  f"codecs {target} telemetry")
        failures += compare_codec_telemetry(name, metrics["cuda"], metrics["cpu"], exact)
        if "link/residual" in touched and not metrics["cpu"][0::6].sum():
            failures.append(f"codec {name}: no compression measured at its error-feedback site")
        pairs = [(a, b) for call_c, call_p in zip(got["cuda"], got["cpu"]) for a, b in zip(call_c, call_p)]
        pairs += [(state["cuda"][k], state["cpu"][k]) for k in touched]
        worst = max(relative(a, b) for a, b in pairs)
        equal = all(np.array_equal(a, b) for a, b in pairs)
        print(f"codec {name}: outputs of 3 calls and states {list(touched)}, CUDA vs CPU: "
              f"{'bit-equal' if equal else f'max relative {worst:.2e}'}")
        if (exact and not equal) or not worst <= TOLERANCE:
            failures.append(f"codec {name}: CUDA differs from the CPU (max relative {worst:.2e})")
        for k in touched:
            if not np.any(state["cpu"][k]):
                failures.append(f"codec {name}: the state {k} was never updated")
        if name == "topk" and not all(np.array_equal(o[0], g) for o, g in zip(got["cuda"], inputs)):
            failures.append("codec topk at ratio 1 (the identity) changed its input on CUDA")
    return failures


def check_model_ops(build, source, scratch):
    """Section 5: model-ops.mlir's mask, LLaMA-style and dropout functions, CUDA against CPU."""
    failures = []
    libs = build_codec_steps(build, source, scratch, "test/Target/Cpp/Inputs/model-ops.mlir", "model-ops")
    onnx_file = os.path.join(source, "models/gpt/gpt.onnx").encode()  # the module has no states
    for target, lib in libs.items():
        check(lib, lib.ptrain_step_init(onnx_file), f"model-ops {target} init")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    a, b = rng.standard_normal((2, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    a[0, 3] = b[3]  # a tie
    angle, angle4 = rng.uniform(-3, 3, (2, 4, 8)), rng.uniform(-3, 3, (2, 4, 4))
    f32 = lambda v: np.asarray(v, np.float32)
    calls = [("dropout", [x, np.array(c, np.int64)], [((4, 64), np.float32)] * 3, ()) for c in (0, 1, 2**40 + 3)]
    calls += [("dropout_rows", [x[2:4].copy(), np.array(1 + (2 << 32), np.int64)], [((2, 64), np.float32)], ()),
              ("masks", [a, b, rng.integers(0, 6, (2, 8)).astype(np.int64)],
               [((2, 8), np.float32), ((2, 8), np.int64), ((2, 8, 8), np.float32)], ()),
              ("llama", [rng.standard_normal((2, 4, 16)).astype(np.float32), f32(rng.standard_normal(16)),
                         f32(rng.standard_normal((4, 16))), f32(rng.standard_normal((2, 3, 4, 16))),
                         f32(np.cos(angle)), f32(np.sin(angle)), f32(np.cos(angle4)), f32(np.sin(angle4))],
               [((2, 4, 16), np.float32)] * 2 + [((2, 3, 4, 16), np.float32)] * 3, (0, 1))]
    for func, inputs, results, tolerant in calls:
        inputs = [np.array(v, order="C") for v in inputs]
        got = {}
        for target, lib in libs.items():
            outs = [np.zeros(shape, dtype) for shape, dtype in results]
            ptrs = [v.ctypes.data_as(ctypes.c_void_p) for v in inputs + outs]
            check(lib, getattr(lib, f"ptrain_step_{func}")(*ptrs), f"{target} {func}")
            got[target] = outs
        for k, (c, p) in enumerate(zip(got["cuda"], got["cpu"])):
            exact = np.array_equal(c.view(np.uint8), p.view(np.uint8))
            err = relative(c.astype(np.float64), p.astype(np.float64))
            what = f"@{func} result {k}" + (f" (counter {int(inputs[1])})" if func == "dropout" else "")
            print(f"model ops {what}: CUDA vs CPU {'bit-equal' if exact else f'max relative {err:.2e}'}")
            if not exact and (k not in tolerant or not err <= 1e-6):
                failures.append(f"model ops {what}: CUDA differs from the CPU (max relative {err:.2e})")
        if func == "dropout" and not 0 < np.mean(got["cuda"][0] == 0) < 0.6:
            failures.append(f"model ops @dropout: the CUDA mask drops {np.mean(got['cuda'][0] == 0):.2f} of x")
    return failures


def compare_gradients(build, source, scratch, name, batch, *extra, model="models/gpt/gpt.onnx"):
    """One step with --optimizer none on both targets (`batch(plan)`: the int64 tokens): the CUDA loss and every
    gradient against the CPU's within TOLERANCE relative (max|a - b| / max|b| per tensor)."""
    failures = []
    results = {}
    for target in ("cpu", "cuda"):
        plan, lib = compile_step(build, source, os.path.join(scratch, f"{name}-none-{target}"), target, "--optimizer",
                                 "none", *extra, model=model)
        check(lib, lib.ptrain_step_init(None), f"{name} {target} init")
        tokens = np.ascontiguousarray(batch(plan), np.int64)
        outs = [np.zeros(r["shape"], np.float32) for r in plan["train_step_results"]]
        check(lib, lib.ptrain_step_train_step(tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                                              *[f32p(o) for o in outs]), f"{name} {target} train_step")
        results[target] = (plan, outs)
    plan, cpu = results["cpu"]
    cuda = results["cuda"][1]
    loss_err = relative(cuda[0], cpu[0])
    print(f"{name} loss: cuda {float(cuda[0]):.8f} cpu {float(cpu[0]):.8f} relative {loss_err:.2e}")
    if not loss_err <= TOLERANCE:
        failures.append(f"{name}: loss relative error {loss_err:.2e}")
    errors = [(relative(got, want), r["grad_of"]) for r, got, want in
              zip(plan["train_step_results"][1:], cuda[1:], cpu[1:])]
    worst = max(errors)
    print(f"{name}: {len(errors)} gradients: max relative error {worst[0]:.2e} ({worst[1]})")
    failures += [f"{name}: gradient of {key}: relative error {err:.2e}" for err, key in errors if not err <= TOLERANCE]
    return failures


def check_llama(build, source, scratch):
    """Section 6: the LLaMA-style fixture's loss and gradients, CUDA against CPU, on one random batch."""
    return compare_gradients(
        build, source, scratch, "llama",
        lambda plan: np.random.default_rng(5).integers(0, plan["vocab"], (plan["batch"], plan["seq"])),
        "--import-options", "--signature auto", model="test/Import/ONNX/opset18+/Inputs/llama_tiny.onnx")

def compare_three_steps(build, source, scratch, tok_p, name, options, checkpoint=False):
    """Three steps of the step compiled with `options` for both targets: each loss and the parameters after
    them, CUDA against CPU within TOLERANCE; with `checkpoint`, a checkpoint round trip and a corrupt one."""
    failures = []
    losses, params = {}, {}
    for target in ("cpu", "cuda"):
        _, lib = compile_step(build, source, os.path.join(scratch, f"{name}-{target}"), target, *options)
        check(lib, lib.ptrain_step_init(None), f"{target} init")
        ckpt = os.path.join(scratch, f"{name}-{target}", "before.ckpt").encode()
        if checkpoint:
            check(lib, lib.ptrain_step_save(ckpt), f"{target} save")
        losses[target] = []
        for _ in range(3):
            out = np.zeros((), np.float32)
            check(lib, lib.ptrain_step_train_step(tok_p, f32p(out)), f"{target} {name} step")
            losses[target].append(float(out))
        if target == "cuda":
            check(lib, lib.ptrain_step_pull_states(), "cuda pull_states")
        params[target] = parameters(lib)
        if target == "cuda" and checkpoint:
            check(lib, lib.ptrain_step_load(ckpt), "cuda load")
            out = np.zeros((), np.float32)
            check(lib, lib.ptrain_step_train_step(tok_p, f32p(out)), "cuda step after load")
            if float(out) != losses["cuda"][0]:
                failures.append(f"after loading the checkpoint the CUDA step gave {float(out)}, not "
                                f"{losses['cuda'][0]}")
            data = bytearray(open(ckpt, "rb").read())
            data[len(data) // 2] ^= 0xFF
            open(ckpt, "wb").write(bytes(data))
            if lib.ptrain_step_load(ckpt) == 0:
                failures.append("a corrupt checkpoint was accepted")
    print(f"{name} losses: cuda " + " ".join(f"{v:.6f}" for v in losses["cuda"]) + ", cpu " +
          " ".join(f"{v:.6f}" for v in losses["cpu"]))
    for step, (a, b) in enumerate(zip(losses["cuda"], losses["cpu"])):
        if not abs(a - b) <= TOLERANCE * abs(b):
            failures.append(f"{name} step {step + 1}: loss {a} vs the CPU's {b}")
    param_err = max(relative(params["cuda"][k], params["cpu"][k]) for k in params["cpu"])
    print(f"{name}: parameters after 3 steps: max relative error {param_err:.2e} over {len(params['cpu'])} tensors")
    if not param_err <= TOLERANCE or sorted(params["cuda"]) != sorted(params["cpu"]):
        failures.append(f"{name}: parameters after 3 steps: relative error {param_err:.2e}")
    return failures


def gpt_batch(source):
    """The bundled GPT's test batch (models/gpt/test_data_set_0/input_0.pb) as int64 tokens and their pointer."""
    tokens = numpy_helper.to_array(onnx.load_tensor(os.path.join(source, "models/gpt/test_data_set_0/input_0.pb")))
    tokens = np.ascontiguousarray(tokens.astype(np.int64))
    return tokens, tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))


def main(build, source, scratch):
    if gpu_count(build) < 1:
        print("SKIP: no usable CUDA device (ptrain_cuda_device_count failed or found none)")
        return SKIP
    tokens, tok_p = gpt_batch(source)
    failures = []

    # --- 1. optimizer=none: loss and gradients, CUDA against CPU.
    failures += compare_gradients(build, source, scratch, "gpt", lambda plan: tokens)
    # --- 1b. The cross-entropy's options: class weights and an ignore_index (the most frequent target, so
    # that many positions drop out of the weighted mean), loss and gradients, CUDA against CPU.
    ignore = int(np.bincount(tokens[:, 1:].ravel(), minlength=256).argmax())
    weights_file = os.path.join(scratch, "class-weights.txt")
    with open(weights_file, "w") as f:
        f.write(" ".join(repr(0.5 + 0.25 * (c % 5)) for c in range(256)) + "\n")
    failures += compare_gradients(build, source, scratch, "loss-options", lambda plan: tokens, "--ignore-index",
                                  str(ignore), "--class-weights", weights_file)

    # --- 2. optimizer=adamw: three steps, CUDA against CPU; checkpoints.
    failures += compare_three_steps(build, source, scratch, tok_p, "adamw", ["--optimizer", "adamw", "--lr", "1e-3",
                                    "--warmup-steps", "1", "--total-steps", "100"], checkpoint=True)
    # --- 3. Clipped SGD with momentum: three steps, CUDA against CPU.
    failures += compare_three_steps(build, source, scratch, tok_p, "clipped-sgd",
                                    ["--optimizer", "sgd", "--momentum", "0.9", "--clip-norm", "0.5", "--lr", "1e-2",
                                     "--warmup-steps", "1", "--total-steps", "100"])

    # --- 4. Codecs: every kind, CUDA against CPU, states included.
    failures += check_codecs(build, source, scratch)
    # --- 5. Masks, rms_norm, rotary, dropout: CUDA against CPU, bit for bit but rms_norm.
    failures += check_model_ops(build, source, scratch)
    # --- 6. The LLaMA-style fixture's loss and gradients.
    failures += check_llama(build, source, scratch)
    # --- 7. The GPT-2 training export (dropout, masks): loss and gradients.
    failures += compare_gradients(
        build, source, scratch, "gpt2-training",
        lambda plan: np.random.default_rng(6).integers(0, plan["vocab"], (plan["batch"], plan["seq"])),
        model="test/Import/ONNX/Inputs/exports/gpt2-opset17-training.onnx")

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
