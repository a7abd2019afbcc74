#!/usr/bin/python3
"""Tokens/s of the compiled CPU step with the compiler's generated kernels against without them (issue 26).

The bundled GPT (models/gpt) is compiled twice with the settings of bench/pytorch/tokens_per_s.py (AdamW, its
learning-rate schedule, --micro-batches M): `ptrain-compile --fuse-elementwise=off` (the runtime's kernel per
op) and `--fuse-elementwise=on` (the elementwise chains outlined by --ptrain-outline-elementwise and compiled
for this machine's CPU, or --kernels-cpu; docs/GeneratedKernels.md). Both run with ptrain-run on the same data
and seed, pinned to one core with one BLAS thread, alternating (off, on, off, on, ...) --repeats times; a step's
time is its training call alone and the figure is the median step after --warmup steps (ptrain-run's log, the
same measurement as bench/pytorch; its CPU time beside it, steadier on a loaded machine). tokens/s = M x batch x seq / that median; the ratio is on / off. The
step losses of both must be identical (the fused chains compute the same bits): otherwise it is an error.

With --pytorch a PyTorch eager step of the same model (bench/pytorch's, same weights, data and optimizer) runs
in the same rounds (off, on, pytorch, off, ...), and the table gives each against it. --isa forces one vector
path in all three where the machine has several: avx2 sets PTRAIN_CPU_ISA=avx2 (the runtime's clones),
OPENBLAS_CORETYPE=Haswell, --kernels-cpu x86-64-v3 (the generated kernels), ATEN_CPU_CAPABILITY=avx2 and
DNNL_MAX_CPU_ISA=AVX2 (PyTorch's kernels and oneDNN); avx512 the AVX-512 counterparts (avx512, SkylakeX,
the host CPU, avx512, AVX512_CORE).

With --baseline BUILD the step of another build (e.g. main's: /work/main/build), compiled by its ptrain-compile
with --fuse-elementwise off and run by its ptrain-run, joins the rounds as "base" (the change's effect measured
in the same run); its losses are reported beside the others' (equal when the change keeps the bits).

    PYTHONPATH=python /usr/bin/python3 bench/generated_kernels/tokens_per_s.py [--build build]
        [--out out/bench-generated-kernels] [--micro-batches 4] [--steps 30] [--warmup 5] [--repeats 1]
        [--core 1] [--kernels-cpu native] [--pytorch] [--isa cpu|avx2|avx512] [--baseline BUILD]
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_pytorch_bench():
    """bench/pytorch/tokens_per_s.py as a module: its model configuration, pinning, compile settings and
    ptrain-run timing, shared rather than copied (it imports torch only in its own bench())."""
    path = os.path.join(ROOT, "bench", "pytorch", "tokens_per_s.py")
    spec = importlib.util.spec_from_file_location("pytorch_tokens_per_s", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parser(torch_bench):
    """bench/pytorch's options (build, out, model, micro-batches, steps, warm-up, repeats, core, seed, nice) with
    this benchmark's description and defaults, and --kernels-cpu."""
    p = torch_bench.parser()
    p.description, p.epilog = __doc__.split("\n\n")[0], __doc__
    p.set_defaults(out=os.path.join(ROOT, "out", "bench-generated-kernels"), repeats=1)
    p.add_argument("--kernels-cpu", default=None,
                   help="ptrain-compile --kernels-cpu of the fused step (default: native; x86-64-v3 with --isa avx2)")
    p.add_argument("--pytorch", action="store_true", help="a PyTorch eager step in the same rounds")
    p.add_argument("--isa", choices=sorted(ISA_ENV), default="cpu",
                   help="force one vector path in the runtime, OpenBLAS, the generated kernels and PyTorch")
    p.add_argument("--baseline", default=None, metavar="BUILD",
                   help="another build's unfused step in the same rounds, as 'base' (e.g. /work/main/build)")
    return p


# The environment of each forced path (docs/Runtime.md "Kernel paths", scripts/test-kernel-paths.sh; PyTorch's
# ATEN_CPU_CAPABILITY and oneDNN's DNNL_MAX_CPU_ISA are read when torch loads, after main sets them), and the
# generated kernels' CPU. "cpu": what each library picks on this machine.
ISA_ENV = {
    "cpu": ({}, "native"),
    "avx2": ({"PTRAIN_CPU_ISA": "avx2", "OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2",
              "DNNL_MAX_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}, "x86-64-v3"),
    "avx512": ({"PTRAIN_CPU_ISA": "avx512", "OPENBLAS_CORETYPE": "SkylakeX", "ATEN_CPU_CAPABILITY": "avx512",
                "DNNL_MAX_CPU_ISA": "AVX512_CORE", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}, "native"),
}


def main(argv=None):
    torch_bench = load_pytorch_bench()
    args = parser(torch_bench).parse_args(argv)
    env, default_cpu = ISA_ENV[args.isa]
    os.environ.update(env)
    args.kernels_cpu = args.kernels_cpu or default_cpu
    try:
        torch_bench.pin(args)
        cfg, batch_rows, _ = torch_bench.read_config(args.model_dir)
        os.makedirs(args.out, exist_ok=True)
        data = torch_bench.prepare_data(args)
        plans = {}
        for fuse in ("off", "on"):
            plans[fuse] = os.path.join(args.out, f"fuse-{fuse}")
            torch_bench.compile_ptrain(args, plans[fuse],
                                       ["--fuse-elementwise", fuse, "--kernels-cpu", args.kernels_cpu])
        base_args = None
        if args.baseline:
            base_args = argparse.Namespace(**vars(args))
            base_args.build = os.path.abspath(args.baseline)
            plans["base"] = os.path.join(args.out, "base")
            torch_bench.compile_ptrain(base_args, plans["base"], ["--fuse-elementwise", "off"])
        tokens = args.micro_batches * batch_rows * cfg.seq_len
        calls = {fuse: open(os.path.join(plans[fuse], "step.cpp")).read().count("ptrain_binary_f32(")
                 for fuse in plans}
        base_note = f", base {calls['base']} ({args.baseline})" if args.baseline else ""
        print(f"bundled GPT, {tokens} tokens per step, core {args.core}, one thread, kernels for "
              f"{args.kernels_cpu}; ptrain_binary_f32 calls in step.cpp: off {calls['off']}, on {calls['on']}{base_note}; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        names = (("base",) if args.baseline else ()) + ("off", "on") + (("pytorch",) if args.pytorch else ())
        if args.pytorch:
            from ptrain.run_data import data_files, read_data
            cfg, batch_rows, weights = torch_bench.read_config(args.model_dir)
            train, _ = read_data(*data_files(data), cfg.seq_len)
        runs, cpu_runs, losses = {n: [] for n in names}, {n: [] for n in names}, {}
        for r in range(args.repeats):
            for name in names:
                times, cpu, loss = (torch_bench.pytorch_run(args, cfg, batch_rows, weights, train)
                                    if name == "pytorch" else
                                    torch_bench.ptrain_run(base_args if name == "base" else args, plans[name], data))
                med, cpu_med = statistics.median(times[args.warmup:]), statistics.median(cpu[args.warmup:])
                runs[name].append(med)
                cpu_runs[name].append(cpu_med)
                losses.setdefault(name, loss)
                print(f"  repeat {r + 1} {name:<7} median {med * 1e3:8.2f} ms/step  {tokens / med:>10,.0f} "
                      f"tok/s  CPU {cpu_med * 1e3:8.2f} ms/step  (first loss {loss[0]:.6f}, last {loss[-1]:.4f})", flush=True)
        if losses["on"] != losses["off"]:
            raise torch_bench.BenchError("the fused step's losses differ from the unfused step's")
        if args.pytorch and abs(losses["off"][0] - losses["pytorch"][0]) > 1e-4 * abs(losses["pytorch"][0]):
            raise torch_bench.BenchError("PyTorch's first-step loss differs: not the same model or data")
        best = {k: min(v) for k, v in runs.items()}
        best_cpu = {k: min(v) for k, v in cpu_runs.items()}
        print(f"\n--isa {args.isa}, generated kernels for {args.kernels_cpu}, load at the end "
              f"{os.getloadavg()[0]:.1f}\n")
        print("| step | median s/step (best repeat) | tokens/s | median CPU s/step | tokens per CPU-second |"
              + (" tokens/s / PyTorch | per CPU-second / PyTorch |" if args.pytorch else "")
              + "\n|---|---|---|---|---|" + ("---|---|" if args.pytorch else ""))
        for name in names:
            row = (f"| {name} | {best[name]:.4f} | {tokens / best[name]:,.0f} | {best_cpu[name]:.4f} | "
                   f"{tokens / best_cpu[name]:,.0f} |")
            if args.pytorch:
                row += f" {best['pytorch'] / best[name]:.3f} | {best_cpu['pytorch'] / best_cpu[name]:.3f} |"
            print(row)
        ratio, cpu_ratio = best["off"] / best["on"], best_cpu["off"] / best_cpu["on"]
        print(f"\ntokens/s on / off = {ratio:.3f}; per CPU-second {cpu_ratio:.3f}; step losses identical "
              f"({len(losses['on'])} steps)")
        if args.baseline:
            print(f"off / base (this build's unfused step against {args.baseline}'s): tokens/s "
                  f"{best['base'] / best['off']:.3f}, per CPU-second {best_cpu['base'] / best_cpu['off']:.3f}; "
                  f"losses {'identical' if losses['base'] == losses['off'] else 'DIFFERENT'} "
                  f"(base last {losses['base'][-1]!r}, off last {losses['off'][-1]!r})")
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"tokens_per_step": tokens, "median_s": runs, "median_cpu_s": cpu_runs, "ratio": ratio,
                       "cpu_ratio": cpu_ratio, "kernels_cpu": args.kernels_cpu, "isa": args.isa},
                      f, indent=1)
    except torch_bench.BenchError as e:
        print(f"bench/generated_kernels: error: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
