#!/usr/bin/python3
"""Tokens/s of the compiled ptrain training step against a PyTorch CPU training step of the same model (issue 10).

The model is the bundled GPT (models/gpt): its configuration is read from models/gpt/README.md and checked
against the ONNX initializers' shapes, and the PyTorch model (python/ptrain_fixtures/models/gpt.py) is loaded with the
ONNX file's weights, so both start from the same parameters. Both run on one core (pinned), one thread
(OPENBLAS/OMP/MKL_NUM_THREADS=1 set before torch loads, and torch.set_num_threads(1)), AdamW (beta 0.9/0.95, eps 1e-8, weight decay 0.1
on matrices, warm-up + cosine: the compiled step's), M micro-batches of the model's batch per step with
gradients accumulated over them (the compiled step's --micro-batches M), on the same batches (ptrain-run's
windows of the same corpus). Each framework runs --repeats times, alternating (ptrain, PyTorch, ptrain, ...);
a step's time is its training call alone (ptrain_step_train / forward + backward + optimizer step), the figure
is the median step after --warmup steps, and tokens/s = M x batch x seq / that median. The CPU time of the same
calls (time.process_time: user + system of the process, all threads) is reported beside it, with its own ratio:
on a machine loaded by others the wall time mostly measures the wait for the core. The first step's loss of
both (before any update) must agree: it shows the two run the same model on the same data.

    PYTHONPATH=python /usr/bin/python3 bench/pytorch/tokens_per_s.py [--build build] [--out out/bench-pytorch]
        [--micro-batches 4] [--steps 30] [--warmup 5] [--repeats 2] [--core 1] [--nice N]

Needs torch (Debian's python3-torch 1.13 is visible to /usr/bin/python3 only) and onnx (python3-onnx).
"""

import argparse
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LR, WARMUP, MIN_LR_RATIO, WEIGHT_DECAY = 3e-3, 10, 0.1, 0.1  # passed to ptrain-compile as well


class BenchError(Exception):
    pass


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench-pytorch"))
    p.add_argument("--model-dir", default=os.path.join(ROOT, "models", "gpt"))
    p.add_argument("--micro-batches", type=int, default=4)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--core", type=int, default=1, help="the core both run on")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--nice", type=int, default=0, help="niceness of both (e.g. -10 on a machine loaded by others)")
    p.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)
    return p


def check_args(args):
    if args.micro_batches < 2:
        raise BenchError(f"--micro-batches {args.micro_batches}: at least 2 (ptrain-run runs the pipeline form of "
                         "the step, which --micro-batches > 1 gives on one rank)")
    if args.warmup < 0 or args.steps < args.warmup + 3:
        raise BenchError(f"--steps {args.steps} --warmup {args.warmup}: need warmup >= 0 and at least 3 measured "
                         "steps")
    if not -20 <= args.nice <= 19:
        raise BenchError(f"--nice {args.nice}: between -20 and 19")
    if args.repeats < 1:
        raise BenchError(f"--repeats {args.repeats}: at least 1")
    if args.core not in os.sched_getaffinity(0):
        raise BenchError(f"--core {args.core}: not one of this process's cores {sorted(os.sched_getaffinity(0))}")
    onnx_path = os.path.join(args.model_dir, "gpt.onnx")
    if not os.path.isfile(onnx_path):
        raise BenchError(f"--model-dir {args.model_dir}: no gpt.onnx")
    for tool in ("ptrain-compile", "ptrain-run"):
        if not os.path.isfile(os.path.join(args.build, "bin", tool)):
            raise BenchError(f"--build {args.build}: no bin/{tool} (build with bash scripts/build.sh {args.build})")


def read_config(model_dir):
    """GPTConfig from models/gpt/README.md's description line, checked against the ONNX initializers."""
    import onnx
    from onnx import numpy_helper

    from ptrain_fixtures.models.gpt import GPTConfig
    readme = open(os.path.join(model_dir, "README.md")).read()
    m = re.search(r"vocabulary (\d+) \(bytes\), (\d+) layers, (\d+) heads, hidden (\d+), sequence (\d+), MLP (\d+)x",
                  readme)
    if not m:
        raise BenchError(f"{model_dir}/README.md: no 'vocabulary V (bytes), L layers, H heads, hidden D, sequence "
                         "T, MLP Rx' line")
    vocab, layers, heads, hidden, seq, ratio = (int(x) for x in m.groups())
    batch = int(re.search(r"input `input_ids` int64 \[(\d+), \d+\]", readme).group(1))
    cfg = GPTConfig(vocab_size=vocab, n_layer=layers, n_head=heads, n_embd=hidden, seq_len=seq, mlp_ratio=ratio)
    model = onnx.load(os.path.join(model_dir, "gpt.onnx"))  # external data loaded from beside it
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    expect = {"wte.weight": (vocab, hidden), "wpe.weight": (seq, hidden),
              f"blocks.{layers - 1}.mlp.fc.weight": (ratio * hidden, hidden)}
    for name, shape in expect.items():
        if name not in weights or tuple(weights[name].shape) != shape:
            raise BenchError(f"{model_dir}/gpt.onnx: initializer {name} is "
                             f"{tuple(weights[name].shape) if name in weights else 'missing'}, the README's "
                             f"configuration needs {shape}")
    if f"blocks.{layers}.ln_1.weight" in weights:
        raise BenchError(f"{model_dir}/gpt.onnx has more than the README's {layers} layers")
    return cfg, batch, weights


def lr_at(step, total):
    """The compiled step's schedule (BuildTrainingStep: linear warm-up, cosine to min_ratio * peak); step 1-based."""
    if step <= WARMUP:
        return LR * step / WARMUP
    total = max(100, total)
    progress = min(1.0, (step - WARMUP) / max(1, total - WARMUP))
    return LR * (MIN_LR_RATIO + (1 - MIN_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * progress)))


def pytorch_run(args, cfg, batch_rows, weights, train):
    import torch

    from ptrain_fixtures.models.gpt import GPT, next_token_loss
    from ptrain.run_data import batch as make_batch
    torch.set_num_threads(1)
    model = GPT(cfg)
    state = model.state_dict()
    model.load_state_dict({k: torch.from_numpy(weights[k].copy()) for k in state})
    matrices = [p for n, p in model.named_parameters() if p.dim() >= 2]
    vectors = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": WEIGHT_DECAY},
                             {"params": vectors, "weight_decay": 0.0}], lr=LR, betas=(0.9, 0.95), eps=1e-8)
    rows, seq, m = batch_rows * args.micro_batches, cfg.seq_len, args.micro_batches
    times, cpu, losses = [], [], []
    for i in range(args.steps):
        buf = make_batch(train, rows, seq, args.seed * 1000003 + i)
        tokens = torch.tensor(list(buf), dtype=torch.int64).view(rows, seq)
        for g in opt.param_groups:
            g["lr"] = lr_at(i + 1, args.steps)
        t0, c0 = time.perf_counter(), time.process_time()
        total = 0.0
        for k in range(m):
            x = tokens[k * batch_rows:(k + 1) * batch_rows]
            loss = next_token_loss(model(x), x) / m
            loss.backward()
            total += float(loss)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        losses.append(total)
    return times, cpu, losses


def ptrain_run(args, plan_dir, data):
    log = os.path.join(plan_dir, "log.json")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["taskset", "-c", str(args.core), os.path.join(args.build, "bin", "ptrain-run"), plan_dir, "--data", data,
           "--steps", str(args.steps), "--val-batches", "1", "--log", log, "--no-plots", "--seed", str(args.seed),
           "--mpirun-args=--bind-to none"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if proc.returncode:
        raise BenchError(f"ptrain-run failed: {' '.join(map(shlex.quote, cmd))}\n{proc.stdout[-3000:]}")
    with open(log) as f:
        result = json.load(f)
    # A build older than ptrain-run's step_cpu_seconds (a baseline): no CPU times (NaN).
    cpu = result.get("step_cpu_seconds") or [math.nan] * len(result["step_seconds"])
    return result["step_seconds"], cpu, result["train_loss"]


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        check_args(args)
        if args.check_args:
            return 0
        pin(args)
        bench(args)
    except BenchError as e:
        print(f"bench/pytorch: error: {e}", file=sys.stderr, flush=True)
        return 2 if args.check_args else 1
    return 0


def pin(args):
    """Before torch is imported (its BLAS starts its threads at load, with the affinity of that moment): one
    thread, this core, and with --nice a session of our own whose scheduler autogroup gets that niceness (with
    autogroups, Debian's default, a nice value only weighs within its session). ptrain-run, a child, inherits
    all of it."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    os.sched_setaffinity(0, {args.core})
    if args.nice:
        try:
            os.setsid()
        except OSError:
            pass  # already a session leader
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(args.nice))
        except OSError as e:
            print(f"bench/pytorch: note: /proc/self/autogroup: {e}", flush=True)
        os.nice(args.nice)


def prepare_data(args):
    """The byte-level corpus of python/ptrain/data.py (docs/Data.md) in args.out/data, made once; its folder."""
    data = os.path.join(args.out, "data")
    if not os.path.isfile(os.path.join(data, "data.json")):  # data.py's declaration (docs/Data.md)
        subprocess.run([sys.executable, os.path.join(ROOT, "python", "ptrain", "data.py"), "--out", data,
                        "--max-bytes", "2000000"], check=True, stdout=subprocess.DEVNULL)
    return data


def compile_ptrain(args, plan, extra=()):
    """ptrain-compile of the bundled GPT into `plan` with this benchmark's optimizer and schedule (the settings
    of the PyTorch step) and the `extra` flags (the other benchmarks' variants: --precision, --fuse-elementwise)."""
    cmd = [os.path.join(args.build, "bin", "ptrain-compile"), os.path.join(args.model_dir, "gpt.onnx"),
           "--micro-batches", str(args.micro_batches), "--lr", repr(LR), "--warmup-steps", str(WARMUP),
           "--total-steps", str(max(100, args.steps)), "--min-lr-ratio", repr(MIN_LR_RATIO), "--weight-decay",
           repr(WEIGHT_DECAY), "--target", "cpu", *extra, "-o", plan]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise BenchError(f"ptrain-compile {' '.join(extra)} failed:\n{proc.stdout[-3000:]}")


def bench(args):
    try:
        import torch
    except ImportError:
        raise BenchError(f"torch is not importable by {sys.executable} (Debian: python3-torch, for /usr/bin/python3)")
    cfg, batch_rows, weights = read_config(args.model_dir)
    os.makedirs(args.out, exist_ok=True)
    data = prepare_data(args)
    from ptrain.run_data import data_files, read_data
    train, _ = read_data(*data_files(data), cfg.seq_len)
    plan = os.path.join(args.out, "ptrain")
    compile_ptrain(args, plan)
    tokens = args.micro_batches * batch_rows * cfg.seq_len
    print(f"bundled GPT: {cfg.n_layer} layers, hidden {cfg.n_embd}, {cfg.n_head} heads, seq {cfg.seq_len}, vocab "
          f"{cfg.vocab_size}; {args.micro_batches} micro-batches of {batch_rows} = {tokens} tokens per step; core "
          f"{args.core}, one thread; torch {torch.__version__}; load {os.getloadavg()[0]:.1f}", flush=True)
    runs = {"ptrain": [], "pytorch": []}
    cpu_runs = {"ptrain": [], "pytorch": []}
    losses = {}
    for r in range(args.repeats):
        for name in ("ptrain", "pytorch"):
            times, cpu, loss = ptrain_run(args, plan, data) if name == "ptrain" else \
                pytorch_run(args, cfg, batch_rows, weights, train)
            med = statistics.median(times[args.warmup:])
            cpu_med = statistics.median(cpu[args.warmup:])
            runs[name].append(med)
            cpu_runs[name].append(cpu_med)
            losses.setdefault(name, loss)
            print(f"  repeat {r + 1} {name:<8} median {med * 1e3:8.2f} ms/step  {tokens / med:>10,.0f} tok/s  "
                  f"CPU {cpu_med * 1e3:8.2f} ms/step  (first loss {loss[0]:.6f}, last {loss[-1]:.4f})", flush=True)
    diff = abs(losses["ptrain"][0] - losses["pytorch"][0]) / abs(losses["pytorch"][0])
    best = {k: min(v) for k, v in runs.items()}
    best_cpu = {k: min(v) for k, v in cpu_runs.items()}
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}\n")
    print("| framework | median s/step (best repeat) | tokens/s | median CPU s/step (best repeat) | "
          "tokens per CPU-second | first-step loss |")
    print("|---|---|---|---|---|---|")
    for name in ("ptrain", "pytorch"):
        print(f"| {name} | {best[name]:.4f} | {tokens / best[name]:,.0f} | {best_cpu[name]:.4f} | "
              f"{tokens / best_cpu[name]:,.0f} | {losses[name][0]:.6f} |")
    print(f"\ntokens/s ptrain / PyTorch = {best['pytorch'] / best['ptrain']:.3f} (per repeat: " +
          ", ".join(f"{p / q:.3f}" for q, p in zip(runs["ptrain"], runs["pytorch"])) +
          f"); per CPU-second {best_cpu['pytorch'] / best_cpu['ptrain']:.3f} (per repeat: " +
          ", ".join(f"{p / q:.3f}" for q, p in zip(cpu_runs["ptrain"], cpu_runs["pytorch"])) +
          f"); first-step losses differ by {diff:.2e} relative")
    if diff > 1e-4:
        raise BenchError(f"the first-step losses differ by {diff:.2e} relative: not the same model or data")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"tokens_per_step": tokens, "median_s": runs, "median_cpu_s": cpu_runs,
                   "cpu_ratio": best_cpu["pytorch"] / best_cpu["ptrain"], "first_loss": {k: v[0] for k, v in losses.items()},
                   "ratio": best["pytorch"] / best["ptrain"]}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
