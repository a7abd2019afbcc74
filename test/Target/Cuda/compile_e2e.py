"""The CUDA target without a GPU (CTest `codegen-cuda-compile`, PTRAIN_ENABLE_CUDA only; docs/CodegenCuda.md).

1. ptrain-compile --target cuda of the bundled GPT (AdamW): step.cu is emitted and nvcc builds libstep.so for
   sm_80 and sm_90 (its fat binary names both), every shared library it needs resolves (ldd), it exports the
   entry points of the CPU target, and plan.json is the CPU plan's with "target": "cuda".
2. ptrain-run on that plan: without a usable GPU, exit 1 with the device error of ptrain_step_init
   (cudaErrorInsufficientDriver without a driver, or no device), no traceback; with a GPU, the "not yet
   supported" error of the launcher.
(The options --target cuda refuses are lit tests: test/Target/Cuda/ptrain-compile-cuda-errors.test.)

Usage: compile_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import time

ENTRY_POINTS = ("ptrain_step_init", "ptrain_step_save", "ptrain_step_load", "ptrain_step_train_step",
                "ptrain_step_forward", "ptrain_step_states", "ptrain_step_num_states", "ptrain_step_last_error")


def fatbin_archs(lib, scratch_file):
    """The GPU architectures of the ELF images in lib's .nv_fatbin section (there is no cuobjdump here): a
    sequence of fat binaries, each a header (magic 0xBA55ED50, version, header size, payload size) and entries
    (kind 2 = ELF, header size, payload size, ..., the SM version at byte 28 of the entry)."""
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", lib, scratch_file], check=True)
    data = open(scratch_file, "rb").read()
    archs, offset = set(), 0
    while offset + 16 <= len(data):
        magic, _, header, size = struct.unpack_from("<IHHQ", data, offset)
        if magic != 0xBA55ED50:
            break
        entry = offset + header
        while entry < offset + header + size:
            kind, _, entry_header, entry_size = struct.unpack_from("<HHIQ", data, entry)
            if kind == 2:
                archs.add(f"sm_{struct.unpack_from('<I', data, entry + 28)[0]}")
            entry += entry_header + entry_size
        offset += header + size
        offset = (offset + 7) // 8 * 8
    return sorted(archs)


def compile_cmd(build, source, out, *extra):
    return [os.path.join(build, "bin", "ptrain-compile"), os.path.join(source, "models/gpt/gpt.onnx"),
            "-o", out, *extra]


def main(build, source, scratch):
    failures = []
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)

    # --- 1. The bundled GPT's step through nvcc.
    out = os.path.join(scratch, "cuda")
    start = time.time()
    subprocess.run(compile_cmd(build, source, out, "--target", "cuda", "--lr", "1e-3"), check=True)
    print(f"ptrain-compile --target cuda: {time.time() - start:.1f} s (import, step, --emit-cuda, nvcc)")
    for name in ("step.cu", "libstep.so", "plan.json"):
        if not os.path.isfile(os.path.join(out, name)):
            failures.append(f"{name} missing")
    if os.path.exists(os.path.join(out, "step.cpp")):
        failures.append("step.cpp written for --target cuda")
    lib = os.path.join(out, "libstep.so")
    archs = fatbin_archs(lib, os.path.join(scratch, "fatbin.bin"))
    print(f"fat binary of libstep.so: ELF images for {archs}")
    if not {"sm_80", "sm_90"} <= set(archs):
        failures.append(f"libstep.so's fat binary has images for {archs}, not sm_80 and sm_90")
    ldd = subprocess.run(["ldd", lib], capture_output=True, text=True, check=True).stdout
    missing = [line.strip() for line in ldd.splitlines() if "not found" in line]
    if missing:
        failures.append(f"libstep.so: unresolved libraries {missing}")
    for needed in ("libptrain_runtime_cuda.so", "libcublas", "libcudart"):
        if needed not in ldd:
            failures.append(f"libstep.so does not link {needed}")
    symbols = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    for entry in ENTRY_POINTS:
        if f" {entry}\n" not in symbols + "\n":
            failures.append(f"libstep.so does not export {entry}")
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    if plan.get("target") != "cuda" or plan.get("batch") != 4 or plan.get("seq") != 64 or plan.get("vocab") != 256:
        failures.append(f"plan.json: target {plan.get('target')}, batch {plan.get('batch')}, seq {plan.get('seq')}")
    states = len(plan.get("states", []))
    print(f"plan.json: target {plan['target']}, {states} states")
    source_text = open(os.path.join(out, "step.cu")).read()
    if source_text.count("ptrain_cuda_gemm_f32(") < 12 or '"/blocks.0/attn/MatMul"' not in source_text:
        failures.append("step.cu: fewer than 12 cuBLAS GEMMs or no ONNX node locations")

    # --- 2. ptrain-run on a CUDA plan.
    run = subprocess.run([os.path.join(build, "bin", "ptrain-run"), out, "--data", os.path.join(scratch, "none"),
                          "--steps", "1"], capture_output=True, text=True)
    message = (run.stdout + run.stderr).strip()
    print(f"ptrain-run on the CUDA plan: exit {run.returncode}: {message}")
    if run.returncode != 1 or "Traceback" in message:
        failures.append(f"ptrain-run: exit {run.returncode}, expected 1 without a traceback")
    if not any(s in message for s in ("cudaErrorInsufficientDriver", "cudaErrorNoDevice", "no CUDA device",
                                      "not yet supported")):
        failures.append("ptrain-run: the message names neither the device error nor 'not yet supported'")

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
