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
The pp2 optimus-cc runs measure the codec telemetry every step (--telemetry-every 1, the run log's "codec"
records: ptrain_cuda_codec_metrics_f32 on CUDA, docs/CodegenCuda.md "Codec telemetry"): the same sites and
compressions per step, the codec error, residual and input norms within 1e-2 relative and the LEP cosine
within 2e-2 of the CPU run's (the two trainings differ by the kernels' rounding, ~1e-4 in the losses; the
cosine of a difference of consecutive gradients amplifies it). The uncompressed pp2 CUDA run saves a checkpoint
(each rank its stage's states from its per-stage d_states, the CPU's format): ptrain-export writes the ONNX
model from it, and the CPU plan resumes from it for a 4th step whose loss is within 1e-4 relative of the CPU
run's own 4th step.
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
TELEMETRY_TOLERANCE = 1e-2  # relative: codec error, residual norm, input norm
COSINE_TOLERANCE = 2e-2     # absolute: the LEP cosine
SKIP = 77
RANKS = 2


def gpu_count(build):
    rt = ctypes.CDLL(os.path.join(build, "lib/Runtime/cuda/libptrain_runtime_cuda.so"))
    count = ctypes.c_int32(0)
    return count.value if rt.ptrain_cuda_device_count(ctypes.byref(count)) == 0 else 0


def codec_records(run_log):
    """{step: {site: metrics}} of a ptrain-run run log (JSON lines)."""
    with open(run_log) as f:
        return {r["step"]: r["codec"] for r in map(json.loads, f) if r.get("record") == "step" and "codec" in r}


def compare_telemetry(plan, cuda, cpu):
    """The CUDA run's codec telemetry against the CPU run's, step by step and site by site."""
    failures = []
    if not cpu or sorted(cuda) != sorted(cpu):
        return [f"{plan}: telemetry of steps {sorted(cuda)} on CUDA, {sorted(cpu)} on the CPU"]
    for step in sorted(cpu):
        if sorted(cuda[step]) != sorted(cpu[step]):
            failures.append(f"{plan}: step {step}: sites {sorted(cuda[step])} on CUDA, {sorted(cpu[step])} on the CPU")
            continue
        for site, want in cpu[step].items():
            got = cuda[step][site]
            print(f"{plan} step {step} site {site}: cuda {got} cpu {want}")
            if got["compressions"] != want["compressions"] or (got["lep_cos"] is None) != (want["lep_cos"] is None):
                failures.append(f"{plan}: step {step} {site}: compressions / cosines differ: {got} vs {want}")
                continue
            for key in ("error", "residual_norm", "input_norm"):
                if abs(got[key] - want[key]) > TELEMETRY_TOLERANCE * max(abs(want[key]), 1e-30):
                    failures.append(f"{plan}: step {step} {site} {key}: cuda {got[key]} cpu {want[key]}")
            if want["lep_cos"] is not None and abs(got["lep_cos"] - want["lep_cos"]) > COSINE_TOLERANCE:
                failures.append(f"{plan}: step {step} {site} LEP cosine: cuda {got['lep_cos']} cpu {want['lep_cos']}")
    return failures


def check_checkpoint(build, scratch, data, cuda_out, cpu_out, checkpoint):
    """The pp2 CUDA checkpoint (3 steps) in the CPU's format: ptrain-export writes the model from it, and the CPU
    plan resumed from it takes a 4th step whose loss is the CPU run's own 4th step's within TOLERANCE."""
    failures = []
    trained = os.path.join(scratch, "trained-from-cuda.onnx")
    export = subprocess.run([os.path.join(build, "bin", "ptrain-export"), cuda_out, "--checkpoint", checkpoint, "-o",
                             trained], capture_output=True, text=True)
    print(f"ptrain-export of the CUDA checkpoint: exit {export.returncode} {export.stdout.strip()} {export.stderr.strip()}")
    if export.returncode != 0 or not os.path.exists(trained):
        failures.append(f"ptrain-export of the pp2 CUDA checkpoint failed: {export.stderr.strip()}")
    losses = {}
    for what, extra in (("resumed", ["--resume", checkpoint]), ("own", [])):
        log = os.path.join(scratch, f"pp2-cpu-4-{what}.json")
        subprocess.run([os.path.join(build, "bin", "ptrain-run"), cpu_out, "--data", data, "--steps", "4",
                        "--val-batches", "2", "--no-plots", "--log", log, "--timeout", "120", *extra], check=True)
        with open(log) as f:
            losses[what] = json.load(f)["train_loss"][-1]
    rel = abs(losses["resumed"] - losses["own"]) / abs(losses["own"])
    print(f"step 4 on the CPU from the CUDA checkpoint: {losses['resumed']:.7f}, the CPU run's own step 4: "
          f"{losses['own']:.7f}, relative {rel:.2e}")
    if rel > TOLERANCE:
        failures.append(f"the CPU step resumed from the CUDA checkpoint: relative difference {rel:.2e} > {TOLERANCE}")
    return failures


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
        losses, traffic, telemetry = {}, {}, {}
        for target in ("cpu", "cuda", "cuda-mpirun") if plan == "pp2" else ("cpu", "cuda"):
            out = os.path.join(scratch, f"{plan}-{target.split('-')[0]}")  # cuda-mpirun: the cuda plan again
            if target != "cuda-mpirun":
                subprocess.run([os.path.join(build, "bin", "ptrain-compile"),
                                os.path.join(source, "models/gpt/gpt.onnx"), "--target", target, "--lr", "1e-3",
                                *options, "-o", out], check=True)
            log = os.path.join(scratch, f"{plan}-{target}.json")
            run_log = os.path.join(scratch, f"{plan}-{target}.jsonl")
            extra = {"pp2-optimus-cc": ["--telemetry-every", "1", "--run-log", run_log],
                     "pp2": ["--checkpoint", os.path.join(scratch, f"{plan}-{target}.ckpt")]}.get(plan, [])
            subprocess.run([os.path.join(build, "bin", "ptrain-run"), out, "--data", data, "--steps", "3",
                            "--val-batches", "2", "--no-plots", "--log", log, "--timeout", "120",
                            *(["--launcher", "mpirun"] if target == "cuda-mpirun" else extra)], check=True)
            with open(log) as f:
                run = json.load(f)
            if plan == "pp2-optimus-cc":
                telemetry[target] = codec_records(run_log)
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
        if plan == "pp2-optimus-cc":
            failures += compare_telemetry(plan, telemetry["cuda"], telemetry["cpu"])
        elif plan == "pp2":
            failures += check_checkpoint(build, scratch, data, os.path.join(scratch, "pp2-cuda"),
                                         os.path.join(scratch, "pp2-cpu"), os.path.join(scratch, "pp2-cuda.ckpt"))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
