"""The committed importer fixtures (test/Import/ONNX/Inputs/exports) are what
python/ptrain_fixtures/export_import_fixtures.py makes: re-exported byte for byte. Skipped without torch and onnx
(Debian: python3-torch python3-onnx)."""

import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
from ptrain_fixtures import export_import_fixtures


def test_fixtures_reproduce():
    out = os.path.join(ROOT, "test", "Import", "ONNX", "Inputs", "exports")
    assert export_import_fixtures.main(["--out", out, "--check"]) == 0
