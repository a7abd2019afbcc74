#!/usr/bin/env python3
"""Writes test/Transforms/Inputs/tied-groups.onnx (deterministic; rerun and commit the output).

  .venv/bin/python test/Transforms/Inputs/make_tied_groups.py

The initializers of the four-layer model in ptrain-build-training-step-tied-groups.mlir: `wte` [8, 4], `w0`,
`wa`, `wb` [4, 4] (`wa` is read by layers 0-2, `wb` by layers 1-3) and `head` [4, 8], drawn from a fixed
seed; the graph itself is one Identity (only the initializers are read, by key).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rng = np.random.default_rng(6)
    shapes = {"wte": (8, 4), "w0": (4, 4), "wa": (4, 4), "wb": (4, 4), "head": (4, 8)}
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.5).astype(np.float32), n) for n, s in shapes.items()]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "tied_groups",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "tied-groups.onnx"))


if __name__ == "__main__":
    main()
