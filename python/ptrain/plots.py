"""Plots of a ptrain-run run log (the JSON-lines file of docs/CodegenCpu.md, "Run log and plots").

    python3 python/ptrain/plots.py RUN.jsonl [--out-dir DIR]

Writes, next to the log (or into DIR), PNGs named after it: <stem>-loss.png (train and validation loss per
step), <stem>-bytes.png (bytes per training step on each link, the runtime's counters) and, when the run measured
codec telemetry (ptrain-run --telemetry-every N), <stem>-codec.png (codec error ||v - decode(encode(v))|| / ||v||
and residual norm per site) and <stem>-lep-cos.png (the LEP cosine cos(e_k, x_k - x_{k+1}) per site,
Optimus-CC section 4.2). Needs matplotlib (Debian: python3-matplotlib); without it, PlotError says so.
"""

import argparse
import json
import os
import sys


class PlotError(Exception):
    pass


def read_log(path):
    """(run record, step records) of a run log; PlotError naming the line for a malformed one."""
    run, steps = None, []
    try:
        with open(path) as f:
            for n, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    rec = json.loads(text)
                except json.JSONDecodeError as e:
                    raise PlotError(f"{path}:{n}: not a JSON line ({e})")
                kind = rec.get("record") if isinstance(rec, dict) else None
                if kind == "run":
                    run = rec
                elif kind == "step":
                    steps.append(rec)
                elif kind != "end":
                    raise PlotError(f"{path}:{n}: unknown record {kind!r} (expected run, step or end)")
    except OSError as e:
        raise PlotError(f"{path}: cannot read the run log ({e.strerror})")
    if run is None:
        raise PlotError(f"{path}: no 'run' record (not a ptrain-run run log)")
    return run, steps


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotError("matplotlib is not installed (Debian: apt-get install python3-matplotlib; "
                        "scripts/setup.sh installs it)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_run(path, out_dir=None):
    """Writes the PNGs of the run log at `path`; returns their paths."""
    run, steps = read_log(path)
    plt = _pyplot()
    out_dir = out_dir or os.path.dirname(os.path.abspath(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    policy = run.get("plan", {}).get("policy", "none")
    title = f"pp={run.get('plan', {}).get('pp')} dp={run.get('plan', {}).get('dp', 1)} policy={policy}"
    written = []

    def save(fig, name):
        p = os.path.join(out_dir, f"{stem}-{name}.png")
        fig.tight_layout()
        fig.savefig(p, dpi=100)
        plt.close(fig)
        written.append(p)

    fig, ax = plt.subplots(figsize=(7, 4))
    train = [(r["step"], r["train_loss"]) for r in steps if "train_loss" in r]
    val = [(r["step"], r["val_loss"]) for r in steps if "val_loss" in r]
    if train:
        ax.plot(*zip(*train), label="train", linewidth=1)
    if val:
        ax.plot(*zip(*val), "o-", label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per byte)")
    ax.set_title(f"loss, {title}")
    ax.legend()
    ax.grid(alpha=0.3)
    save(fig, "loss")

    fig, ax = plt.subplots(figsize=(7, 4))
    for link in run.get("links", []):
        pts = [(r["step"], r["bytes"][link]) for r in steps if link in r.get("bytes", {})]
        if pts:
            ax.plot(*zip(*pts), label=link)
    ax.set_xlabel("step")
    ax.set_ylabel("bytes handed to MPI per step")
    ax.set_title(f"traffic per link, {title}")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    save(fig, "bytes")

    sites = run.get("codec_sites", [])
    measured = [r for r in steps if r.get("codec")]
    if sites and measured:
        fig, (err_ax, res_ax) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        cos_fig, cos_ax = plt.subplots(figsize=(7, 4))
        for site in sites:
            rows = [(r["step"], r["codec"][site]) for r in measured if site in r["codec"]]
            if not rows:
                continue
            err_ax.plot([s for s, _ in rows], [m["error"] for _, m in rows], ".-", label=site)
            res_ax.plot([s for s, _ in rows], [m["residual_norm"] for _, m in rows], ".-", label=site)
            cos = [(s, m["lep_cos"]) for s, m in rows if m.get("lep_cos") is not None]
            if cos:
                cos_ax.plot(*zip(*cos), ".-", label=site)
        err_ax.set_ylabel("codec error ||v - dec(enc(v))|| / ||v||")
        err_ax.set_title(f"codec telemetry per site, {title}")
        err_ax.legend(fontsize="small")
        err_ax.grid(alpha=0.3)
        res_ax.set_ylabel("residual norm after the update")
        res_ax.set_xlabel("step")
        res_ax.grid(alpha=0.3)
        save(fig, "codec")
        cos_ax.axhline(0, color="gray", linewidth=0.8)
        cos_ax.set_ylim(-1, 1)
        cos_ax.set_xlabel("step")
        cos_ax.set_ylabel("cos(e_k, x_k - x_{k+1})")
        cos_ax.set_title(f"LEP health (Optimus-CC 4.2), {title}")
        cos_ax.legend(fontsize="small")
        cos_ax.grid(alpha=0.3)
        save(cos_fig, "lep-cos")
    return written


def main(argv=None):
    p = argparse.ArgumentParser(prog="plots.py", description=__doc__.split("\n\n")[0])
    p.add_argument("log", help="a run log (JSON lines) of ptrain-run")
    p.add_argument("--out-dir", default=None, help="where the PNGs go (default: the log's folder)")
    args = p.parse_args(argv)
    try:
        for path in plot_run(args.log, args.out_dir):
            print(path)
    except PlotError as e:
        print(f"plots.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
