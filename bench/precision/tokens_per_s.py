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

--isa names one or more vector paths (comma-separated), run interleaved in the same rounds so that their ratios
come from one run on one load: (path 1: fp32, bf16, fp16; path 2: fp32, bf16, fp16; ...) --repeats times.
avx512bf16 forces the bf16 GEMM onto AVX512-BF16's VDPBF16PS (an error where the CPU lacks it), avx512 and avx2
force its exact emulation on those clones (docs/Runtime.md, "bf16 GEMM"; OpenBLAS's kernels forced alike,
bench/generated_kernels/tokens_per_s.py's ISA_ENV), cpu takes what the machine runs. The runtime's kernels give the same bits on every
path, only the time differs (the table says whether each run's losses equal the first path's: fp32 GEMMs
may differ in their last bits, since OpenBLAS's kernels are forced too).

    PYTHONPATH=python /usr/bin/python3 bench/precision/tokens_per_s.py [--build build]
        [--out out/bench-precision] [--precisions fp32,bf16,fp16] [--micro-batches 4] [--steps 30]
        [--warmup 5] [--repeats 2] [--core 1] [--isa cpu|avx2|avx512|avx512bf16[,...]]
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


def parser(torch_bench):
    p = torch_bench.parser()
    p.description, p.epilog = __doc__.split("\n\n")[0], __doc__
    p.set_defaults(out=os.path.join(ROOT, "out", "bench-precision"))
    p.add_argument("--precisions", default=",".join(PRECISIONS),
                   help="comma-separated ptrain-compile --precision values, fp32 first (the baseline)")
    p.add_argument("--isa", default="cpu",
                   help="comma-separated vector paths run interleaved: cpu, avx2, avx512, avx512bf16")
    return p


def isa_envs(generated_isa_env):
    """Each path's environment: the generated-kernels benchmark's, plus avx512bf16 (the runtime's VDPBF16PS path
    forced; OpenBLAS on its AVX-512 kernels as for avx512)."""
    envs = {name: env for name, (env, _) in generated_isa_env.items()}
    envs["avx512bf16"] = dict(envs["avx512"], PTRAIN_CPU_ISA="avx512bf16")
    return envs


def split_list(text, allowed, what, first=None):
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if not items or bad or len(set(items)) != len(items) or (first and items[0] != first):
        need = f" starting with {first} (the baseline)" if first else ""
        raise ValueError(f"{what} {text}: a comma-separated list without repeats of {', '.join(sorted(allowed))}{need}"
                         + (f"; unknown: {', '.join(bad)}" if bad else ""))
    return items


def main(argv=None):
    torch_bench = load_bench("pytorch", "tokens_per_s.py")
    envs = isa_envs(load_bench("generated_kernels", "tokens_per_s.py").ISA_ENV)
    args = parser(torch_bench).parse_args(argv)
    try:
        try:
            precisions = split_list(args.precisions, PRECISIONS, "--precisions", first="fp32")
            isas = split_list(args.isa, envs, "--isa")
        except ValueError as e:
            raise torch_bench.BenchError(str(e))
        torch_bench.check_args(args)
        torch_bench.pin(args)
        base_env = dict(os.environ)
        forced = {var for env in envs.values() for var in env}
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
        print(f"bundled GPT, {tokens} tokens per step, core {args.core}, one thread, --isa {','.join(isas)}; GEMM "
              f"calls in step.cpp: " + "; ".join(f"{p} {gemms[p]}" for p in precisions) +
              f"; load {os.getloadavg()[0]:.1f}", flush=True)
        keys = [(i, p) for i in isas for p in precisions]
        runs, cpu_runs, losses = ({k: [] for k in keys} for _ in range(3))
        for r in range(args.repeats):
            for isa, p in keys:
                os.environ.clear()
                os.environ.update({k: v for k, v in base_env.items() if k not in forced})
                os.environ.update(envs[isa])
                times, cpu, loss = torch_bench.ptrain_run(args, plans[p], data)
                med, cpu_med = statistics.median(times[args.warmup:]), statistics.median(cpu[args.warmup:])
                runs[isa, p].append(med)
                cpu_runs[isa, p].append(cpu_med)
                losses[isa, p] = loss
                print(f"  repeat {r + 1} {isa:<10} {p:<5} median {med * 1e3:8.2f} ms/step  {tokens / med:>10,.0f} "
                      f"tok/s  CPU {cpu_med * 1e3:8.2f} ms/step  (first loss {loss[0]:.6f}, last {loss[-1]:.4f})",
                      flush=True)
        os.environ.clear()
        os.environ.update(base_env)
        # The runtime's paths give the same bits (docs/MixedPrecision.md, design item 5), but OpenBLAS's forced
        # kernels (OPENBLAS_CORETYPE) round the fp32 GEMMs differently (docs: ENV "Machines differ"), so a plan with
        # an fp32 GEMM may differ in its last bits between paths: shown, not checked.
        same = {(isa, p): losses[isa, p] == losses[isas[0], p] for isa, p in keys}
        best = {k: min(v) for k, v in runs.items()}
        best_cpu = {k: min(v) for k, v in cpu_runs.items()}
        print(f"\nload at the end {os.getloadavg()[0]:.1f}; ratios against fp32 on the same path, and against fp32 "
              f"on --isa {isas[0]} (the first path)\n")
        print("| path | precision | median s/step (best repeat) | tokens/s | / fp32 | median CPU s/step | tokens per "
              f"CPU-second | / fp32 | / fp32 on {isas[0]} | last loss | losses bit-equal to {isas[0]}'s |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|")
        for isa, p in keys:
            print(f"| {isa} | {p} | {best[isa, p]:.4f} | {tokens / best[isa, p]:,.0f} | "
                  f"{best[isa, 'fp32'] / best[isa, p]:.3f} | {best_cpu[isa, p]:.4f} | {tokens / best_cpu[isa, p]:,.0f} | "
                  f"{best_cpu[isa, 'fp32'] / best_cpu[isa, p]:.3f} | {best_cpu[isas[0], 'fp32'] / best_cpu[isa, p]:.3f} | "
                  f"{losses[isa, p][-1]:.4f} | {'yes' if same[isa, p] else 'no'} |")
        with open(os.path.join(args.out, "results.json"), "w") as f:
            name = lambda k: f"{k[0]}/{k[1]}"
            json.dump({"tokens_per_step": tokens, "isa": isas, "median_s": {name(k): v for k, v in runs.items()},
                       "median_cpu_s": {name(k): v for k, v in cpu_runs.items()},
                       "train_loss": {name(k): v for k, v in losses.items()}, "gemm_calls": gemms}, f, indent=1)
    except torch_bench.BenchError as e:
        print(f"bench/precision: error: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
