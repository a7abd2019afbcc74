#!/usr/bin/python3
"""Tokens/s of the compiled CPU step in bf16 and fp16 against fp32 (issue 24's benchmark).

The bundled GPT (models/gpt) is compiled once per precision with the settings of bench/pytorch/tokens_per_s.py
(AdamW, its learning-rate schedule, --micro-batches M) and `ptrain-compile --precision P`
(docs/MixedPrecision.md: fp32 master weights; 16-bit GEMM operands with fp32 accumulation, `ptrain_gemm_bf16`
/ `ptrain_gemm_f16`; the casts around them). The steps run with ptrain-run on the same data and seed, pinned to
one core with one BLAS thread, alternating (fp32, bf16, fp16, fp32, ...) --repeats times; a step's time is its
training call alone and the figure is the median step after --warmup steps (ptrain-run's log, the measurement
of bench/pytorch; its CPU time beside it, steadier on a loaded machine). tokens/s = M x batch x seq / that
median; the ratios are against fp32 in the same run.

--isa forces one vector path where the machine has several (bench/generated_kernels/tokens_per_s.py's ISA_ENV):
avx512 runs the bf16 GEMM on AVX512-BF16's VDPBF16PS where the CPU has it, avx2 on its exact emulation
(docs/Runtime.md, "bf16 GEMM"); the bits are the same on both paths, only the time differs.

    PYTHONPATH=python /usr/bin/python3 bench/precision/tokens_per_s.py [--build build]
        [--out out/bench-precision] [--precisions fp32,bf16,fp16] [--micro-batches 4] [--steps 30]
        [--warmup 5] [--repeats 2] [--core 1] [--isa cpu|avx2|avx512]
"""

import importlib.util
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRECISIONS = ("fp32", "bf16", "fp16")


def load_bench(*parts):
    """Another benchmark script as a module (its settings and helpers shared rather than copied)."""
    path = os.path.join(ROOT, "bench", *parts)
    spec = importlib.util.spec_from_file_location(os.path.splitext("_".join(parts))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parser(torch_bench, isa_env):
    p = torch_bench.parser()
    p.description, p.epilog = __doc__.split("\n\n")[0], __doc__
    p.set_defaults(out=os.path.join(ROOT, "out", "bench-precision"))
    p.add_argument("--precisions", default=",".join(PRECISIONS),
                   help="comma-separated ptrain-compile --precision values, fp32 first (the baseline)")
    p.add_argument("--isa", choices=sorted(isa_env), default="cpu",
                   help="force one vector path in the runtime and OpenBLAS")
    return p


def main(argv=None):
    torch_bench = load_bench("pytorch", "tokens_per_s.py")
    isa_env = load_bench("generated_kernels", "tokens_per_s.py").ISA_ENV
    args = parser(torch_bench, isa_env).parse_args(argv)
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    try:
        if not precisions or precisions[0] != "fp32" or any(p not in PRECISIONS for p in precisions):
            raise torch_bench.BenchError(f"--precisions {args.precisions}: a comma-separated list of {', '.join(PRECISIONS)} "
                                         "starting with fp32 (the baseline)")
        torch_bench.check_args(args)
        os.environ.update(isa_env[args.isa][0])
        torch_bench.pin(args)
        cfg, batch_rows, _ = torch_bench.read_config(args.model_dir)
        os.makedirs(args.out, exist_ok=True)
        data = torch_bench.prepare_data(args)
        plans = {}
        for precision in precisions:
            plans[precision] = os.path.join(args.out, precision)
            torch_bench.compile_ptrain(args, plans[precision], ["--precision", precision])
        tokens = args.micro_batches * batch_rows * cfg.seq_len
        gemms = {p: {k: open(os.path.join(plans[p], "step.cpp")).read().count(f"ptrain_gemm_{k}(")
                     for k in ("f32", "bf16", "f16")} for p in precisions}
        print(f"bundled GPT, {tokens} tokens per step, core {args.core}, one thread, --isa {args.isa}; GEMM calls "
              f"in step.cpp: " + "; ".join(f"{p} {gemms[p]}" for p in precisions) +
              f"; load {os.getloadavg()[0]:.1f}", flush=True)
        runs, cpu_runs, losses = ({p: [] for p in precisions} for _ in range(3))
        for r in range(args.repeats):
            for p in precisions:
                times, cpu, loss = torch_bench.ptrain_run(args, plans[p], data)
                med, cpu_med = statistics.median(times[args.warmup:]), statistics.median(cpu[args.warmup:])
                runs[p].append(med)
                cpu_runs[p].append(cpu_med)
                losses[p] = loss
                print(f"  repeat {r + 1} {p:<5} median {med * 1e3:8.2f} ms/step  {tokens / med:>10,.0f} tok/s  CPU "
                      f"{cpu_med * 1e3:8.2f} ms/step  (first loss {loss[0]:.6f}, last {loss[-1]:.4f})", flush=True)
        best = {p: min(v) for p, v in runs.items()}
        best_cpu = {p: min(v) for p, v in cpu_runs.items()}
        print(f"\n--isa {args.isa}, load at the end {os.getloadavg()[0]:.1f}\n")
        print("| precision | median s/step (best repeat) | tokens/s | / fp32 | median CPU s/step | tokens per "
              "CPU-second | / fp32 | last loss |\n|---|---|---|---|---|---|---|---|")
        for p in precisions:
            print(f"| {p} | {best[p]:.4f} | {tokens / best[p]:,.0f} | {best['fp32'] / best[p]:.3f} | "
                  f"{best_cpu[p]:.4f} | {tokens / best_cpu[p]:,.0f} | {best_cpu['fp32'] / best_cpu[p]:.3f} | "
                  f"{losses[p][-1]:.4f} |")
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"tokens_per_step": tokens, "isa": args.isa, "median_s": runs, "median_cpu_s": cpu_runs,
                       "train_loss": losses, "gemm_calls": gemms}, f, indent=1)
    except torch_bench.BenchError as e:
        print(f"bench/precision: error: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
