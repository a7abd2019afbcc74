"""The checkpoint manifest's check against a plan (python/ptrain/manifest.py, shared by ptrain-run --resume and
ptrain-export) and the resharding rules of a resume at another dp (python/ptrain/reshard.py), on plans made
here; the real runs: test/Target/Cpp/resume_grid_e2e.py (CTest codegen-cpu-resume-grid)."""

import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
from ptrain import manifest, plan_abi, reshard


def plan_at(dp, lr=1e-3, codec=True):
    states = [{"key": "w", "kind": "parameter", "shape": [4, 4], "dtype": "f32"}]
    codec_states = ([{"key": "pp1->0/residual", "kind": "codec_residual", "shape": [4], "dtype": "f32"}] +
                    ([{"key": "sc/w/grad/residual", "kind": "codec_residual", "shape": [4, 4], "dtype": "f32"}]
                     if dp > 1 else [])) if codec else []
    plan = {"dp": dp, "pp": 2, "tp": 1, "lr": lr, "batch": 4, "global_batch": 8 * dp, "states": states + codec_states,
            "codec_states": codec_states, "model": "/somewhere/gpt.onnx"}
    return plan, plan_abi.bound_fields(plan)


def written_by(plan, embedded):
    """The manifest ptrain-run writes for a checkpoint of `plan` (run.py)."""
    return {"step": 2, "seed": 0, "dp": plan["dp"], "pp": plan["pp"], "tp": 1,
            "plan_fingerprint": embedded["fingerprint"], "reshard_fingerprint": manifest.reshard_fingerprint(embedded),
            "per_replica": plan["dp"] > 1, "files": [".stage0", ".stage1"]}


def check(saved, plan, embedded, other_dp=True):
    return manifest.check(saved, plan, "out/plan.json", "ck", embedded, other_dp=other_dp)


def test_the_same_plan():
    plan, embedded = plan_at(2)
    assert check(written_by(plan, embedded), plan, embedded)["step"] == 2


def test_another_compile_names_both_fingerprints():
    plan, embedded = plan_at(2)
    other, other_embedded = plan_at(2, lr=3e-3)
    with pytest.raises(manifest.ManifestError, match=rf"ck.json: the checkpoint was trained by the plan of fingerprint "
                       rf"{other_embedded['fingerprint'][:12]}, but out/plan.json is the plan of fingerprint "
                       rf"{embedded['fingerprint'][:12]}: it is another compile's checkpoint"):
        check(written_by(other, other_embedded), plan, embedded)


def test_another_dp_of_the_same_plan():
    # The fingerprints differ (dp, global_batch, SC's states); the reshard fingerprints agree.
    plan, embedded = plan_at(1)
    old, old_embedded = plan_at(2)
    assert old_embedded["fingerprint"] != embedded["fingerprint"]
    assert manifest.reshard_fingerprint(old_embedded) == manifest.reshard_fingerprint(embedded)
    assert check(written_by(old, old_embedded), plan, embedded)["dp"] == 2
    with pytest.raises(manifest.ManifestError, match=r"written by a run at dp = 2, but out/plan.json has dp = 1"):
        check(written_by(old, old_embedded), plan, embedded, other_dp=False)  # ptrain-export's check


def test_another_dp_with_the_global_batch_split_otherwise():
    # --deterministic-dp keeps the global batch: dp 2 x 2 micro-batches resumes at dp 1 x 4 (docs/Runtime.md).
    def split(dp, micro_batches, batch=4):
        plan = dict(plan_at(dp, codec=False)[0], micro_batches=micro_batches, batch=batch,
                    replica_batch=micro_batches * batch, global_batch=dp * micro_batches * batch, deterministic_dp=True)
        return plan, plan_abi.bound_fields(plan)
    plan, embedded = split(1, 4)
    old, old_embedded = split(2, 2)
    assert check(written_by(old, old_embedded), plan, embedded)["dp"] == 2
    # Another micro-batch size (rows per micro-batch) is another compile.
    other, other_embedded = split(2, 1, batch=8)
    with pytest.raises(manifest.ManifestError, match=r"differs from it in more than the data-parallel degree"):
        check(written_by(other, other_embedded), plan, embedded)


def test_another_plan_at_another_dp():
    plan, embedded = plan_at(1)
    old, old_embedded = plan_at(2, lr=3e-3)
    with pytest.raises(manifest.ManifestError, match=rf"trained by the plan of fingerprint "
                       rf"{old_embedded['fingerprint'][:12]} at dp = 2, and out/plan.json \(fingerprint "
                       rf"{embedded['fingerprint'][:12]}, dp = 1\) differs from it in more than the data-parallel "
                       r"degree"):
        check(written_by(old, old_embedded), plan, embedded)


def test_a_manifest_without_reshard_fingerprint_at_another_dp():
    plan, embedded = plan_at(1)
    old, old_embedded = plan_at(2)
    saved = written_by(old, old_embedded)
    del saved["reshard_fingerprint"]
    with pytest.raises(manifest.ManifestError, match=r"did not record the plan's reshard_fingerprint.*resume at "
                                                     r"dp = 2"):
        check(saved, plan, embedded)


@pytest.mark.parametrize("axis", ["pp", "tp"])
def test_another_pipeline_split_or_tp_degree(axis):
    plan, embedded = plan_at(2)
    saved = dict(written_by(plan, embedded), **{axis: 4})
    with pytest.raises(manifest.ManifestError, match=rf"written by a run at {axis} = 4, but out/plan.json has {axis} "):
        check(saved, plan, embedded)


def test_files_of_another_grid():
    plan, embedded = plan_at(2)
    saved = dict(written_by(plan, embedded), files=[".stage0"])
    with pytest.raises(manifest.ManifestError, match=r"lists the files PATH \+ \['.stage0'\], the plan's grid needs "
                                                     r"PATH \+ \['.stage0', '.stage1'\]"):
        check(saved, plan, embedded)


def test_reshard_fingerprint_sees_the_model():
    _, a = plan_at(2)
    plan, _ = plan_at(2)
    plan["states"][0]["shape"] = [4, 8]  # Another parameter shape: another model.
    assert manifest.reshard_fingerprint(plan_abi.bound_fields(plan)) != manifest.reshard_fingerprint(a)


@pytest.mark.parametrize("key,kind,in_old,replicas,want", [
    ("w", "parameter", True, 2, "copy"),
    ("w/adam_m", 1, True, 2, "copy"),
    ("sc/w/grad/warm_start_q", 3, True, 2, "copy"),
    ("sc/w/grad/residual", 2, True, 2, "mean"),
    ("sc/w/grad/residual", 2, True, 1, "copy"),
    ("pp1->0/residual", 2, True, 2, "reset"),
    ("pp1->0/c1->1/residual", "codec_residual", True, 1, "reset"),
    ("tp/layer0/qkv/residual", 2, True, 2, "mean"),
    ("sc/w/grad/residual", 2, False, 2, "init"),
    ("sc/w/grad/warm_start_q", "codec_warm_start", False, 2, "init"),
    ("w", 0, False, 2, None),
])
def test_rules(key, kind, in_old, replicas, want):
    assert reshard.rule(key, kind, in_old, replicas) == want


def test_report():
    plan, _ = plan_at(2)
    headers = {"ck.stage0": [("w", 0, 0, [4, 4]), ("sc/w/grad/residual", 0, 2, [4, 4])],
               "ck.stage1": [("w", 0, 0, [4, 4]), ("pp1->0/residual", 0, 2, [4]), ("old/only", 0, 2, [1])]}
    lines = reshard.report(plan, "ck", headers, 3, 3)
    assert lines == ["reset 'pp1->0/residual' to zero (pipeline-link codec residual: each replica's micro-batches "
                     "change with the data-parallel degree, dp 3 -> 2)",
                     "averaged 'sc/w/grad/residual' (data-parallel codec residual) over the 3 old replicas' files "
                     "(dp 3 -> 2)",
                     "dropped 1 state(s) of the checkpoint that the plan at dp 2 does not hold (dp 3 -> 2): "
                     "'old/only'"]
    del headers["ck.stage0"]
    headers["ck.stage1"] = headers["ck.stage1"][1:]
    with pytest.raises(reshard.ReshardError, match=r"the plan's state 'w' \(parameter\) is in none of the "
                                                   r"checkpoint's files \['ck.stage1'\]"):
        reshard.report(plan, "ck", headers, 3, 3)
