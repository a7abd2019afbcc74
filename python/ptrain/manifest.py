"""PATH.json, ptrain-run's manifest of a checkpoint, and its check against a plan (ptrain-run --resume,
ptrain-export).

ptrain-run --checkpoint PATH writes, beside the checkpoint files, PATH.json:

    {"step": 5, "seed": 0, "dp": 2, "pp": 2, "tp": 1, "plan_fingerprint": "<sha-256>",
     "reshard_fingerprint": "<sha-256>", "per_replica": true, "files": [".stage0", ".stage1"]}

step and seed are the data position (--resume continues from there); dp/pp/tp the grid that wrote it;
plan_fingerprint the fingerprint of the plan embedded in libstep.so (python/ptrain/plan_abi.py);
reshard_fingerprint the same over the plan without what changes with the data-parallel degree (dp, the global
batch, its split into micro-batches per replica, and the codec states, which DESIGN.md decision 5's resharding
rules cover), so that a checkpoint of the
same plan at another dp is told apart from another plan's; per_replica whether every dp replica d > 0 also
wrote its own files PATH...dp<d> (codec states differ between replicas); files the suffixes after PATH of
replica 0's files, one per pipeline stage and tensor-parallel rank (stage_files); data the data position of
python/ptrain/loader.py (format, sampler, seq, train_tokens, val_tokens, vocab_size and, for token formats,
consumed_samples and samples_per_epoch; docs/Data.md), which run_checkpoint.py's resume_consumed checks against --data.
Older manifests may lack the last five fields: what is there is checked.
"""

import hashlib
import json
import os
import re

# The fields of a plan that change with the data-parallel degree alone (plan_abi.bound_fields' keys): the
# degree, the global batch or its split into micro-batches per replica (--deterministic-dp keeps dp x
# micro-batches; docs/Runtime.md), and the codec states.
DP_FIELDS = ("dp", "global_batch", "micro_batches", "replica_batch", "codec_states")
# The keys of ZeRO-1's AdamW moment shards (lib/Transforms/DistributedOptimizer.cpp): their shape changes with dp.
ZERO_KEY = re.compile(r"stage\d+\.zero_bucket\d+/adam_[mv]")
# The keys of the error-feedback residuals of ZeRO-1's compressed reduce-scatter (lib/Transforms/
# CompressDataParallel.cpp): the whole bucket padded to a multiple of dp, so their shape changes with dp too.
ZERO_RESIDUAL_KEY = re.compile(r"sc/stage\d+\.zero_bucket\d+/residual")
# The optional fields of PATH.json and their types: (key, type, in words).
FIELD_TYPES = (("seed", int, "an integer"), ("dp", int, "an integer"), ("pp", int, "an integer"),
               ("tp", int, "an integer"), ("plan_fingerprint", str, "a string"), ("reshard_fingerprint", str, "a string"),
               ("per_replica", bool, "true or false"), ("files", list, "a list"))


class ManifestError(Exception):
    pass


def stage_files(plan, checkpoint):
    """[(stage, tp rank, path)] of a checkpoint's files: PATH at pp = tp = 1, PATH.stage<s> per pipeline stage,
    PATH[.stage<s>].tp<t> per tensor-parallel rank (python/ptrain/run_checkpoint.py's stage_path)."""
    pp, tp = plan.get("pp", 1), plan.get("tp", 1)
    files = []
    for s in range(pp):
        path = checkpoint if pp == 1 else f"{checkpoint}.stage{s}"
        files += [(s, t, path if tp == 1 else f"{path}.tp{t}") for t in range(tp)]
    return files


def reshard_fingerprint(embedded):
    """The SHA-256 of a plan's bound fields (the plan embedded in libstep.so, without its fingerprint) except
    DP_FIELDS, with only the states that are no codec state: equal for one compile at two dp degrees."""
    facts = {k: v for k, v in embedded.items() if k not in DP_FIELDS and k != "fingerprint"}
    facts["states"] = [s for s in facts.get("states", []) if not str(s.get("kind", "")).startswith("codec_")]
    # A ZeRO-1 moment's shape is its shard, padded bucket / dp (python/ptrain/reshard.py reshards it).
    facts["states"] = [{k: v for k, v in s.items() if k != "shape"} if ZERO_KEY.fullmatch(str(s.get("key", "")))
                       else s for s in facts["states"]]
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def read(checkpoint):
    """PATH.json as a dict; None when there is none (a checkpoint written by ptrain_step_save directly)."""
    path = checkpoint + ".json"
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            text = f.read()
    except (OSError, ValueError) as e:
        raise ManifestError(f"{path}: not a ptrain-run checkpoint manifest ({e})")
    return parse(text, path)


def parse(text, path):
    """The manifest whose JSON text was read from path (named in errors); ManifestError unless it is an object
    with an integer 'step'."""
    try:
        manifest = json.loads(text)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("step"), int):
            raise ValueError("no integer 'step'")
    except ValueError as e:
        raise ManifestError(f"{path}: not a ptrain-run checkpoint manifest ({e})")
    # The optional fields' types, so that check() compares values, never fails on a wrong type (a
    # reshard_fingerprint of true made it raise TypeError: found by fuzz/python/fuzz_checks.py manifest).
    for key, kind, what in FIELD_TYPES:
        value = manifest.get(key)
        if key in manifest and not (isinstance(value, kind) and not (kind is int and isinstance(value, bool))):
            raise ManifestError(f"{path}: '{key}' must be {what}, not {json.dumps(value)}")
    if "files" in manifest and not all(isinstance(f, str) for f in manifest["files"]):
        raise ManifestError(f"{path}: 'files' must be a list of strings")
    return manifest


def check(manifest, plan, where, checkpoint, embedded, other_dp=False):
    """Raises ManifestError unless the manifest of `checkpoint` describes a checkpoint of the plan `where`
    (plan.json's path), whose embedded plan (with its fingerprint) is `embedded`: the same grid and
    fingerprint, and the files of the plan's grid. other_dp: another data-parallel degree is accepted when
    the reshard fingerprints agree (then plan_fingerprint differs by the degree alone)."""
    path = checkpoint + ".json"
    fingerprint = embedded.get("fingerprint", "")
    for axis in ("dp", "pp", "tp"):
        if axis in manifest and manifest[axis] != plan.get(axis, 1) and not (axis == "dp" and other_dp):
            raise ManifestError(f"{path}: the checkpoint was written by a run at {axis} = {manifest[axis]}, but "
                                f"{where} has {axis} = {plan.get(axis, 1)}: it is not this plan's checkpoint")
    same_dp = manifest.get("dp", plan.get("dp", 1)) == plan.get("dp", 1)
    if same_dp and "plan_fingerprint" in manifest and manifest["plan_fingerprint"] != fingerprint:
        raise ManifestError(f"{path}: the checkpoint was trained by the plan of fingerprint "
                            f"{str(manifest['plan_fingerprint'])[:12]}, but {where} is the plan of fingerprint "
                            f"{fingerprint[:12]}: it is another compile's checkpoint")
    if not same_dp:
        theirs, ours = manifest.get("reshard_fingerprint"), reshard_fingerprint(embedded)
        if theirs is None:
            raise ManifestError(f"{path}: written at dp = {manifest['dp']} by a ptrain-run that did not record the "
                                f"plan's reshard_fingerprint, so it cannot be told whether it is {where}'s plan at "
                                f"another dp; resume at dp = {manifest['dp']}")
        if theirs != ours:
            raise ManifestError(f"{path}: the checkpoint was trained by the plan of fingerprint "
                                f"{str(manifest.get('plan_fingerprint'))[:12]} at dp = {manifest['dp']}, and {where} "
                                f"(fingerprint {fingerprint[:12]}, dp = {plan.get('dp', 1)}) differs from it in more "
                                f"than the data-parallel degree (reshard fingerprints {theirs[:12]} and "
                                f"{ours[:12]}): it is another compile's checkpoint")
    if "files" in manifest:
        expected = [p[len(checkpoint):] for _, _, p in stage_files(plan, checkpoint)]
        if manifest["files"] != expected:
            raise ManifestError(f"{path}: lists the files PATH + {manifest['files']}, the plan's grid needs PATH + "
                                f"{expected}")
    return manifest
