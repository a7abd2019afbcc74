#!/usr/bin/env python3
"""Converts an ONNX text-format model (onnx.parser syntax) into a binary .onnx file for the importer tests.

Usage: onnxtext-to-onnx.py INPUT.onnxtext OUTPUT.onnx [--split N]
Lines starting with '//' are lit directives and comments, dropped before parsing. With --split N, the input
is split at lines '// -----' (like mlir's --split-input-file) and chunk N (0-based) is converted.
"""
import sys

import onnx
import onnx.parser


def main():
    src, dst = sys.argv[1], sys.argv[2]
    chunk = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--split" else 0
    with open(src) as f:
        chunks = f.read().split("// -----")
    lines = [l for l in chunks[chunk].splitlines() if not l.lstrip().startswith("//")]
    model = onnx.parser.parse_model("\n".join(lines))
    onnx.save_model(model, dst)


if __name__ == "__main__":
    main()
