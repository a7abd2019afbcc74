"""ptrain-run's plan (python/ptrain/run.py): out/plan.json and out/libstep.so, checked before any rank loads them:
the keys a pipeline plan has, a whole 64-bit ELF library, plan.json equal to the plan embedded in libstep.so
(plan_abi.py), and a --target cuda step's devices (asked in a child process)."""

import json
import os
import struct
import subprocess
import sys

from ptrain import plan_abi

PLAN_KEYS = ("pp", "micro_batches", "batch", "seq", "vocab", "model", "library")


class RunError(Exception):
    pass


def load_plan(out_dir):
    if not os.path.isdir(out_dir):
        raise RunError(f"{out_dir}: no such directory (the -o folder of ptrain-compile)")
    path = os.path.join(out_dir, "plan.json")
    try:
        with open(path) as f:
            plan = json.load(f)
    except FileNotFoundError:
        raise RunError(f"{path}: no such file; compile with ptrain-compile --pp P --micro-batches M -o {out_dir}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: not valid JSON ({e})")
    if not isinstance(plan, dict):
        raise RunError(f"{path}: expected a JSON object")
    if plan.get("target") == "cuda" and "pp" not in plan:
        check_cuda_plan(out_dir)
    missing = [k for k in PLAN_KEYS if k not in plan]
    if "pp" in missing and "micro_batches" in missing and "library" in plan:
        raise RunError(f"{path}: {out_dir} holds a single-rank step (ptrain-compile without --pp, --dp, --tp or "
                       "--micro-batches above 1), which ptrain-run does not train; compile a pipeline plan, e.g. "
                       f"ptrain-compile MODEL --micro-batches 2 -o {out_dir} (one rank) or --pp 2 --micro-batches 4")
    if missing:
        raise RunError(f"{path}: missing {', '.join(missing)} (a pipeline plan of ptrain-compile is needed: "
                       "--pp or --micro-batches)")
    for k in ("pp", "micro_batches", "batch", "seq", "vocab"):
        if not isinstance(plan[k], int) or plan[k] < 1:
            raise RunError(f"{path}: '{k}' must be a positive integer, not {plan[k]!r}")
    lib = os.path.join(out_dir, "libstep.so")
    if not os.path.isfile(lib):
        raise RunError(f"{lib}: no such file")
    check_library(lib)
    try:  # plan.json against the plan embedded in libstep.so: a hand-edited seq must not read past a buffer.
        plan_abi.check(plan, path, lib)
    except plan_abi.PlanError as e:
        raise RunError(str(e))
    plan["library"] = os.path.abspath(lib)
    if not os.path.isfile(plan["model"]):
        raise RunError(f"{path}: the model {plan['model']} does not exist")
    return plan


# Loads a --target cuda libstep.so in a child process (a broken library must not take the launcher down) and
# asks it for the CUDA devices (ptrain_step_cuda_devices; ptrain_step_init of an older single-rank step): prints
# the count, or the step's error and exits 1.
CUDA_PROBE = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.ptrain_step_last_error.restype = ctypes.c_char_p
count = ctypes.c_int32(0)
if hasattr(lib, "ptrain_step_cuda_devices"):
    status, call = lib.ptrain_step_cuda_devices(ctypes.byref(count)), "ptrain_step_cuda_devices"
    if status == 0 and count.value < 1:
        print("no CUDA device (cudaGetDeviceCount = 0)")
        sys.exit(1)
else:
    lib.ptrain_step_init.argtypes = [ctypes.c_char_p]
    status, call, count.value = lib.ptrain_step_init(None), "ptrain_step_init", 1
if status != 0:
    print(f"{call} failed (status {status}): {lib.ptrain_step_last_error().decode()}")
    sys.exit(1)
print(count.value)
"""


def cuda_devices(lib):
    """The CUDA devices a --target cuda step sees; a RunError with the driver's message when it cannot start."""
    probe = subprocess.run([sys.executable, "-c", CUDA_PROBE, os.path.abspath(lib)], capture_output=True, text=True)
    detail = (probe.stdout + probe.stderr).strip().splitlines()
    if probe.returncode != 0:
        raise RunError(f"{lib}: this step was compiled with --target cuda and cannot start on this machine: "
                       f"{detail[-1] if detail else f'exit status {probe.returncode}'}")
    return int(detail[-1])


def check_cuda_plan(out_dir):
    """A single-rank --target cuda step (docs/CodegenCuda.md): without a usable GPU, the device error
    (cudaErrorInsufficientDriver without a driver, no device); with one, the launcher's error (it has no
    ptrain_step_train: drive its entry points through ctypes)."""
    lib = os.path.join(out_dir, "libstep.so")
    if not os.path.isfile(lib):
        raise RunError(f"{lib}: no such file")
    check_library(lib)
    cuda_devices(lib)
    raise RunError(f"{lib}: training a single-rank --target cuda step with ptrain-run is not yet supported (it has "
                   "no ptrain_step_train; call ptrain_step_train_step through ctypes, docs/CodegenCuda.md, or "
                   "compile with --pp/--dp/--tp/--micro-batches)")


def check_library(lib):
    """Rejects a libstep.so that is not a whole 64-bit little-endian ELF file before any rank loads it: dlopen
    fails on garbage with a traceback per rank, and on a truncated library it maps pages past the end of the
    file and the rank dies of SIGBUS. Whole means every segment and the section header table lie inside it."""
    size = os.path.getsize(lib)
    with open(lib, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise RunError(f"{lib}: not a 64-bit little-endian ELF shared library; compile it again with "
                           "ptrain-compile")
        phoff, shoff = struct.unpack_from("<QQ", head, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 0x36)
        end = max(phoff + phnum * phentsize, shoff + shnum * shentsize)
        if end <= size and phentsize >= 56:
            f.seek(phoff)
            table = f.read(phnum * phentsize)
            for i in range(phnum):  # Elf64_Phdr: p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, ...
                _, _, offset, _, _, filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
                end = max(end, offset + filesz)
    if end > size:
        raise RunError(f"{lib}: truncated ({size} bytes, its ELF headers need {end}); compile it again with "
                       "ptrain-compile")
