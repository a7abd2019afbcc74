#!/usr/bin/env python3
"""Draws the scalars of a TensorBoard log folder as one PNG: train and validation loss, learning rate, tokens/s
and bytes per link, read with the tensorboard package's own EventAccumulator.

    /usr/bin/python3 examples/tokenized-gpt/plot_tensorboard.py LOGDIR OUT.png

The reader runs under the project's .venv (tensorboard, scripts/setup-python.sh), the plot under this interpreter
(Debian's python3-matplotlib), since neither has both.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
READER = """
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0}); acc.Reload()
print(json.dumps({t: [[e.step, e.value] for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}))
"""


def main(logdir, png):
    venv = os.path.join(ROOT, ".venv", "bin", "python")
    if not os.path.isfile(venv):
        sys.exit(f"plot_tensorboard: {venv} missing: run bash scripts/setup-python.sh")
    p = subprocess.run([venv, "-c", READER, logdir], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"plot_tensorboard: cannot read {logdir}: {p.stderr.strip().splitlines()[-1]}")
    scalars = json.loads(p.stdout)
    if "train/loss" not in scalars:
        sys.exit(f"plot_tensorboard: {logdir} has no train/loss")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    links = sorted(t for t in scalars if t.startswith("bytes/"))
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    ax = axes[0][0]
    for tag, style in (("train/loss", "-"), ("val/loss", "o-")):
        if tag in scalars:
            ax.plot(*zip(*scalars[tag]), style, label=tag)
    ax.set(title="loss (nats/token)", xlabel="step")
    ax.legend()
    panels = [(axes[0][1], ["train/lr"], "learning rate"), (axes[1][0], ["train/tokens_per_s"], "tokens/s (rank 0)"),
              (axes[1][1], links, "bytes per step and link")]
    for ax, tags, title in panels:
        for tag in tags:
            if tag in scalars:
                ax.plot(*zip(*scalars[tag]), label=tag.split("/", 1)[1])
        ax.set(title=title, xlabel="step")
        if len(tags) > 1:
            ax.legend(fontsize=7)
    fig.suptitle(f"TensorBoard scalars of {logdir}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    print(f"plot: {png}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1].strip())
    main(sys.argv[1], sys.argv[2])
