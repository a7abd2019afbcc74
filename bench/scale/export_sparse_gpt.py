#!/usr/bin/env python3
"""Write a GPT-2-style ONNX model of any size whose weights are EXTERNAL data that is declared but never written.

The graph is bench/import/import_bench.py's gpt2() (torch.onnx.export's opset-17 form: LayerNormalization, fused
c_attn, causal Where mask, Erf GELU, LM head tied to the token embedding), built with onnx.helper, no torch; the
data file is SPARSE (os.truncate: no byte is written or on disk), so a 175B-parameter shape costs a few MB. It is
for ptrain-compile's code generation and C++ compile without loading weights (docs/ImportONNX.md, "Big models":
the importer reads the external data's metadata only); it cannot train (every weight reads as 0).

Usage (repository root):
    /usr/bin/python3 bench/scale/export_sparse_gpt.py --out DIR --layers 96 --hidden 12288 --heads 96 --seq 2048 \
        --vocab 51200 --batch 1
writes DIR/gpt.onnx and DIR/gpt.onnx.data (bench/README.md, "scale").
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "import"))
from import_bench import F, Graph, gpt2  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=96)
    ap.add_argument("--hidden", type=int, default=12288)
    ap.add_argument("--heads", type=int, default=96)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=51200)
    ap.add_argument("--batch", type=int, default=1, help="the forward's batch: one micro-batch")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    config = dict(layers=args.layers, hidden=args.hidden, heads=args.heads, ffn=4 * args.hidden, vocab=args.vocab,
                  positions=args.seq, batch=args.batch, seq=args.seq)
    g = Graph(np.random.default_rng(0), external="gpt.onnx.data")
    m = gpt2(g, config)
    with open(os.path.join(args.out, "gpt.onnx.data"), "wb") as f:
        f.truncate(g.offset)  # sparse: nothing written
    with open(os.path.join(args.out, "gpt.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    params = sum(math.prod(t.dims) for t in m.graph.initializer if t.data_type == F)
    print(f"{args.out}/gpt.onnx: {args.layers} x {args.hidden}, {args.heads} heads, sequence {args.seq}, vocabulary "
          f"{args.vocab}, batch {args.batch}: {params} parameters, {g.offset} bytes of sparse external data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
