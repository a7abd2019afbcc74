#!/usr/bin/env python3
"""Writes a small ONNX model whose initializers, node, graph input and external-data file are named with
spaces, '&', '%' and '$', plus an input and PyTorch-free numpy reference output.

Usage: make_odd_names.py OUT_DIR
  OUT_DIR/odd.onnx                y = x @ W + b, W in external data, b inline
  OUT_DIR/w & 100% $HOME.bin      W's bytes (after 16 bytes of padding: a non-zero offset)
  OUT_DIR/input_0.pb, output_0.pb x [2, 3] and the numpy reference y [2, 4]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

W_NAME = "weight & bias %1 $HOME"
B_NAME = "b $x %% & y"
DATA_FILE = "w & 100% $HOME.bin"


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    w = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 4
    b = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    x = np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]], np.float32)
    with open(os.path.join(out, DATA_FILE), "wb") as f:
        f.write(b"\0" * 16 + w.tobytes())
    w_t = TensorProto(name=W_NAME, data_type=TensorProto.FLOAT, dims=[3, 4])
    w_t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", DATA_FILE), ("offset", "16"), ("length", str(w.nbytes))):
        entry = w_t.external_data.add()
        entry.key, entry.value = k, v
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x & $in", W_NAME], ["x W"], name="mat mul & 50% $1"),
         helper.make_node("Add", ["x W", B_NAME], ["y %out"], name="add $2")],
        "odd names",
        [helper.make_tensor_value_info("x & $in", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y %out", TensorProto.FLOAT, [2, 4])],
        initializer=[w_t, numpy_helper.from_array(b, B_NAME)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(model, os.path.join(out, "odd.onnx"))
    for name, arr, tensor_name in (("input_0", x, "x & $in"), ("output_0", x @ w + b, "y %out")):
        with open(os.path.join(out, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr.astype(np.float32), tensor_name).SerializeToString())


if __name__ == "__main__":
    main()
