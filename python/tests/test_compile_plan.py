"""plan.json's composition in ptrain-compile (python/ptrain/compile.py): the module's fields of
`ptrain-translate --emit-plan-json` and the driver's, in PLAN_FIELDS order (docs/Plan.md, "plan.json"); the
end-to-end check against the old driver is scripts/plan-json-parity.py."""

import json

import pytest

from ptrain import compile as ptrain_compile


def test_fields_follow_plan_order_whatever_the_source():
    driver = {"library": "/out/libstep.so", "model": "/m.onnx", "policy": "none", "constants_file": "step.consts.bin"}
    facts = {"dp": 2, "entry_points": {"train": "ptrain_step_train"}, "batch": 4, "global_batch": 16, "pp": 2}
    plan = ptrain_compile.compose_plan(driver, facts)
    assert list(plan) == ["model", "library", "dp", "pp", "policy", "entry_points", "constants_file", "batch",
                          "global_batch"]


def test_a_new_module_field_follows_the_listed_ones():
    plan = ptrain_compile.compose_plan({"model": "/m.onnx"}, {"something_new": 1, "batch": 4})
    assert list(plan) == ["model", "batch", "something_new"]


def test_a_field_from_both_sources_is_an_error():
    with pytest.raises(ptrain_compile.CompileError, match="dp given by both"):
        ptrain_compile.compose_plan({"dp": 2}, {"dp": 2})


def test_the_emitter_output_must_be_an_object(tmp_path, monkeypatch):
    monkeypatch.setattr(ptrain_compile, "run", lambda cmd, what: json.dumps([1, 2]))
    with pytest.raises(ptrain_compile.CompileError, match="not a JSON object"):
        ptrain_compile.module_plan(str(tmp_path), "step.mlir", "cpu")
    monkeypatch.setattr(ptrain_compile, "run", lambda cmd, what: "{")
    with pytest.raises(ptrain_compile.CompileError, match="not a JSON object"):
        ptrain_compile.module_plan(str(tmp_path), "step.mlir", "cpu")
