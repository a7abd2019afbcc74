#!/usr/bin/env python3
"""Exports a small Hugging Face GPT-2 (transformers.GPT2LMHeadModel of a GPT2Config) to ONNX for ptrain-compile,
with the newest PyTorch exporter (torch.onnx.export(dynamo=True), opset 18, onnxscript's optimizer): the model
of the second worked example (examples/tokenized-gpt, issue 22), whose vocabulary is the tokenizer's.

Run in the export venv (scripts/setup-export.sh: PyPI torch, transformers, onnxscript, onnxruntime):

    PYTHONPATH=python .venv-export/bin/python -m ptrain_fixtures.export_hf_gpt2 --out DIR [--vocab-size 8192]
        [--n-layer 4] [--n-embd 128] [--n-head 4] [--seq 64] [--batch 4] [--seed 0]

The configuration: GPT2Config(vocab_size, n_positions = seq, n_embd, n_layer, n_head; GPT-2's pre-LayerNorm
blocks, learned positions, GELU (tanh) MLP of 4 x n_embd, the LM head tied to the token embedding in PyTorch),
dropout 0, eager attention, no KV cache; random weights from torch.manual_seed(seed) (GPT-2's initializer,
N(0, 0.02)). The graph takes input_ids int64 [batch, seq] and returns the logits [batch, seq, vocab]; weights
embedded (DIR/gpt2.onnx; the defaults: 1,876,257 initializer entries, 7.7 MB; the token embedding and the LM head
stay one initializer, model.lm_head.weight, so ptrain trains them tied). Checks onnxruntime on the file against
PyTorch's logits (atol 1e-4) and writes DIR/config.json (the GPT2Config).
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime
import torch
import transformers

from ptrain_fixtures.export_hf import LogitsOnly


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    config = transformers.GPT2Config(vocab_size=args.vocab_size, n_positions=args.seq, n_embd=args.n_embd,
                                     n_layer=args.n_layer, n_head=args.n_head, bos_token_id=0, eos_token_id=0,
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager")
    model = LogitsOnly(transformers.GPT2LMHeadModel(config), dict(use_cache=False)).eval()
    ids = torch.from_numpy(np.random.default_rng(1).integers(0, args.vocab_size, (args.batch, args.seq)))
    with torch.no_grad():
        expected = model(ids).numpy()
    path = os.path.join(args.out, "gpt2.onnx")
    program = torch.onnx.export(model, (ids,), dynamo=True, opset_version=18, optimize=True,
                                input_names=["input_ids"], output_names=["logits"], external_data=False)
    program.save(path, external_data=False)
    config.to_json_file(os.path.join(args.out, "config.json"))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: ids.numpy()})[0]
    err = float(np.max(np.abs(got - expected)))
    if not err < 1e-4:
        sys.exit(f"{path}: onnxruntime differs from PyTorch by {err}")
    m = onnx.load(path)
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    print(f"{path}: GPT2Config(vocab {args.vocab_size}, {args.n_layer} layers, n_embd {args.n_embd}, {args.n_head} "
          f"heads, {args.seq} positions), {params:,} initializer entries, {os.path.getsize(path):,} bytes, opset "
          f"{m.opset_import[0].version}; onnxruntime vs torch {err:.1e} (torch {torch.__version__}, transformers "
          f"{transformers.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
