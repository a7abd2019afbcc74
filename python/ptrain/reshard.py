"""ptrain-run --resume of a checkpoint written at another data-parallel degree (DESIGN.md decision 5), the
rules of the runtime's ptrain_checkpoint_load_resharded (lib/Runtime/cpu/Reshard.cpp) on ptrain-run's files.

A checkpoint of the same plan at dp (python/ptrain/manifest.py: the reshard fingerprints agree; pp and tp
must be the same) is loaded by every rank of stage s and tp rank t of the new grid (dp') from the old files of
(s, t): replica 0's PATH[.stage<s>][.tp<t>], and with per-replica files (codec states, dp > 1) each old
replica d's PATH...dp<d>. Per state of the rank's table (ptrain_step_states), by key and kind:

  copy    parameters, optimizer moments, step counters, codec seeds, PowerSGD warm-start Q: old replica 0's
          (replicated across replicas; "warm-start Q is copied")
  mean    a data-parallel codec residual (a codec residual whose key is no pipeline link's): the mean of the
          old replicas' residuals, in fp64 (the pending error of the averaged update is kept); a ZeRO-1 bucket's
          residual ("sc/stage<s>.zero_bucket<k>/residual", the bucket padded to a multiple of dp) then has its
          padding tail cut or zero-padded to the new padded size
  reset   a pipeline-link codec residual (key "pp<s>-><t>/..."): zero, since it is one replica's error on its
          own micro-batches, which change with the degree
  shard   a ZeRO-1 AdamW moment (key "stage<s>.zero_bucket<k>/adam_m" or "/adam_v", docs/DistributedOptimizer.md):
          old replica d holds block d of the bucket padded to a multiple of dp; the old blocks are concatenated
          (gathered), the tail cut or zero-padded to the new padded size, and new replica d' takes block d'. Only
          padding elements are cut or added: their gradient and parameter are 0, so their moments are 0
  init    a codec state the old checkpoint does not hold (e.g. the data-parallel PowerSGD states a dp = 1 run
          has none of): its initial value from ptrain_step_init (a residual: zero)
  drop    a state of the old files the new rank does not hold (the other way round): not loaded

Any other state missing from the old files is an error naming the key and the file. Every old file is read
through the runtime's loader (checksum, keys, shapes) before anything changes; the rank's new values are written
with the runtime's ptrain_checkpoint_save to a private temporary file (in TMPDIR) that ptrain_step_load reads
(the same path on both targets: on CUDA it copies them to the device), then removed. The launcher warns before
any rank starts: one line per averaged or reset state, one for the initialized and one for the dropped ones.
"""

import ctypes
import os
import re
import tempfile

from ptrain import export, manifest

CODEC_RESIDUAL = 2  # PTRAIN_STATE_CODEC_RESIDUAL
LINK_KEY = re.compile(r"pp\d+->\d+/")  # CompressionPlan's linkStateKey (also "pp1->0/c1->1/...")
ZERO_KEY = manifest.ZERO_KEY
ZERO_RESIDUAL_KEY = manifest.ZERO_RESIDUAL_KEY
DTYPES = {0: ctypes.c_float, 2: ctypes.c_int64}


class ReshardError(Exception):
    pass


def rule(key, kind, in_old, replicas):
    """How a state of the new rank's table gets its value (module docstring): copy, mean, reset or init;
    None when no rule gives one. replicas: the old replicas that wrote files of their own."""
    residual = kind in (CODEC_RESIDUAL, "codec_residual")
    if in_old and ZERO_KEY.fullmatch(key):
        return "shard"
    codec = residual or str(kind).startswith("codec_") or kind in (3, 4)  # warm start, seed
    if not in_old:
        return "init" if codec else None
    if not residual:
        return "copy"
    if LINK_KEY.match(key):
        return "reset"
    return "mean" if replicas > 1 else "copy"


def describe(key, how, old_dp, new_dp, count=1):
    """A warning line about a state not copied verbatim (init and drop: `count` of them, keys quoted)."""
    change = f"dp {old_dp} -> {new_dp}"
    states = "a codec state" if count == 1 else f"{count} codec states"
    return {"mean": f"averaged '{key}' (data-parallel codec residual) over the {old_dp} old replicas' files "
                    f"({change})",
            "shard": f"resharded {count} ZeRO-1 AdamW moment shard(s) from the {old_dp} old replicas' files "
                     f"(gathered, padding adjusted, re-split over dp; {change}): {key}",
            "reset": f"reset '{key}' to zero (pipeline-link codec residual: each replica's micro-batches change with "
                     f"the data-parallel degree, {change})",
            "init": f"initialized {states} the checkpoint at dp {old_dp} does not hold to their initial values "
                    f"({change}): {key}",
            "drop": f"dropped {count} state(s) of the checkpoint that the plan at dp {new_dp} does not hold "
                    f"({change}): {key}"}[how]


def report(plan, checkpoint, headers, old_dp, replicas):
    """The launcher's warning lines: every state of the plan (plan.json's states, keys over all ranks) not
    copied verbatim from the checkpoint whose files' headers are `headers` ({path: [(key, dtype, kind,
    dims)]}; `replicas` old replicas wrote their own), and every checkpoint state the plan does not hold.
    Raises ReshardError for a state the plan needs that the checkpoint lacks and no rule gives."""
    old = {key: kind for states in headers.values() for key, _, kind, _ in states}
    new_dp, lines, init, shards = plan.get("dp", 1), [], [], []
    for s in plan.get("states", []):
        how = rule(s["key"], s["kind"], s["key"] in old, replicas)
        if how is None:
            raise ReshardError(f"--resume {checkpoint}: the plan's state '{s['key']}' ({s['kind']}) is in none of "
                               f"the checkpoint's files {sorted(headers)}: it is not this plan's checkpoint")
        if how in ("mean", "reset"):
            lines.append(describe(s["key"], how, old_dp, new_dp))
        elif how == "init":
            init.append(s["key"])
        elif how == "shard":
            shards.append(s["key"])
    keys = {s["key"] for s in plan.get("states", [])}
    dropped = sorted(k for k in old if k not in keys)
    # The codec states only one degree has (the data-parallel PowerSGD's at dp > 1): one line each way.
    for how, group in (("shard", shards), ("init", init), ("drop", dropped)):
        if group:
            lines.append(describe(", ".join(f"'{k}'" for k in group), how, old_dp, new_dp, len(group)))
    return lines


def load(step, files, replica=0, new_dp=1):
    """Loads this rank's states from the old files of its (stage, tp rank) (files[d]: old replica d's; one file
    without per-replica files) by the rules above, through a temporary checkpoint and ptrain_step_load. `replica`
    of `new_dp`: this rank's data-parallel coordinate, whose block of each ZeRO-1 moment it takes."""
    import numpy as np
    lib = step.lib
    lib.ptrain_last_error.restype = ctypes.c_char_p
    lib.ptrain_step_num_states.restype = ctypes.c_int64
    lib.ptrain_step_states.restype = ctypes.POINTER(export.StateDesc)
    if hasattr(lib, "ptrain_step_pull_states"):  # CUDA: the host mirrors of the initial values
        step.check(lib.ptrain_step_pull_states(), "ptrain_step_pull_states")
    n, table = lib.ptrain_step_num_states(), lib.ptrain_step_states()
    try:
        old = [export.load_checkpoint(lib, path) for path in files]
    except export.ExportError as e:
        raise ReshardError(str(e))
    out, keep = (export.StateDesc * n)(), []
    for i in range(n):
        d = table[i]
        key, dims = d.key.decode(), [d.dims[k] for k in range(d.rank)]
        if d.dtype not in DTYPES:
            raise ReshardError(f"state '{key}': dtype {d.dtype}, not f32 or i64")
        count = int(np.prod(dims)) if dims else 1
        current = np.ctypeslib.as_array(ctypes.cast(d.data, ctypes.POINTER(DTYPES[d.dtype])), (count,)).copy()
        how = rule(key, d.kind, key in old[0], len(old))
        if how is None:
            raise ReshardError(f"{files[0]}: has no state '{key}', which this rank holds: it is not this plan's "
                               "checkpoint")
        if how == "shard":
            if any(key not in o for o in old):
                raise ReshardError(f"state '{key}' (a ZeRO-1 moment shard) is missing from one of {files}")
            full = np.concatenate([o[key][1].reshape(-1) for o in old])
            padded = count * new_dp  # this rank's shard of the bucket padded to a multiple of the new dp
            full = full[:padded] if full.size >= padded else np.concatenate([full, np.zeros(padded - full.size,
                                                                                            full.dtype)])
            value = full[replica * count:(replica + 1) * count]
        elif how in ("copy", "mean", "reset"):
            kind, value = old[0][key]
            # A ZeRO-1 bucket's residual is the bucket padded to a multiple of dp: its length may change.
            resized = ZERO_RESIDUAL_KEY.fullmatch(key) and len(dims) == 1 and value.ndim == 1
            if (list(value.shape) != dims and not resized) or kind != d.kind:
                raise ReshardError(f"{files[0]}: state '{key}' has the shape {list(value.shape)} (kind {kind}), this "
                                   f"rank's has {dims} (kind {d.kind})")
        if how == "shard":
            pass
        elif how == "copy":
            value = old[0][key][1].reshape(-1)
        elif how == "mean":
            value = (sum(o[key][1].astype(np.float64) for o in old) / len(old)).astype(np.float32).reshape(-1)
        elif how == "reset":
            value = np.zeros(count, current.dtype)
        else:
            value = current
        if how in ("copy", "mean") and ZERO_RESIDUAL_KEY.fullmatch(key) and value.size != count:
            # Only padding elements are cut or added (what the bucket's padding lost is dropped; new ones start at 0).
            value = value[:count] if value.size >= count else np.concatenate([value, np.zeros(count - value.size,
                                                                                              value.dtype)])
        value = np.ascontiguousarray(value, current.dtype)
        keep += [value, d.key]
        out[i] = export.StateDesc(d.key, value.ctypes.data, d.dtype, d.kind, d.rank, d.dims, d.init, d.init_seed)
    fd, tmp = tempfile.mkstemp(prefix="ptrain-resharded-")  # In TMPDIR: the checkpoint's folder may be read-only
    os.close(fd)
    try:
        if lib.ptrain_checkpoint_save(out, ctypes.c_int64(n), tmp.encode()) != 0:
            raise ReshardError(f"ptrain_checkpoint_save({tmp}): {lib.ptrain_last_error().decode()}")
        step.check(lib.ptrain_step_load(tmp.encode()), f"ptrain_step_load({tmp}, resharded from {files[0]})")
    finally:
        for p in (tmp, tmp + ".tmp"):
            if os.path.exists(p):
                os.remove(p)
