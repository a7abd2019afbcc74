#!/usr/bin/env python3
"""policy=auto is never modelled slower than uncompressed or than a hand policy (issue 25).

For each plan (bundled GPT: pp 2 x 4 micro-batches, pp 4 x 8, dp 2 x pp 2, tp 2 x pp 2) and cluster, runs
--ptrain-compress with every hand policy that auto seeds from (optimus-cc with CB on the cool-down, the
critical and every backward send; mcbench with bench/cluster's codecs) and with auto, each followed by
--ptrain-report, and compares the reports' modelled iteration times (the timing model of exactly that plan):
  - auto at auto-quality-budget=inf <= every hand policy and <= uncompressed;
  - auto at the default budget (2%) <= uncompressed and <= every hand policy whose predicted quality cost
    (auto's seed remark) is within the budget.
Prints one line per (plan, cluster) and OK at the end; exits 1 naming the first violation.

    auto_vs_seeds.py --bin BUILD/bin --model models/gpt/gpt.onnx --out DIR CLUSTER.json...
"""
import argparse
import json
import os
import re
import subprocess
import sys

PLANS = {
    "pp2-m4": ["--ptrain-split-stages=pp=2", "--ptrain-build-training-step=micro-batches=4"],
    "pp4-m8": ["--ptrain-split-stages=pp=4", "--ptrain-build-training-step=micro-batches=8"],
    "dp2-pp2": ["--ptrain-split-stages=pp=2", "--ptrain-build-training-step=micro-batches=2 dp=2"],
    "tp2-pp2": ["--ptrain-raise", "--ptrain-shard-tp=tp=2", "--ptrain-split-stages=pp=2",
                "--ptrain-build-training-step=micro-batches=2"],
}
HAND = {
    "optimus-cc": "policy=optimus-cc",
    "optimus-cc cb-sends=critical": "policy=optimus-cc cb-sends=critical",
    "optimus-cc cb-sends=all": "policy=optimus-cc cb-sends=all",
    "mcbench": "policy=mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1",
}
SEED_QUALITY = re.compile(r"(optimus-cc(?: cb-sends=\w+)?|mcbench)[^,;]*? [0-9.]+ ms quality ([0-9.]+)%")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"auto_vs_seeds: failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return p.stderr


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
            times, remarks = {}, {}
            policies = {"none": "policy=none", **HAND, "auto": "policy=auto",
                        "auto budget=inf": "policy=auto auto-quality-budget=inf"}
            for name, options in policies.items():
                report = os.path.join(a.out, f"{plan}-{cname}-{name.replace(' ', '_')}.json")
                remarks[name] = run([opt, sched, f"--ptrain-critical-path=cluster={cluster}",
                                     f"--ptrain-compress={options}", f"--ptrain-report=json={report}",
                                     "-o", os.devnull])
                with open(report) as f:
                    times[name] = json.load(f)["iteration_time_s"]
            quality = {m.group(1): float(m.group(2)) / 100 for m in SEED_QUALITY.finditer(remarks["auto"])}
            eps = 1e-12
            for name in ["none", *HAND]:
                if times["auto budget=inf"] > times[name] * (1 + 1e-9) + eps:
                    sys.exit(f"{plan} on {cname}: auto (budget inf) {times['auto budget=inf']:.6e} s > {name} "
                             f"{times[name]:.6e} s")
                within = name == "none" or quality.get(name, float("inf")) <= 0.02
                if within and times["auto"] > times[name] * (1 + 1e-9) + eps:
                    sys.exit(f"{plan} on {cname}: auto {times['auto']:.6e} s > {name} {times[name]:.6e} s "
                             f"(quality {quality.get(name)})")
            print(f"{plan} on {cname}: " + ", ".join(f"{k} {v * 1e3:.4f} ms" for k, v in times.items()))
    print("OK")


if __name__ == "__main__":
    main()
