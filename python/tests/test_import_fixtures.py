"""The committed importer fixtures (test/Import/ONNX/Inputs/exports) are what
python/ptrain/export_import_fixtures.py makes: re-exported byte for byte. Skipped without torch and onnx
(Debian: python3-torch python3-onnx)."""

import os
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from ptrain import export_import_fixtures  # noqa: E402


def test_fixtures_reproduce():
    out = os.path.join(ROOT, "test", "Import", "ONNX", "Inputs", "exports")
    assert export_import_fixtures.main(["--out", out, "--check"]) == 0
