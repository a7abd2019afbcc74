"""Runs a test under the project's .venv (scripts/setup-python.sh: onnx >= 1.15, onnxruntime), which Debian's
python3 that CTest starts does not have: re-executes the calling script with <source>/.venv/bin/python. Without
the .venv the test is skipped (exit 77, CTest's SKIP_RETURN_CODE) with a message, except under CI=true, where
it fails: CI must run it."""

import os
import sys

SKIP = 77


def require(source):
    try:
        import onnxruntime  # noqa: F401
        return
    except ImportError:
        pass
    venv = os.path.join(os.path.abspath(source), ".venv", "bin", "python")
    if os.path.isfile(venv) and os.path.abspath(sys.executable) != venv:
        sys.stdout.flush()
        os.execv(venv, [venv, *sys.argv])
    why = f"onnxruntime is not importable and {venv} is missing or lacks it; run bash scripts/setup-python.sh"
    if os.environ.get("CI", "").lower() == "true":
        raise SystemExit(f"FAIL: {why} (CI=true: this test must run)")
    print(f"SKIP: {why}")
    sys.exit(SKIP)
