"""ptrain-run's checkpoints (python/ptrain/run.py): the file of each (stage, tp rank, replica), and --resume's checks
of a checkpoint against the plan and the data: its manifest (python/ptrain/manifest.py), the data position, the
files it needs, and what a resume at another dp does not copy verbatim (python/ptrain/reshard.py)."""

import os

from ptrain import manifest, plan_abi, reshard
from ptrain.run_data import run_samples
from ptrain.run_plan import RunError

def per_replica_states(plan):
    """Whether the dp replicas hold different states: codec states (error-feedback residuals of pipeline links,
    TP sites and dp gradients) are what each replica's own data lost, and under ZeRO-1 (plan "zero" = 1) each
    replica holds its own shard of the AdamW moments, so every replica keeps its own."""
    return plan.get("dp", 1) > 1 and (bool(plan.get("codec_states")) or plan.get("zero", 0) == 1)


def stage_path(path, plan, stage, tp_rank=0, replica=0):
    """The checkpoint file of a pipeline stage: PATH itself at pp = 1, else PATH.stage<s>; with tp > 1 each
    tensor-parallel rank's part of it, PATH[.stage<s>].tp<t>; dp replica d > 0's own copy,
    PATH[.stage<s>][.tp<t>].dp<d>, when the replicas hold different states (per_replica_states)."""
    path = path if plan["pp"] == 1 else f"{path}.stage{stage}"
    path = path if plan.get("tp", 1) == 1 else f"{path}.tp{tp_rank}"
    return path if replica == 0 or not per_replica_states(plan) else f"{path}.dp{replica}"


def resume_position(args, plan):
    """The step a checkpoint was saved after and the grid that wrote it: (step, old dp, old replicas with files
    of their own). Checks its manifest PATH.json against the plan (python/ptrain/manifest.py: another plan's
    checkpoint names both fingerprints; another dp is resharded, another pp or tp is an error), the seed, and
    that every file it needs exists."""
    check_files(args, plan, 1, 1)
    try:
        position = manifest.read(args.resume)
        if position is None:
            raise RunError(f"--resume {args.resume}: cannot read the data position {args.resume}.json (no such file; "
                           "ptrain-run --checkpoint writes it)")
        start, seed = int(position["step"]), int(position["seed"])
    except manifest.ManifestError as e:
        raise RunError(f"--resume {args.resume}: {e}")
    except (ValueError, KeyError, TypeError) as e:
        raise RunError(f"--resume {args.resume}: cannot read the data position {args.resume}.json ({e})")
    if start < 0:
        raise RunError(f"--resume {args.resume}: {args.resume}.json says step {start}; a step is >= 0")
    dp = plan.get("dp", 1)
    old_dp = position.get("dp", dp)
    try:
        manifest.check(position, plan, os.path.join(args.out, "plan.json"), args.resume,
                       plan_abi.read_embedded(plan["library"]) or {}, other_dp=True)
    except manifest.ManifestError as e:
        raise RunError(f"--resume {args.resume}: {e}")
    if seed != args.seed:
        raise RunError(f"--resume {args.resume}: the checkpoint was trained with --seed {seed}, not {args.seed}")
    if start > args.steps:
        raise RunError(f"--resume {args.resume}: the checkpoint is after step {start}, beyond --steps {args.steps}")
    if old_dp == dp:
        replicas = dp if per_replica_states(plan) else 1
    else:  # Another degree: the old run's own files (an older manifest without per_replica: the files there).
        per_replica = position.get("per_replica", os.path.isfile(old_path(args.resume, plan, 0, 0, 1, True)))
        replicas = old_dp if per_replica and old_dp > 1 else 1
    check_files(args, plan, old_dp, replicas)
    from ptrain import checkpoint_set  # it imports this module
    checkpoint_set.check_steps(args.resume, [old_path(args.resume, plan, s, t, d, replicas > 1) for d in range(replicas)
                                             for s in range(plan["pp"]) for t in range(plan.get("tp", 1))], start)
    return start, old_dp, replicas


def resume_consumed(args, plan, corpus):
    """The training samples a checkpoint's run consumed (its manifest's "data" position, python/ptrain/loader.py),
    after checking that it was trained on this data: the same format, training tokens and sequence length. The
    bytes format's position is the step (0 here)."""
    position = manifest.read(args.resume) or {}
    data = position.get("data")
    where = f"--resume {args.resume}: {args.resume}.json"
    if data is None:
        if corpus.format == "bytes":
            return 0
        raise RunError(f"{where} records no data position (a checkpoint of a run on the bytes format, before "
                       f"DESIGN.md decision 13); --data {args.data} is {corpus.format}")
    ours = dict(corpus.describe(), seq=plan["seq"], sampler="windows" if corpus.format == "bytes" else
                args.sample_index)
    if ours["sampler"] == "megatron":
        ours["index_samples"] = run_samples(args, plan)
    for key in ("format", "train_tokens", "seq", "sampler", "index_samples"):
        if key not in ours or (key == "sampler" and key not in data):  # Older manifests: their own sampler.
            continue
        if data.get(key) != ours[key]:
            raise RunError(f"{where}: the checkpoint was trained on other data: its {key} is {data.get(key)!r}, "
                           f"--data {args.data} has {ours[key]!r}" + (
                               " (--sample-index megatron builds its index for --steps x the global batch: resume "
                               "with the first run's --steps)" if key == "index_samples" else ""))
    if corpus.format == "bytes":
        return 0
    consumed = data.get("consumed_samples")
    if not isinstance(consumed, int) or consumed < 0:
        raise RunError(f"{where}: 'consumed_samples' must be a non-negative integer, not {consumed!r}")
    return consumed


def check_files(args, plan, old_dp, replicas):
    for d in range(replicas):
        for s in range(plan["pp"]):
            for t in range(plan.get("tp", 1)):
                path = old_path(args.resume, plan, s, t, d, replicas > 1)
                if not os.path.isfile(path):
                    raise RunError(f"--resume {args.resume}: no checkpoint file {path}" +
                                   (f" (replica {d} of the checkpoint's dp = {old_dp})" if replicas > 1 else ""))


def old_path(checkpoint, plan, stage, tp_rank, replica, per_replica):
    """A checkpoint file of (stage, tp rank, replica) of a run at the plan's pp and tp (stage_path), whose
    replicas d > 0 wrote files of their own when per_replica."""
    path = stage_path(checkpoint, dict(plan, dp=1), stage, tp_rank)
    return f"{path}.dp{replica}" if replica > 0 and per_replica else path


def reshard_warnings(args, plan, old_dp, replicas):
    """The states a resume at another dp does not copy verbatim (python/ptrain/reshard.py), one line each."""
    from ptrain import export
    headers = {}
    for d in range(replicas):
        for s in range(plan["pp"]):
            for t in range(plan.get("tp", 1)):
                path = old_path(args.resume, plan, s, t, d, replicas > 1)
                try:
                    headers[path] = export.read_header(path)
                except export.ExportError as e:
                    raise RunError(f"--resume {args.resume}: {e}")
    try:
        return reshard.report(plan, args.resume, headers, old_dp, replicas)
    except reshard.ReshardError as e:
        raise RunError(str(e))
