#!/usr/bin/env python3
"""policy=auto is never modelled slower than uncompressed or than a hand policy (issue 25).

For each plan (bundled GPT: pp 2 x 4 micro-batches, pp 4 x 8, dp 2 x pp 2, dp 4 x pp 2, tp 2 x pp 2) and
cluster, runs
--ptrain-compress with every hand policy that auto seeds from (optimus-cc with CB on the cool-down, the
critical and every backward send; mcbench with bench/cluster's codecs) and with auto, each followed by
--ptrain-report, and compares the reports' modelled iteration times (the timing model of exactly that plan):
  - auto at auto-quality-budget=inf <= every hand policy and <= uncompressed;
  - auto at the default budget (2%) <= uncompressed and <= every hand policy whose predicted quality cost
    (the seed's entry in auto's auto-report JSON) is within the budget;
  - auto's auto-report agrees with the report: its final time is --ptrain-report's iteration time, its
    start seed's time minus the moves' savings is the final time, each move's running quality total ends at
    the final quality cost, which is within the budget.
  - auto at auto-error-budget=0.1 (no PowerSGD rank below min(n, m) qualifies; 8/4-bit quantization and the
    casts do) <= uncompressed.
Prints one line per (plan, cluster), one more per auto run with its dp all-reduce moves where it made some
(the dp codecs beyond PowerSGD are candidates: auto-dp-codecs), and OK at the end; exits 1 naming the first
violation.

    auto_vs_seeds.py --bin BUILD/bin --model models/gpt/gpt.onnx --out DIR CLUSTER.json...
"""
import argparse
import json
import os
import subprocess
import sys

PLANS = {
    "pp2-m4": ["--ptrain-split-stages=pp=2", "--ptrain-build-training-step=micro-batches=4"],
    "pp4-m8": ["--ptrain-split-stages=pp=4", "--ptrain-build-training-step=micro-batches=8"],
    "dp2-pp2": ["--ptrain-split-stages=pp=2", "--ptrain-build-training-step=micro-batches=2 dp=2"],
    "dp4-pp2": ["--ptrain-split-stages=pp=2", "--ptrain-build-training-step=micro-batches=2 dp=4"],
    "tp2-pp2": ["--ptrain-raise", "--ptrain-shard-tp=tp=2", "--ptrain-split-stages=pp=2",
                "--ptrain-build-training-step=micro-batches=2"],
}
HAND = {
    "optimus-cc": "policy=optimus-cc",
    "optimus-cc cb-sends=critical": "policy=optimus-cc cb-sends=critical",
    "optimus-cc cb-sends=all": "policy=optimus-cc cb-sends=all",
    "mcbench": "policy=mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1",
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"auto_vs_seeds: failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return p.stderr


def check_explanation(where, e, report_time):
    """auto-report's numbers agree with the report and with each other."""
    close = lambda a, b: abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-15
    if not close(e["final_s"], report_time):
        sys.exit(f"{where}: auto-report final_s {e['final_s']:.9e} != --ptrain-report {report_time:.9e}")
    start = next(s for s in e["seeds"] if s["name"] == e["start"])
    if not close(start["seconds"] - sum(m["saved_s"] for m in e["moves"]), e["final_s"]):
        sys.exit(f"{where}: start seed {start['seconds']:.9e} s minus the moves' savings != final_s {e['final_s']:.9e}")
    total = e["moves"][-1]["total_quality_cost"] if e["moves"] else start["quality_cost"]
    if not close(total, e["final_quality_cost"]):
        sys.exit(f"{where}: the last move's quality total {total} != final_quality_cost {e['final_quality_cost']}")
    if e["quality_budget"] is not None and e["final_quality_cost"] > e["quality_budget"] + 1e-12:
        sys.exit(f"{where}: final quality cost {e['final_quality_cost']} over the budget {e['quality_budget']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("clusters", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    opt = os.path.join(a.bin, "ptrain-opt")
    imported = os.path.join(a.out, "gpt.mlir")
    subprocess.run([os.path.join(a.bin, "ptrain-translate"), "--import-onnx", a.model, "-o", imported], check=True)
    for plan, passes in PLANS.items():
        sched = os.path.join(a.out, f"{plan}.mlir")
        run([opt, imported, *passes, "--ptrain-schedule", "-o", sched])
        for cluster in a.clusters:
            cname = os.path.splitext(os.path.basename(cluster))[0]
            times, explained = {}, {}
            policies = {"none": "policy=none", **HAND, "auto": "policy=auto",
                        "auto budget=inf": "policy=auto auto-quality-budget=inf",
                        "auto error-budget=0.1": "policy=auto auto-error-budget=0.1"}
            for name, options in policies.items():
                report = os.path.join(a.out, f"{plan}-{cname}-{name.replace(' ', '_')}.json")
                if name.startswith("auto"):
                    options += f" auto-report={report}.auto"
                run([opt, sched, f"--ptrain-critical-path=cluster={cluster}", f"--ptrain-compress={options}",
                     f"--ptrain-report=json={report}", "-o", os.devnull])
                with open(report) as f:
                    times[name] = json.load(f)["iteration_time_s"]
                if name.startswith("auto"):
                    with open(report + ".auto") as f:
                        explained[name] = json.load(f)
                    check_explanation(f"{plan} on {cname}: {name}", explained[name], times[name])
            # A null quality cost is a choice the literature rules out (QualityModel.h): infinite.
            quality = {seed["name"].split(" fwd-codec")[0]:
                       float("inf") if seed["quality_cost"] is None else seed["quality_cost"]
                       for seed in explained["auto"]["seeds"]}
            eps = 1e-12
            # With an error budget no PowerSGD rank below min(n, m) meets, auto still never loses to none.
            if times["auto error-budget=0.1"] > times["none"] * (1 + 1e-9) + eps:
                sys.exit(f"{plan} on {cname}: auto error-budget=0.1 {times['auto error-budget=0.1']:.6e} s > none "
                         f"{times['none']:.6e} s")
            for name in ["none", *HAND]:
                if times["auto budget=inf"] > times[name] * (1 + 1e-9) + eps:
                    sys.exit(f"{plan} on {cname}: auto (budget inf) {times['auto budget=inf']:.6e} s > {name} "
                             f"{times[name]:.6e} s")
                within = name == "none" or quality.get(name, float("inf")) <= 0.02
                if within and times["auto"] > times[name] * (1 + 1e-9) + eps:
                    sys.exit(f"{plan} on {cname}: auto {times['auto']:.6e} s > {name} {times[name]:.6e} s "
                             f"(quality {quality.get(name)})")
            print(f"{plan} on {cname}: " + ", ".join(f"{k} {v * 1e3:.4f} ms" for k, v in times.items()))
            for name in ("auto", "auto error-budget=0.1"):
                dp_moves = [f"{m['edge']} -> {m['codec']}" for m in explained[name]["moves"]
                            if " dp all-reduce" in m["edge"] or m["edge"].startswith("dp all-reduce")]
                if dp_moves:
                    print(f"{plan} on {cname}: {name}'s dp moves: " + "; ".join(dp_moves))
    print("OK")


if __name__ == "__main__":
    main()
