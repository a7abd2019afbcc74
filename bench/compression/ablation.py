#!/usr/bin/env python3
"""The modelled compression ablation of the Optimus-CC configuration (issue 8, "Report").

Builds the configuration of Song et al., ASPLOS 2023 (shared/papers/optimus-cc.md): GPT-2.5B shape (52
layers, hidden 1920, 24 heads, sequence 1024, vocabulary 51200), TP 8, PP 4, DP 4, 16 micro-batches of 8,
in fp32 (or --precision), 1F1B, on clusters/optimus-cc-a100.json; runs --ptrain-critical-path once, then for every row of ROWS
--ptrain-compress with the row's options and --ptrain-report, and prints one table (markdown) of the
modelled iteration time, the speedup over the uncompressed plan, the bytes one GPU sends per iteration
across nodes and on the compressed links, and the codec kernel time.

    python3 bench/compression/ablation.py [--bin build/bin | --opt PATH] [--out DIR] [--rows none,CB,...]
                                          [--config optimus-cc|small] [--virtual-stages V] [--check-auto]
                                          [--precision fp32[,fp16,bf16]]

`--config small` is a small plan of the same shape family (4 layers, hidden 256, TP 1, PP 2, DP 2, 4
micro-batches) on the same cluster. `--virtual-stages V` (V >= 2) splits every stage into V model chunks and
schedules interleaved 1F1B instead (docs/Compression.md, "Interleaved schedules"). `--check-auto` fails (exit 1) unless the auto row is modelled no slower
than every other row that printed a time, except rows named "auto + ..." that widen its candidates (the search starts from the best of none and the Optimus-CC rule's
plans, so it must never lose to them).

`--precision` builds the training step at each listed precision (`--ptrain-build-training-step=precision=`,
docs/MixedPrecision.md: 16-bit activations, pipeline messages and GEMM operands, fp32 master weights and dp
reductions) and prints one table per precision, then the speedups side by side. Optimus-CC itself trained in
fp16 (Megatron-LM with dynamic loss scaling; shared/papers/optimus-cc.md), so `--precision fp16,fp32` sets the
paper's setting next to the fp32 one: 16-bit messages halve what compression can save on the pipeline links,
while the dp all-reduce stays fp32.

A row whose policy or option the compiler does not know yet is printed as "not available" with the
compiler's message, so ROWS can name policies before they exist (FE, mcbench, auto).
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (row name, --ptrain-compress options or None for no compression). Extend here.
ROWS = [
    ("none", None),
    ("CB", "policy=optimus-cc sc=false fe=false"),
    ("CB without LEP", "policy=optimus-cc sc=false lep=false fe=false"),
    ("CB+FE", "policy=optimus-cc sc=false"),
    ("CB+SC", "policy=optimus-cc fe=false"),
    ("CB+FE+SC", "policy=optimus-cc"),
    ("CB (critical sends)+SC", "policy=optimus-cc cb-sends=critical fe=false"),
    ("CB (every backward send)+SC", "policy=optimus-cc cb-sends=all fe=false"),
    ("SC (critical stages)", "policy=optimus-cc cb=false fe=false"),
    ("SC on every stage", "policy=optimus-cc cb=false sc-all=true fe=false"),
    ("mcbench", "policy=mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1 skip-stages=2"),
    ("auto", "policy=auto"),
    ("auto + forward 8-bit", "policy=auto auto-forward-codecs=quant:bits=8"),
]

CONFIGS = {
    "optimus-cc": dict(name="Optimus-CC configuration: GPT-2.5B shape", file="gpt-2.5b", layers=52, hidden=1920,
                       heads=24, seq=1024, vocab=51200, micro_batch=8, grid="dp=4,pp=4,tp=8", pp=4, dp=4,
                       micro_batches=16, cluster=os.path.join(ROOT, "clusters", "optimus-cc-a100.json")),
    "small": dict(name="Small configuration", file="gpt-small", layers=8, hidden=512, heads=8, seq=256, vocab=8192,
                  micro_batch=4, grid="dp=4,pp=4", pp=4, dp=4, micro_batches=8,
                  cluster=os.path.join(ROOT, "clusters", "optimus-cc-a100.json")),
}


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"), help="folder of ptrain-opt")
    ap.add_argument("--opt", default="", help="ptrain-opt itself (overrides --bin)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench-compression"))
    ap.add_argument("--rows", default="", help="comma-separated row names (default: all)")
    ap.add_argument("--config", default="optimus-cc", choices=sorted(CONFIGS), help="the plan (default optimus-cc)")
    ap.add_argument("--virtual-stages", type=int, default=1,
                    help="model chunks per stage: V >= 2 schedules interleaved 1F1B (default 1: 1F1B)")
    ap.add_argument("--check-auto", action="store_true",
                    help="exit 1 unless the auto row is modelled no slower than every other row")
    ap.add_argument("--precision", default="fp32",
                    help="comma-separated precisions of the training step: fp32, bf16, fp16 (default fp32)")
    ap.add_argument("--row", action="append", default=[], metavar="NAME:OPTIONS",
                    help="an extra row: its name and --ptrain-compress options (repeatable)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    opt = args.opt or os.path.join(args.bin, "ptrain-opt")
    c = CONFIGS[args.config]
    precisions = [p.strip() for p in args.precision.split(",") if p.strip()]
    if not precisions or any(p not in ("fp32", "bf16", "fp16") for p in precisions):
        sys.exit(f"--precision: a comma-separated list of fp32, bf16, fp16, got '{args.precision}'")
    speedups = {}
    for precision in precisions:
        speedups[precision] = ablate(args, opt, dict(c), precision)
    if len(precisions) > 1:
        names = [n for n in speedups[precisions[0]] if all(n in speedups[p] for p in precisions)]
        print("\nspeedup over the uncompressed plan of the same precision, side by side\n")
        print("| row | " + " | ".join(precisions) + " |")
        print("|---|" + "---|" * len(precisions))
        for n in names:
            print(f"| {n} | " + " | ".join(f"{speedups[p][n]:.4f}" for p in precisions) + " |")


def ablate(args, opt, c, precision):
    """Plans `c` at `precision`, runs every row and prints its table; returns {row: speedup}."""
    if precision != "fp32":
        c["file"] += "-" + precision
    model = os.path.join(args.out, c["file"] + ".mlir")
    gen = run([sys.executable, os.path.join(ROOT, "python", "ptrain_fixtures", "gen_gpt_mlir.py"), "--layers", str(c["layers"]),
               "--hidden", str(c["hidden"]), "--heads", str(c["heads"]), "--seq", str(c["seq"]), "--vocab",
               str(c["vocab"]), "--micro-batch", str(c["micro_batch"]), "--grid", c["grid"], "-o", model])
    if gen.returncode:
        sys.exit("gen_gpt_mlir.py failed:\n" + gen.stderr)
    planned = os.path.join(args.out, c["file"] + ".plan.mlir")
    v = args.virtual_stages
    schedule = "interleaved" if v > 1 else "1f1b"
    if v > 1:
        c["file"] += f"-v{v}"
    r = run([opt, model, f"--ptrain-split-stages=pp={c['pp']} virtual-stages={v}",
             f"--ptrain-build-training-step=micro-batches={c['micro_batches']} dp={c['dp']} precision={precision}",
             f"--ptrain-schedule=schedule={schedule}",
             f"--ptrain-critical-path=cluster={c['cluster']}", "-o", planned])
    if r.returncode:
        sys.exit("ptrain-opt (plan) failed:\n" + r.stderr)

    wanted = [w.strip() for w in args.rows.split(",") if w.strip()]
    extra = [tuple(r.split(":", 1)) for r in args.row]
    wanted += [name for name, _ in extra] if wanted else []
    results = []
    for name, options in ROWS + extra:
        if wanted and name not in wanted:
            continue
        path = os.path.join(args.out, c["file"] + "-" + name.replace(" ", "_").replace("+", "-").replace("(", "").replace(")", "") +
                            ".json")
        passes = ([f"--ptrain-compress={options}"] if options else []) + [f"--ptrain-report=json={path}"]
        r = run([opt, planned] + passes + ["-o", os.devnull])
        if r.returncode:
            msg = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip()[:200])
            results.append((name, options, None, msg.split("error: ")[-1]))
            continue
        with open(path) as f:
            results.append((name, options, json.load(f), None))

    base = next((rep for name, _, rep, _ in results if name == "none" and rep), None)
    print(f"{c['name']}, grid {c['grid']}, {c['micro_batches']} micro-batches of "
          f"{c['micro_batch']} x {c['seq']}, {precision}, "
          f"{f'interleaved 1F1B with {v} model chunks per stage' if v > 1 else '1F1B'}, {os.path.basename(c['cluster'])}\n")
    print("| row | --ptrain-compress | iteration (ms) | speedup | inter-node bytes / GPU (GiB) | compressed "
          "edges | codec time, slowest stage (ms) |")
    print("|---|---|---|---|---|---|---|")
    for name, options, rep, err in results:
        if rep is None:
            print(f"| {name} | `{options}` | not available: {err} | | | | |")
            continue
        t = rep["iteration_time_s"]
        inter = sum(s["inter_node_bytes"] for s in rep["stages"]) / 2**30
        comp = rep.get("compression")
        edges = len(comp["decisions"]) if comp else 0
        codec = max((x["encode_s"] + x["decode_s"] + x["dp_codec_s"] for x in comp["codec_seconds"]),
                    default=0) if comp else 0
        speedup = base["iteration_time_s"] / t if base else float("nan")
        print(f"| {name} | `{options or '(none)'}` | {t * 1e3:.1f} | {speedup:.4f} | {inter:.3f} | {edges} | "
              f"{codec * 1e3:.3f} |")
    # The critical edges of the uncompressed plan: what a critical-path rule may compress.
    if base:
        print("\ncritical backward sends (uncompressed):", ", ".join(base["critical_backward_sends"]) or "none")
        print("critical dp all-reduces (stages):", base["critical_dp_all_reduces"])
    if args.check_auto:
        timed = [(rep["iteration_time_s"], name) for name, _, rep, _ in results if rep]
        auto = next((rep["iteration_time_s"] for name, _, rep, _ in results if name == "auto" and rep), None)
        # The rows that widen auto's own candidates (auto + ...) are not rows auto must beat.
        others = [(t, name) for t, name in timed if not name.startswith("auto")]
        if auto is None or not others:
            sys.exit("--check-auto needs the auto row and another row with a time")
        best, best_name = min(others)
        if auto > best * (1 + 1e-12):
            sys.exit(f"auto check FAILED: auto {auto * 1e3:.3f} ms is slower than {best_name} {best * 1e3:.3f} ms")
        print(f"\nauto check: auto {auto * 1e3:.3f} ms <= the best other row, {best_name}, {best * 1e3:.3f} ms")

    return {name: base["iteration_time_s"] / rep["iteration_time_s"] for name, _, rep, _ in results if rep and base}

if __name__ == "__main__":
    main()
