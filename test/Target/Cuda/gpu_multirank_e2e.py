"""A pipeline step over NCCL on GPUs against the CPU compiled plan (CTest `codegen-cuda-gpu-multirank`; exits
77, a skip, with fewer than 2 usable GPUs; docs/CodegenCuda.md, "Multi-rank steps").

The bundled GPT compiled with --pp 2 --micro-batches 2 (1F1B, AdamW lr 1e-3) for --target cpu and --target
cuda; ptrain-run trains each for 3 steps on the same corpus (one process per GPU on CUDA: NCCL refuses two
ranks on one device) and writes its losses (--log). Every training loss and the final validation loss of the
CUDA run within 1e-4 relative of the CPU run's. The same for the plan compressed by --policy optimus-cc (CB's
PowerSGD with LEP on the cool-down backward send 1 -> 0: the CUDA codec kernels, docs/CodegenCuda.md "Codecs"),
and for a --dp 2 plan with Optimus-CC's SC on every gradient (sc-all=true sc-rank=8: PowerSGD's all-reduces
of P and Q, the exact path on 1-D gradients, through ptrain_nccl_compressed_all_reduce), and the bytes per link
of every run (the NCCL communicators' counters on CUDA, MPI's on the CPU) equal.
The CUDA runs use ptrain-run's own torchrun-style launcher (its default for CUDA plans); the pp2 plan also
runs under --launcher mpirun (the NCCL id over MPI instead of the TCP rendezvous): the same losses.

Usage: gpu_multirank_e2e.py <build-dir> <source-dir> <scratch-dir>
"""

import ctypes
import json
import os
import shutil
import subprocess
import sys

TOLERANCE = 1e-4
SKIP = 77
RANKS = 2


def gpu_count(build):
    rt = ctypes.CDLL(os.path.join(build, "lib/Runtime/cuda/libptrain_runtime_cuda.so"))
    count = ctypes.c_int32(0)
    return count.value if rt.ptrain_cuda_device_count(ctypes.byref(count)) == 0 else 0


def main(build, source, scratch):
    devices = gpu_count(build)
    if devices < RANKS:
        print(f"SKIP: {devices} usable CUDA device(s); the pp2 and dp2 steps need {RANKS} (one NCCL rank per GPU)")
        return SKIP
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    data = os.path.join(scratch, "data")
    subprocess.run([sys.executable, os.path.join(source, "python/ptrain/data.py"), "--out", data], check=True)
    failures = []
    pp2 = ["--pp", "2", "--micro-batches", "2"]
    sc = ["--dp", "2", "--policy", "optimus-cc", "--compress-options", "sc-all=true sc-rank=8"]
    for plan, options in (("pp2", pp2), ("pp2-optimus-cc", pp2 + ["--policy", "optimus-cc"]), ("dp2-sc", sc)):
        losses, traffic = {}, {}
        for target in ("cpu", "cuda", "cuda-mpirun") if plan == "pp2" else ("cpu", "cuda"):
            out = os.path.join(scratch, f"{plan}-{target.split('-')[0]}")  # cuda-mpirun: the cuda plan again
            if target != "cuda-mpirun":
                subprocess.run([os.path.join(build, "bin", "ptrain-compile"),
                                os.path.join(source, "models/gpt/gpt.onnx"), "--target", target, "--lr", "1e-3",
                                *options, "-o", out], check=True)
            log = os.path.join(scratch, f"{plan}-{target}.json")
            subprocess.run([os.path.join(build, "bin", "ptrain-run"), out, "--data", data, "--steps", "3",
                            "--val-batches", "2", "--no-plots", "--log", log, "--timeout", "120",
                            *(["--launcher", "mpirun"] if target == "cuda-mpirun" else [])], check=True)
            with open(log) as f:
                run = json.load(f)
            losses[target] = run["train_loss"] + [run["val_loss"][-1][1]]
            traffic[target] = run.get("traffic")
            print(f"{plan} {target}: train losses {run['train_loss']}, final val loss {run['val_loss'][-1][1]:.6f}, "
                  f"traffic {traffic[target]}")
        for i, (got, want) in enumerate(zip(losses["cuda"], losses["cpu"])):
            rel = abs(got - want) / abs(want)
            what = f"{plan}: train loss {i + 1}" if i < len(losses["cpu"]) - 1 else f"{plan}: final val loss"
            print(f"{what}: cuda {got:.7f} cpu {want:.7f} relative {rel:.2e}")
            if rel > TOLERANCE:
                failures.append(f"{what}: relative difference {rel:.2e} > {TOLERANCE}")
        if "cuda-mpirun" in losses and losses["cuda-mpirun"] != losses["cuda"]:
            failures.append(f"{plan}: losses under mpirun {losses['cuda-mpirun']}, under the env launcher "
                            f"{losses['cuda']}")
        if traffic["cuda"] is None or traffic["cuda"] != traffic["cpu"]:
            failures.append(f"{plan}: bytes per link on CUDA {traffic['cuda']}, on the CPU {traffic['cpu']}")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
