#!/usr/bin/env python3
"""Fits the scale of auto's quality model to measured losses (issue 25 item 2; QualityModel.h).

The quality model predicts each compressed plan's cost as a fraction of the uncompressed validation loss:
kQualityScale x sum over compressed edges of weight x e^2 x share. This script measures that fraction on the
bundled GPT and fits the scale:
  1. compiles the model at pp = 2, 4 micro-batches, 1F1B, with --policy none, the hand policies auto seeds
     from (optimus-cc with CB on the cool-down and on every backward send; mcbench with bench/cluster's codecs)
     and auto at several quality budgets, on --cluster (default: a 1 GB/s link, where auto compresses);
  2. reads every plan's predicted quality cost from auto's explanation (ptrain-compile's auto.json: the
     seeds' costs for the hand policies, final_quality_cost for auto);
  3. trains each under mpirun for --steps steps, once per --seeds seed (the seed orders the batches; every plan
     sees the same batches for a seed; data.py's Python-source corpus, AdamW, cosine schedule) and reads the
     validation loss at the last step (--val-batches batches);
  4. prints predicted against measured per plan: the mean over seeds of val / val_none - 1 (val_none of the
     same seed) with its range, which shows the run-to-run noise, and the least-squares scale through the
     origin, s* = sum(m u) / sum(u^2) over the plans with u > 0, where u = predicted / kQualityScale.
The losses are deterministic for a given build, data and machine ISA (the step times are not used), so the
machine need not be quiet.

    python3 bench/compression/quality_fit.py [--build build] [--out out/quality-fit] [--steps 200]
        [--val-batches 16] [--seeds 0,1,2] [--cluster test/Transforms/Inputs/h200-slow-link.json]
        [--budgets 0.02,0.05,inf]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALE = 0.039  # kQualityScale in include/ptrain/Transforms/QualityModel.h, the scale the predictions use
HAND = {  # plan name -> (ptrain-compile --policy, --compress-options, the seed's name in auto.json or None)
    "optimus-cc": ("optimus-cc", "", "optimus-cc"),
    "optimus-cc cb-sends=all": ("optimus-cc", "cb-sends=all", "optimus-cc cb-sends=all"),
    "mcbench quant8/topk10%": ("mcbench", "fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1",
                               "mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1"),
}
# Single codecs on one direction of every pipeline send, to see which codec costs what (--single); not auto seeds,
# so their predicted cost is not in auto.json.
SINGLE = {
    "powersgd r4 + EF, every backward send": ("optimus-cc", "cb-sends=all cb-rank=4 fe=false sc=false", None),
    "powersgd r16 + EF, every backward send": ("optimus-cc", "cb-sends=all cb-rank=16 fe=false sc=false", None),
    "quant 4-bit, every forward send": ("mcbench", "fwd-codec=quant:bits=4", None),
    "quant 8-bit + EF, every backward send": ("mcbench", "bwd-codec=quant:bits=8 error-feedback=true", None),
    "quant 2-bit + EF, every backward send": ("mcbench", "bwd-codec=quant:bits=2 error-feedback=true", None),
}


def run(cmd, what, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"quality_fit: {what} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "quality-fit"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "gpt", "gpt.onnx"))
    ap.add_argument("--cluster", default=os.path.join(ROOT, "test", "Transforms", "Inputs", "h200-slow-link.json"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--val-batches", type=int, default=16)
    ap.add_argument("--seeds", default="0,1,2", help="ptrain-run --seed of each run (the batch order)")
    ap.add_argument("--budgets", default="0.02,0.05,inf", help="auto-quality-budget of each auto plan")
    ap.add_argument("--clip-norm", type=float, default=1.0,
                    help="ptrain-compile --clip-norm (default 1.0, Megatron-LM's default; 0 = unclipped, whose loss "
                    "spikes make the seeds disagree by more than the budget: bench/README.md \"quality\")")
    ap.add_argument("--single", action="store_true", help="also train the single-codec plans (SINGLE)")
    ap.add_argument("--reuse", action="store_true",
                    help="keep the compiled plans and the runs' logs already in --out (refit without retraining); "
                    "auto's plans are recompiled, so that a changed quality model gives its predictions")
    ap.add_argument("--only", default="", help="';'-separated plan names to train (default: all)")
    a = ap.parse_args()
    if a.steps < 20:
        sys.exit(f"quality_fit: --steps {a.steps}: at least 20")
    budgets = [b.strip() for b in a.budgets.split(",") if b.strip()]
    try:
        seeds = [int(x) for x in a.seeds.split(",") if x.strip()]
    except ValueError:
        sys.exit(f"quality_fit: --seeds {a.seeds}: comma-separated integers")
    if not seeds:
        sys.exit("quality_fit: --seeds: empty")
    for b in budgets:
        if b != "inf" and not float(b) >= 0:
            sys.exit(f"quality_fit: --budgets: '{b}' is not a budget (>= 0 or inf)")
    os.makedirs(a.out, exist_ok=True)
    bin_dir = os.path.join(a.build, "bin")
    data = os.path.join(a.out, "data")
    if not os.path.isfile(os.path.join(data, "data.json")):
        run([sys.executable, os.path.join(ROOT, "python", "ptrain", "data.py"), "--out", data, "--max-bytes",
             "2000000"], "data.py")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OPENBLAS_NUM_THREADS="1")

    plans = {"none": ("none", "")}
    plans.update({name: (p, o) for name, (p, o, _) in HAND.items()})
    if a.single:
        plans.update({name: (p, o) for name, (p, o, _) in SINGLE.items()})
    plans.update({f"auto budget={b}": ("auto", f"auto-quality-budget={b}") for b in budgets})
    if a.only:
        keep = {n.strip() for n in a.only.split(";")} | {"none"}
        unknown = keep - set(plans)
        if unknown:
            sys.exit(f"quality_fit: --only: no plan named {', '.join(sorted(unknown))} (plans: {', '.join(plans)})")
        plans = {n: v for n, v in plans.items() if n in keep}
    rows = []
    for name, (policy, options) in plans.items():
        out = os.path.join(a.out, name.replace(" ", "_").replace("/", "_").replace("%", "pct"))
        cmd = [os.path.join(bin_dir, "ptrain-compile"), a.model, "--pp", "2", "--micro-batches", "4", "--schedule",
               "1f1b", "--lr", "3e-3", "--warmup-steps", "10", "--total-steps", str(a.steps), "--target", "cpu",
               "--clip-norm", repr(a.clip_norm), "-o", out]
        if policy != "none":
            cmd += ["--policy", policy, "--cluster", a.cluster] + (["--compress-options", options] if options else [])
        if a.reuse and policy == "auto" and os.path.isfile(os.path.join(out, "step.cpp")):
            # Recompiled (the quality model may have changed); the old runs count only for the same code.
            fresh = out + ".new"
            shutil.rmtree(fresh, ignore_errors=True)
            run([fresh if c == out else c for c in cmd], f"ptrain-compile ({name})")
            with open(os.path.join(out, "step.cpp")) as f, open(os.path.join(fresh, "step.cpp")) as g:
                same = f.read() == g.read()
            if same:
                for seed in seeds:
                    log = os.path.join(out, f"log-seed{seed}.json")
                    if os.path.isfile(log):
                        shutil.copy(log, fresh)
            else:
                print(f"{name}: the plan changed; retraining", flush=True)
            shutil.rmtree(out)
            os.rename(fresh, out)
        elif not a.reuse or not os.path.isfile(os.path.join(out, "libstep.so")):
            run(cmd, f"ptrain-compile ({name})")
        vals = []
        for seed in seeds:
            log = os.path.join(out, f"log-seed{seed}.json")
            if a.reuse and os.path.isfile(log):
                with open(log) as f:
                    vals.append(json.load(f)["val_loss"][-1][1])
                continue
            run([os.path.join(bin_dir, "ptrain-run"), out, "--data", data, "--steps", str(a.steps), "--val-every",
                 str(a.steps), "--val-batches", str(a.val_batches), "--seed", str(seed), "--log", log, "--no-plots",
                 "--no-tensorboard", "--timeout", "900", "--mpirun-args=--oversubscribe --bind-to none"],
                f"ptrain-run ({name}, seed {seed})", env=env)
            with open(log) as f:
                vals.append(json.load(f)["val_loss"][-1][1])
        rows.append({"plan": name, "out": out, "val_loss": vals})
        print(f"{name}: validation loss at step {a.steps}: " + ", ".join(f"{v:.4f}" for v in vals), flush=True)

    # Predicted costs: auto.json of the auto plans (their own final cost, and the hand policies as seeds).
    with open(os.path.join(rows[-1]["out"], "auto.json")) as f:
        seed_costs = {s["name"]: s["quality_cost"] for s in json.load(f)["seeds"]}
    base = rows[0]["val_loss"]  # per seed
    for r in rows:
        if r["plan"] == "none":
            r["predicted"] = 0.0
        elif r["plan"] in HAND:
            r["predicted"] = seed_costs.get(HAND[r["plan"]][2])
        elif r["plan"] in SINGLE:
            r["predicted"] = None
        else:
            with open(os.path.join(r["out"], "auto.json")) as f:
                r["predicted"] = json.load(f)["final_quality_cost"]
        per_seed = [v / b - 1 for v, b in zip(r["val_loss"], base)]
        r["measured"], r["measured_range"] = sum(per_seed) / len(per_seed), [min(per_seed), max(per_seed)]
    fit = [(r["predicted"] / SCALE, r["measured"]) for r in rows
           if r["predicted"] is not None and 0 < r["predicted"] < float("inf")]
    scale = sum(u * m for u, m in fit) / sum(u * u for u, m in fit) if fit else None

    print(f"\nbundled GPT, pp = 2 x 4 micro-batches, {a.steps} steps, validation on {a.val_batches} batches, seeds "
          f"{a.seeds}; predictions at kQualityScale = {SCALE}; cluster {os.path.relpath(a.cluster, ROOT)}\n")
    print("| plan | validation loss (per seed) | measured cost (mean, range over seeds) | predicted cost | "
          "predicted at the fitted scale |")
    print("|---|---|---|---|---|")
    for r in rows:
        p = r["predicted"]
        lo, hi = r["measured_range"]
        print(f"| {r['plan']} | {', '.join(f'{v:.4f}' for v in r['val_loss'])} | {r['measured'] * 100:+.2f}% "
              f"({lo * 100:+.2f}% to {hi * 100:+.2f}%) | "
              f"{'n/a' if p is None else f'{p * 100:.2f}%'} | "
              f"{'n/a' if p is None or scale is None else f'{p / SCALE * scale * 100:.2f}%'} |")
    if scale is not None:
        print(f"\nleast-squares scale through the origin over {len(fit)} plans: {scale:.4f} (today {SCALE})")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"steps": a.steps, "val_batches": a.val_batches, "seeds": seeds, "scale_used": SCALE, "fitted_scale": scale,
                   "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
