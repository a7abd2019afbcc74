"""The committed opset 18-23 fixtures (test/Import/ONNX/opset18+/Inputs) are what
python/ptrain_fixtures/export_newest.py makes, and the unfolded-export ops fixture (test/Import/ONNX/opset18+/
unfolded) what python/ptrain_fixtures/export_unfolded_ops.py makes, with the project's venv (.venv: PyPI onnx, onnxruntime;
scripts/setup-python.sh): the models and inputs byte for byte, the onnxruntime reference outputs and the numpy
reference gradients to 1e-6. Skipped with a message
when .venv is missing, except under CI=true, where it must run."""

import glob
import os
import subprocess

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
OPSET18 = os.path.join(ROOT, "test", "Import", "ONNX", "opset18+")
GENERATORS = [("export_newest", os.path.join(OPSET18, "Inputs")),
              ("export_unfolded_ops", os.path.join(OPSET18, "unfolded"))]


def tensor(path):
    with open(path, "rb") as f:
        return onnx.numpy_helper.to_array(onnx.TensorProto.FromString(f.read()))


@pytest.mark.parametrize("script,fixtures", GENERATORS, ids=[g[0] for g in GENERATORS])
def test_newest_fixtures_reproduce(tmp_path, script, fixtures):
    if not os.path.exists(VENV_PYTHON):
        if os.environ.get("CI") == "true":
            pytest.fail(".venv is missing under CI: scripts/setup.sh must create it (scripts/setup-python.sh)")
        pytest.skip(f".venv is missing: run scripts/setup-python.sh to check the fixtures of {script}")
    subprocess.run([VENV_PYTHON, "-m", f"ptrain_fixtures.{script}", "--out", str(tmp_path)], check=True, cwd=ROOT,
                   env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    committed = sorted(os.path.basename(p) for p in glob.glob(os.path.join(fixtures, "*")))
    assert committed == sorted(os.listdir(tmp_path))
    for name in committed:
        ours, theirs = os.path.join(fixtures, name), os.path.join(tmp_path, name)
        if name.endswith(".reference_grads.onnx"):
            for a, b in zip(onnx.load(ours).graph.initializer, onnx.load(theirs).graph.initializer):
                assert a.name == b.name
                np.testing.assert_allclose(onnx.numpy_helper.to_array(a), onnx.numpy_helper.to_array(b), atol=1e-6)
        elif ".output_" in name:
            np.testing.assert_allclose(tensor(ours), tensor(theirs), atol=1e-6, err_msg=name)
        elif name.endswith(".txt"):
            assert abs(float(open(ours).read()) - float(open(theirs).read())) < 1e-6, name
        else:
            with open(ours, "rb") as a, open(theirs, "rb") as b:
                assert a.read() == b.read(), f"{name} differs from a fresh export"
