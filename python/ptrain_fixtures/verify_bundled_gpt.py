#!/usr/bin/env python3
"""Check the exported bundled GPT with onnxruntime (no torch needed).

    .venv/bin/python python/ptrain_fixtures/verify_bundled_gpt.py --dir models/gpt [--no-readme]

Runs gpt.onnx on test_data_set_0/input_0.pb with onnxruntime, compares with output_0.pb
(max abs difference must be <= --tol, default 1e-5), recomputes the next-token loss from
onnxruntime's logits and compares it with reference_loss.txt, checks that reference_grads.onnx
has one float gradient per gpt.onnx initializer with the same name and shape, and records the
result in README.md between the <!-- ort-check --> markers. Exit status 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load_pb(path: str) -> np.ndarray:
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def next_token_loss(logits: np.ndarray, ids: np.ndarray) -> float:
    x = logits[:, :-1].astype(np.float64)
    y = ids[:, 1:]
    x = x - x.max(axis=-1, keepdims=True)
    logp = x - np.log(np.exp(x).sum(axis=-1, keepdims=True))
    return float(-np.take_along_axis(logp, y[..., None], axis=-1).mean())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="models/gpt")
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--no-readme", action="store_true")
    args = ap.parse_args(argv)
    import onnxruntime as ort

    d = args.dir
    ids = load_pb(os.path.join(d, "test_data_set_0", "input_0.pb"))
    ref = load_pb(os.path.join(d, "test_data_set_0", "output_0.pb"))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(
        os.path.join(d, "gpt.onnx"), opts, providers=["CPUExecutionProvider"]
    )
    (got,) = sess.run(["logits"], {"input_ids": ids})
    diff = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
    ok = got.shape == ref.shape and diff <= args.tol

    ref_loss = float(open(os.path.join(d, "reference_loss.txt")).read())
    ort_loss = next_token_loss(got, ids)
    loss_diff = abs(ort_loss - ref_loss)
    ok = ok and loss_diff <= 1e-5

    m = onnx.load(os.path.join(d, "gpt.onnx"))  # loads external data from beside it
    g = onnx.load(os.path.join(d, "reference_grads.onnx"))
    shapes = {t.name: list(t.dims) for t in m.graph.initializer}
    gshapes = {t.name: list(t.dims) for t in g.graph.initializer}
    names_ok = shapes == gshapes and all(
        t.data_type == onnx.TensorProto.FLOAT for t in g.graph.initializer
    )
    ok = ok and names_ok
    gnorm = float(
        np.sqrt(sum(float((numpy_helper.to_array(t).astype(np.float64) ** 2).sum())
                    for t in g.graph.initializer))
    )

    lines = [
        f"onnxruntime {ort.__version__} (onnx {onnx.__version__}, numpy {np.__version__}), "
        f"CPUExecutionProvider, 1 thread:",
        f"- logits max abs difference vs PyTorch: {diff:.3g} (tolerance {args.tol:g})",
        f"- next-token loss from onnxruntime's logits: {ort_loss:.9g} "
        f"(reference {ref_loss:.9g}, difference {loss_diff:.3g})",
        f"- reference_grads.onnx: {len(gshapes)} gradients, names and shapes "
        f"{'match' if names_ok else 'DO NOT match'} gpt.onnx's initializers; "
        f"global gradient L2 norm {gnorm:.6g}",
        f"- result: {'PASS' if ok else 'FAIL'}",
    ]
    print("\n".join(lines))

    readme = os.path.join(d, "README.md")
    if not args.no_readme and os.path.exists(readme):
        a, b = "<!-- ort-check -->", "<!-- /ort-check -->"
        text = open(readme).read()
        if a in text and b in text:
            text = text[: text.index(a) + len(a)] + "\n" + "\n".join(lines) + "\n" + text[
                text.index(b):]
            with open(readme, "w") as f:
                f.write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
