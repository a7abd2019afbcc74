"""onnxruntime's outputs of an export on generated inputs: the reference of docs/Exports.md's `forward vs ORT`
column (test/Target/Cpp/exports_table.py).

Inputs as ptrain's `--signature auto` feeds them: every int64 graph input named like an attention mask gets
ones, like token types zeros, any other int64 input (the token ids) integers uniform in [0, 64) from
numpy's default_rng(0) (every export in the table has a vocabulary of at least 64); the shapes are the graph's
(all static). Writes OUT_DIR/input_K.pb (in the graph's input order) and OUT_DIR/output_0.pb (onnxruntime's first
output, CPUExecutionProvider), and prints `max|output| = X`. Exits with 5 for an export with dropout in training
mode (random masks: nothing to compare).
Runs under .venv/bin/python (onnxruntime; ort_venv.py). Usage: ort_reference.py MODEL.onnx OUT_DIR
"""

import os
import sys

import ort_venv

ort_venv.require(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main(model, out):
    if any(n.op_type == "Dropout" and len(n.input) > 2 and n.input[2]
           for n in onnx.load(model, load_external_data=False).graph.node):
        print(f"{model}: dropout in training mode (random masks): not comparable")
        return 5
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        if i.type != "tensor(int64)" or not all(isinstance(d, int) for d in i.shape):
            raise SystemExit(f"{model}: input '{i.name}' is {i.type} {i.shape}: only static int64 inputs are generated")
        name = i.name.lower()
        if "mask" in name:
            feeds[i.name] = np.ones(i.shape, np.int64)
        elif "type" in name:
            feeds[i.name] = np.zeros(i.shape, np.int64)
        else:
            feeds[i.name] = rng.integers(0, 64, i.shape, dtype=np.int64)
    result = sess.run(None, feeds)[0]
    os.makedirs(out, exist_ok=True)
    for k, i in enumerate(sess.get_inputs()):
        with open(os.path.join(out, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[i.name], i.name).SerializeToString())
    with open(os.path.join(out, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(result, sess.get_outputs()[0].name).SerializeToString())
    print(f"max|output| = {float(np.abs(result).max()):.9e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
