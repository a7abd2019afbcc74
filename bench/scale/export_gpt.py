#!/usr/bin/env python3
"""Export a GPT of any size from the project's model code (python/ptrain_fixtures/models/gpt.py) to ONNX.

Usage (from the repository root, with Debian's python3-torch and python3-onnx):

    PYTHONPATH=python /usr/bin/python3 bench/scale/export_gpt.py --out DIR [--layers 12] [--width 768] [--heads 12]
                                               [--seq 256] [--vocab 256] [--batch 4] [--seed 0]

Writes DIR/gpt.onnx and DIR/gpt.onnx.data exactly as python/ptrain_fixtures/export_bundled_gpt.py writes the bundled
model (opset 17, no constant folding, training mode so that only the real weight tie is shared, static shapes,
every weight as external data), without the reference data: the model of the scale benchmark
(bench/README.md, "Real-size models").
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import warnings

import onnx
import torch

from ptrain_fixtures.export_bundled_gpt import OPSET, save_external
from ptrain_fixtures.models.gpt import GPT, GPTConfig


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    cfg = GPTConfig(vocab_size=args.vocab, n_layer=args.layers, n_head=args.heads, n_embd=args.width,
                    seq_len=args.seq)
    model = GPT(cfg, seed=args.seed).eval()
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), dtype=torch.int64)
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(model, (ids,), buf, opset_version=OPSET, do_constant_folding=False,
                          input_names=["input_ids"], output_names=["logits"], export_params=True,
                          training=torch.onnx.TrainingMode.TRAINING)
    m = onnx.load_model_from_string(buf.getvalue())
    save_external(m, os.path.join(args.out, "gpt.onnx"))
    params = sum(p.numel() for p in model.parameters())
    print(f"{args.out}/gpt.onnx: {args.layers} layers x {args.width}, {args.heads} heads, sequence {args.seq}, "
          f"vocabulary {args.vocab}, batch {args.batch}: {params} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
