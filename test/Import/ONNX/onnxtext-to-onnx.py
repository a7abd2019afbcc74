#!/usr/bin/env python3
"""Converts an ONNX text-format model (onnx.parser syntax) into a binary .onnx file for the importer tests.

Usage: onnxtext-to-onnx.py INPUT.onnxtext OUTPUT.onnx [--split N] [--node-names NAME0,NAME1,...]
                           [--weights NAME0,NAME1,...]
Lines starting with '//' are lit directives and comments, dropped before parsing. With --split N, the input
is split at lines '// -----' (like mlir's --split-input-file) and chunk N (0-based) is converted. onnx 1.12's
text format cannot name nodes: --node-names gives node i the i-th name (an empty entry leaves it unnamed).
The text format also needs every initializer's values: --weights turns the named float graph inputs into
initializers of their declared shape with values drawn from N(0, 0.02) (seed 0), as an export's weights are.
"""
import argparse

import onnx
import onnx.parser


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--node-names")
    parser.add_argument("--weights")
    args = parser.parse_args()
    with open(args.src) as f:
        chunks = f.read().split("// -----")
    lines = [l for l in chunks[args.split].splitlines() if not l.lstrip().startswith("//")]
    model = onnx.parser.parse_model("\n".join(lines))
    if args.node_names is not None:
        names = args.node_names.split(",")
        if len(names) != len(model.graph.node):
            raise SystemExit("--node-names: %d names for %d nodes" % (len(names), len(model.graph.node)))
        for node, name in zip(model.graph.node, names):
            node.name = name
    if args.weights:
        import numpy as np
        from onnx import numpy_helper

        rng = np.random.default_rng(0)
        for name in args.weights.split(","):
            (value_info,) = [i for i in model.graph.input if i.name == name]
            shape = [d.dim_value for d in value_info.type.tensor_type.shape.dim]
            model.graph.initializer.append(
                numpy_helper.from_array((rng.standard_normal(shape) * 0.02).astype(np.float32), name))
            model.graph.input.remove(value_info)
    onnx.save_model(model, args.dst)


if __name__ == "__main__":
    main()
