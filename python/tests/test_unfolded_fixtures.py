"""The committed fixture of the unfolded-export ops (test/Import/ONNX/opset18+/unfolded) is what
python/ptrain/export_unfolded_ops.py makes with the project's venv (.venv: PyPI onnx, onnxruntime): the model
byte for byte, the onnxruntime reference outputs to 1e-6. Skipped with a message when .venv is missing,
except under CI=true, where it must run."""

import os
import subprocess

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
FIXTURES = os.path.join(ROOT, "test", "Import", "ONNX", "opset18+", "unfolded")


def tensor(path):
    with open(path, "rb") as f:
        return onnx.numpy_helper.to_array(onnx.TensorProto.FromString(f.read()))


def test_unfolded_fixture_reproduces(tmp_path):
    if not os.path.exists(VENV_PYTHON):
        if os.environ.get("CI") == "true":
            pytest.fail(".venv is missing under CI: scripts/setup.sh must create it (scripts/setup-python.sh)")
        pytest.skip(".venv is missing: run scripts/setup-python.sh to check the unfolded-ops fixture")
    subprocess.run([VENV_PYTHON, os.path.join(ROOT, "python", "ptrain", "export_unfolded_ops.py"), "--out",
                    str(tmp_path)], check=True, cwd=ROOT)
    committed = sorted(os.listdir(FIXTURES))
    assert committed == sorted(os.listdir(tmp_path))
    for name in committed:
        ours, theirs = os.path.join(FIXTURES, name), os.path.join(tmp_path, name)
        if name.endswith(".onnx"):
            with open(ours, "rb") as a, open(theirs, "rb") as b:
                assert a.read() == b.read(), name
        else:
            np.testing.assert_allclose(tensor(ours), tensor(theirs), atol=1e-6)
