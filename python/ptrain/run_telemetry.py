"""ptrain-run's telemetry (python/ptrain/run.py): the runtime's byte counters per link, the codec telemetry, the run
log's path, the TensorBoard scalars (python/ptrain/tb_events.py), the plots (python/ptrain/plots.py), the traffic
table and the progress bar."""

import ctypes
import json
import math
import os
import sys

class Traffic:
    """The runtime's byte counters of every rank, accumulated over training steps only: pause() before a
    validation adds what was sent since the last resume(), resume() after it zeroes the counters. Both are
    called by every rank at the same point (ptrain_step_traffic is collective)."""

    def __init__(self, step, world, tp=1):
        self.step, self.world, self.tp = step, world, tp
        self.links = [step.lib.ptrain_step_link_name(i).decode() for i in range(step.lib.ptrain_step_num_links())]
        self.totals = [0] * (world * len(self.links) * 2)

    def pause(self):
        """Adds the counts since the last resume() to the totals; returns them."""
        counts = (ctypes.c_int64 * len(self.totals))()
        self.step.check(self.step.lib.ptrain_step_traffic(counts), "ptrain_step_traffic")
        self.totals = [a + b for a, b in zip(self.totals, counts)]
        return list(counts)

    def take(self, pp):
        """The bytes per link label of the training step just done (pause() then resume())."""
        counts = self.pause()
        self.resume()
        return {label: entry["bytes"] for label, entry in self.per_link(pp, counts).items()}

    def resume(self):
        self.step.check(self.step.lib.ptrain_step_reset_traffic(), "ptrain_step_reset_traffic")

    def per_link(self, pp, counts=None):
        """{label: {"bytes", "messages"}} of `counts` (default: the totals): point-to-point links per stage pair
        (summed over dp replicas and tp ranks), collectives per communicator (summed over ranks). Rank r is
        stage (r // tp) % pp (grid (dp, pp, tp), row-major)."""
        counts = self.totals if counts is None else counts
        out = {}
        for r in range(self.world):
            s = (r // self.tp) % pp
            for i, link in enumerate(self.links):
                if link == "pp forward":
                    label = f"pp forward {s}->{s + 1}" if s + 1 < pp else None
                elif link == "pp backward":
                    label = f"pp backward {s}->{s - 1}" if s > 0 else None
                else:
                    label = link
                if label is None:
                    continue
                entry = out.setdefault(label, {"bytes": 0, "messages": 0})
                base = (r * len(self.links) + i) * 2
                entry["bytes"] += counts[base]
                entry["messages"] += counts[base + 1]
        order = lambda label: (0 if " forward " in label else 1 if " backward " in label else 2, label)
        return {k: out[k] for k in sorted(out, key=order)}


class Telemetry:
    """Codec telemetry of the generated step (docs/CodegenCpu.md, "Codec telemetry"): mode(i) before training
    step i (0-based) measures steps i + 1 = N, 2N, ... and captures the step before each (the LEP cosine needs the
    previous input at each site); read() after a measured step gathers every rank's sites (collective)."""

    FIELDS = 6  # compressions, error, residual norm, LEP cosine, cosines, input norm (EmitTelemetry.cpp)

    def __init__(self, step, world, every):
        self.step, self.world, self.every = step, world, every
        self.sites = [step.lib.ptrain_step_codec_site_name(i).decode()
                      for i in range(step.lib.ptrain_step_num_codec_sites())]

    def measured(self, i):
        return self.every > 0 and (i + 1) % self.every == 0

    def set_mode(self, i):
        mode = 2 if self.measured(i) else 1 if self.measured(i + 1) else 0
        self.set(mode)

    def set(self, mode):
        self.step.check(self.step.lib.ptrain_step_set_telemetry(mode), "ptrain_step_set_telemetry")

    def read(self):
        """{site: {compressions, error, residual_norm, lep_cos (None without a cosine), input_norm}}, the mean
        over the ranks that compressed at the site (data-parallel replicas)."""
        n = len(self.sites) * self.FIELDS
        out = (ctypes.c_double * (self.world * n))()
        self.step.check(self.step.lib.ptrain_step_codec_telemetry(out), "ptrain_step_codec_telemetry")
        result = {}
        for j, site in enumerate(self.sites):
            rows = [out[r * n + j * self.FIELDS:r * n + (j + 1) * self.FIELDS] for r in range(self.world)]
            rows = [f for f in rows if f[0] > 0]
            if not rows:
                continue
            cos = [f for f in rows if f[4] > 0]
            mean = lambda k, fs=rows: sum(f[k] for f in fs) / len(fs)
            result[site] = {"compressions": int(sum(f[0] for f in rows)), "error": mean(1), "residual_norm": mean(2),
                            "lep_cos": mean(3, cos) if cos else None, "input_norm": mean(5)}
        return result


def run_log_path(args):
    """--run-log, else run.jsonl beside the checkpoint, else in out/."""
    if args.run_log:
        return args.run_log
    if args.checkpoint:
        return os.path.join(os.path.dirname(os.path.abspath(args.checkpoint)), "run.jsonl")
    return os.path.join(args.out, "run.jsonl")


class RunLog:
    """Rank 0's JSON-lines run log (docs/Runtime.md). The file is opened, replacing an earlier run's log, only
    when this run has a record beyond its header (the first step's, or the end of a run with no step left): a run
    that fails while starting (a bad option the ranks find, a checkpoint that does not load) leaves the earlier
    log as it was."""

    def __init__(self, path):
        self.name = path
        self.file = None
        self.held = []

    def write(self, rec):
        if self.file is None and rec.get("record") == "run":
            self.held.append(rec)
            return
        if self.file is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.name)), exist_ok=True)
            self.file = open(self.name, "w")
            for held in self.held:
                self.file.write(json.dumps(held) + "\n")
        self.file.write(json.dumps(rec) + "\n")
        self.file.flush()

    def close(self):
        if self.file is not None:
            self.file.close()


def tensorboard_dir(args):
    """--tensorboard, else tensorboard/ beside the run log."""
    return args.tensorboard or os.path.join(os.path.dirname(os.path.abspath(run_log_path(args))), "tensorboard")


class Scalars:
    """The TensorBoard scalars of a run log "step" record (python/ptrain/tb_events.py): train/loss, val/loss,
    train/lr (the step's learning rate from the runtime's own ptrain_lr_warmup_cosine at the plan's lr, warm-up,
    total steps and min_lr_ratio, as the generated optimizer calls it: docs/CodegenCpu.md), train/tokens_per_s,
    train/mfu (model FLOP/s over the peak of the plan's cluster file: 6 N FLOPs per token for N parameters, Kaplan
    et al. 2020, "Scaling Laws for Neural Language Models", section 2.1; only with a cluster file), bytes/<link>
    (bytes of the step on each link) and codec/<site>/<field> (telemetry of measured steps)."""

    def __init__(self, step, plan):
        self.lr = None
        fn = getattr(step.lib, "ptrain_lr_warmup_cosine", None)
        if fn is not None and plan.get("optimizer", "none") != "none" and "min_lr_ratio" in plan:
            fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_float,
                           ctypes.POINTER(ctypes.c_float)]
            warmup, total, peak = plan["warmup_steps"], plan["total_steps"], plan["lr"]

            def lr(t):  # the op's 1-based step t (EmitOptimizer.cpp: s = t <= warmup ? t - 1 : t)
                out = ctypes.c_float()
                status = fn(t - 1 if t <= warmup else t, warmup, total, peak, peak * plan["min_lr_ratio"],
                            ctypes.byref(out))
                return out.value if status == 0 else None
            self.lr = lr
        self.flops_per_token, self.peak = None, None
        params = sum(math.prod(s.get("shape", [])) for s in plan.get("states", []) if s.get("kind") == "parameter")
        cluster = plan.get("cluster")
        if params and isinstance(cluster, str) and os.path.isfile(cluster):
            try:
                with open(cluster) as f:
                    device_peak = json.load(f)["gpu"]["peak_flops"]["f32"]
                world = plan.get("dp", 1) * plan["pp"] * plan.get("tp", 1)
                self.flops_per_token, self.peak = 6 * params, float(device_peak) * world
            except (OSError, ValueError, KeyError, TypeError):
                pass

    def of(self, rec):
        out = {"train/loss": rec.get("train_loss"), "val/loss": rec.get("val_loss")}
        if "tokens_per_s" in rec:
            out["train/tokens_per_s"] = rec["tokens_per_s"]
            if self.peak:
                out["train/mfu"] = self.flops_per_token * rec["tokens_per_s"] / self.peak
        if self.lr and "train_loss" in rec:
            out["train/lr"] = self.lr(rec["step"])
        for link, n in rec.get("bytes", {}).items():
            out[f"bytes/{link}"] = n
        for site, fields in rec.get("codec", {}).items():
            for k, v in fields.items():
                out[f"codec/{site}/{k}"] = v
        return out


def write_plots(path):
    try:
        from ptrain.plots import PlotError, plot_run
    except ImportError as e:
        print(f"ptrain-run: plots skipped: {e}", flush=True)
        return
    try:
        for p in plot_run(path):
            print(f"plot: {p}", flush=True)
    except PlotError as e:
        print(f"ptrain-run: plots skipped: {e}", flush=True)


def print_traffic(per_link, steps, library="MPI"):
    width = max(len(k) for k in per_link)
    print(f"traffic per training step (bytes handed to {library}, all ranks; runtime counters, {steps} steps):",
          flush=True)
    for label, entry in per_link.items():
        print(f"  {label:<{width}}  {entry['bytes'] / steps:>14,.0f} B  {entry['messages'] / steps:>6.1f} "
              f"{'messages' if ' forward' in label or ' backward' in label else 'operations'}", flush=True)


class Bar:
    """tqdm when importable, else a one-line bar redrawn with \\r."""

    def __init__(self, total, enabled):
        self.total, self.enabled, self.n = total, enabled, 0
        self.tqdm = None
        if enabled:
            try:
                from tqdm import tqdm
                self.tqdm = tqdm(total=total, unit="step", dynamic_ncols=True)
            except ImportError:
                pass

    def update(self, text):
        self.n += 1
        if not self.enabled:
            return
        if self.tqdm is not None:
            self.tqdm.set_postfix_str(text, refresh=False)
            self.tqdm.update(1)
            return
        width = 30
        fill = width * self.n // max(self.total, 1)
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {self.n}/{self.total} {text}")
        sys.stderr.flush()

    def write(self, text):
        if not self.enabled:
            return
        if self.tqdm is not None:
            self.tqdm.write(text)
        else:
            sys.stderr.write("\n" + text + "\n")
            sys.stderr.flush()

    def close(self):
        if self.tqdm is not None:
            self.tqdm.close()
        elif self.enabled:
            sys.stderr.write("\n")
