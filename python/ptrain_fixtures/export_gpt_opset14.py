#!/usr/bin/env python3
"""Export a small bundled GPT (python/ptrain_fixtures/models/gpt.py) with the TorchScript exporter at opset 14.

Before LayerNormalization-17, torch.onnx.export writes nn.LayerNorm decomposed: ReduceMean, Sub, Pow 2,
ReduceMean, Add eps, Sqrt, Div, Mul, Add, and GELU as Div/Erf/Add/Mul/Mul; with the exporter's default constant
folding its scalars (2, eps, sqrt(2), 0.5, 1, the attention scale) are Constant nodes or initializers. The
importer must recognize both (lib/Import/ONNX/RecognizeLayerNorm.cpp, RecognizeGelu.cpp) and hold the scalars
constant (ClassifyInitializers.h) for the export to train (issue 21).

Usage (from the repository root, with Debian's python3-torch 1.13 and python3-onnx):
    PYTHONPATH=python /usr/bin/python3 -m ptrain_fixtures.export_gpt_opset14 [--out test/Import/ONNX/Inputs/exports]
Writes into OUT:
  gpt-opset14.onnx            vocabulary 256, 2 layers, 2 heads, hidden 32, sequence 16, seed 0; weights
                              embedded (about 150 KB); eval mode, default constant folding, static shapes
  gpt-opset14.input_0.pb      TensorProto int64 [2, 16]: input_ids (the Zen of Python's bytes)
  gpt-opset14.output_0.pb     TensorProto f32 [2, 16, 256]: PyTorch's logits
The same torch/onnx versions give byte-identical files.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import sys
import warnings

import onnx
import torch
from onnx import numpy_helper

from ptrain_fixtures.models.gpt import GPT, GPTConfig

OPSET = 14
BATCH = 2
CONFIG = GPTConfig(vocab_size=256, n_layer=2, n_head=2, n_embd=32, seq_len=16)


def zen_bytes(n: int) -> bytes:
    """The first n bytes of the Zen of Python (every Python 3 ships it)."""
    import codecs
    with contextlib.redirect_stdout(io.StringIO()):
        import this  # noqa: F401
    return codecs.decode(this.s, "rot13").encode("ascii")[:n]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="test/Import/ONNX/Inputs/exports")
    args = p.parse_args()
    torch.manual_seed(0)
    model = GPT(CONFIG, seed=0).eval()
    ids = torch.tensor(list(zen_bytes(BATCH * CONFIG.seq_len)), dtype=torch.int64).reshape(BATCH, CONFIG.seq_len)
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(model, (ids,), buf, opset_version=OPSET, input_names=["input_ids"],
                          output_names=["logits"], export_params=True)
        logits = model(ids)
    m = onnx.load_model_from_string(buf.getvalue())
    onnx.checker.check_model(m)
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "gpt-opset14")
    onnx.save(m, base + ".onnx")
    for suffix, array, name in ((".input_0.pb", ids.numpy(), "input_ids"),
                                (".output_0.pb", logits.numpy(), "logits")):
        with open(base + suffix, "wb") as f:
            f.write(numpy_helper.from_array(array, name).SerializeToString())
    ops = collections.Counter(n.op_type for n in m.graph.node)
    print(f"wrote {base}.onnx ({os.path.getsize(base + '.onnx')} bytes), torch {torch.__version__}, "
          f"onnx {onnx.__version__}, opset {OPSET}: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
