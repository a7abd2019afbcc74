"""A ptrain-run checkpoint as one set of files: written as pending files, committed together with the manifest
by rank 0, and checked file by file on --resume (python/ptrain/run_loop.py, run_checkpoint.py).

ptrain-run --checkpoint PATH has every rank save its own file (ptrain_step_save: PATH[.stage<s>][.tp<t>][.dp<d>],
run_checkpoint.stage_path) and rank 0 write the manifest PATH.json (python/ptrain/manifest.py). A rank whose save
fails (a full disk, a folder in the way) must not leave the set half new: the earlier checkpoint's other files and
its manifest would then describe a state no run had. So:

1. every rank saves to its file's PENDING name (the runtime itself writes PENDING.tmp and renames it, so a
   pending file is whole);
2. rank 0 waits until every file of the set is pending, written by this run (not older than its start: a pending
   file an earlier failed run left is waited past, and replaced by this run's) and after this run's step (its
   step counter, when the plan's optimizer has one), then renames each pending file to its name and last writes
   PATH.json through a temporary file and a rename. A rank that fails instead ends the job
   (ptrain-run aborts every rank), so rank 0 never commits a set with a file missing;
3. --resume reads each file's step counter and refuses a set whose files are of different steps, or of another
   step than PATH.json's (a commit interrupted between its renames).

The files are on a file system every rank sees (as --resume's checks already require).
"""

import json
import os
import struct
import time

from ptrain.run_checkpoint import per_replica_states, stage_path
from ptrain.run_plan import RunError

PENDING = ".pending"
# How often rank 0 looks for the other ranks' pending files (seconds).
POLL_S = 0.05


def set_files(checkpoint, plan):
    """Every file of one checkpoint: each (replica with files of its own, stage, tp rank)'s."""
    replicas = plan.get("dp", 1) if per_replica_states(plan) else 1
    return [stage_path(checkpoint, plan, s, t, d) for d in range(replicas) for s in range(plan["pp"])
            for t in range(plan.get("tp", 1))]


def read_step(path):
    """The step counter (AdamW's, the state of kind PTRAIN_STATE_STEP_COUNTER) a checkpoint file was saved
    after, from its header (export.read_entries) and that state's 8 bytes; None when the step has no counter
    (SGD, no optimizer). RunError naming the file when its header cannot be read or the file is not as long as
    its header says (a truncated copy); the loader checks the whole file's checksum later."""
    from ptrain import export  # ptrain-export's reader of the checkpoint format
    try:
        data_offset, entries = export.read_entries(path)
    except export.ExportError as e:
        raise RunError(str(e))
    size = os.path.getsize(path)
    expected = data_offset + max((offset + nbytes for *_, offset, nbytes in entries), default=0) + 8  # + FNV-1a 64
    if size != expected:
        raise RunError(f"checkpoint file {path}: {size} bytes, but its header describes {expected} "
                       f"({'truncated' if size < expected else 'trailing bytes'})")
    counters = [offset for _, dtype, kind, _, offset, nbytes in entries if kind == export.STEP_COUNTER and dtype == 2 and
                nbytes == 8]
    if not counters:
        return None
    with open(path, "rb") as f:
        f.seek(data_offset + counters[0])
        return struct.unpack("<q", f.read(8))[0]


def commit(checkpoint, plan, step, manifest, started, timeout_s):
    """Rank 0, after its own save: waits for every pending file of this run's step (at most timeout_s, the
    communication deadline), renames them into place, then writes PATH.json = manifest atomically."""
    files = set_files(checkpoint, plan)
    deadline = time.monotonic() + timeout_s
    waiting = list(files)
    while waiting:
        path = waiting[0]
        pending = path + PENDING
        if os.path.isfile(pending) and os.stat(pending).st_mtime >= started and read_step(pending) in (None, step):
            waiting.pop(0)
            continue
        if time.monotonic() > deadline:
            raise RunError(f"--checkpoint {checkpoint}: {pending} of step {step} was not written within "
                           f"{timeout_s:g} s (the rank that saves it failed or stalled); the earlier checkpoint is "
                           "unchanged")
        time.sleep(POLL_S)
    for path in files:
        os.replace(path + PENDING, path)
    temporary = checkpoint + ".json.tmp"
    with open(temporary, "w") as f:
        json.dump(manifest, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, checkpoint + ".json")


def check_steps(resume, files, step):
    """--resume: every file's step counter equals the manifest's step (RunError naming the files otherwise)."""
    steps = {path: read_step(path) for path in files}
    by_step = {}
    for path, n in steps.items():
        if n is not None:
            by_step.setdefault(n, []).append(path)
    if len(by_step) > 1:
        raise RunError(f"--resume {resume}: the checkpoint files are of different steps: " +
                       "; ".join(f"after step {n}: {', '.join(paths)}" for n, paths in sorted(by_step.items())) +
                       " (a save that failed part-way; the files of one run are needed)")
    if by_step and step not in by_step:
        raise RunError(f"--resume {resume}: {resume}.json says step {step}, but the checkpoint files are after step "
                       f"{next(iter(by_step))}: the files are not the ones the manifest describes")
