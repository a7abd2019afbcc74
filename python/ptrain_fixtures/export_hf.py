#!/usr/bin/env python3
"""Exports tiny Hugging Face models with the newest PyTorch exporter (torch.onnx.export(dynamo=True)).

Run in the export venv (scripts/setup-export.sh: PyPI torch, transformers, onnxscript):

    .venv-export/bin/python python/ptrain_fixtures/export_hf.py [--out test/Import/ONNX/opset18+/hf] [--opset 18]

Models (random weights from torch.manual_seed(0), tiny configs, eager attention, no KV cache):
  gpt2    transformers.GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab 128, 16 positions))
  bert    transformers.BertForMaskedLM(BertConfig(2 layers, hidden 32, 4 heads, intermediate 64, vocab 128))
  llama   transformers.LlamaForCausalLM(LlamaConfig(2 layers, hidden 32, 4 query heads on 2 kv heads
          (grouped-query attention), SwiGLU 64, RMSNorm, rotary embeddings, vocab 128))
each exported twice: MODEL.onnx with optimize=False (no constant folding: the exporter's graph as traced) and
MODEL-folded.onnx with optimize=True (onnxscript's optimizer: constant folding, dead code elimination).
Weights are embedded (each file < 1 MB). Inputs: input_ids int64 [2, 8] (bert also gets its attention_mask of
ones and token_type_ids of zeros folded in as constants: only input_ids is a graph input). Writes
MODEL.input_0.pb and MODEL.output_0.pb: PyTorch's logits (eval mode), and checks onnxruntime on both files
against them (atol 1e-5).
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime
import torch
import transformers
from onnx import numpy_helper

BATCH, SEQ, VOCAB = 2, 8, 128


class LogitsOnly(torch.nn.Module):
    """The model called with input_ids only, returning the logits (no cache, no dict)."""

    def __init__(self, model, extra=None):
        super().__init__()
        self.model, self.extra = model, extra or {}

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, return_dict=False, **self.extra)[0]


def build(name):
    torch.manual_seed(0)
    common = dict(attn_implementation="eager")
    if name == "gpt2":
        config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=16,
                                         bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0,
                                         attn_pdrop=0.0, **common)
        return LogitsOnly(transformers.GPT2LMHeadModel(config), dict(use_cache=False))
    if name == "bert":
        config = transformers.BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                                         intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=16,
                                         hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **common)
        mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
        types = torch.zeros(BATCH, SEQ, dtype=torch.int64)
        return LogitsOnly(transformers.BertForMaskedLM(config), dict(attention_mask=mask, token_type_ids=types))
    if name == "llama":
        config = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                                          num_key_value_heads=2, intermediate_size=64, vocab_size=VOCAB,
                                          max_position_embeddings=16, rms_norm_eps=1e-5, **common)
        return LogitsOnly(transformers.LlamaForCausalLM(config), dict(use_cache=False))
    raise ValueError(name)


def save_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def export(name, out, opset):
    model = build(name).eval()
    ids = torch.from_numpy(np.random.default_rng(1).integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64))
    with torch.no_grad():
        expected = model(ids).numpy()
    save_tensor(os.path.join(out, f"{name}.input_0.pb"), ids.numpy(), "input_ids")
    save_tensor(os.path.join(out, f"{name}.output_0.pb"), expected, "logits")
    for suffix, optimize in (("", False), ("-folded", True)):
        path = os.path.join(out, f"{name}{suffix}.onnx")
        program = torch.onnx.export(model, (ids,), dynamo=True, opset_version=opset, optimize=optimize,
                                    input_names=["input_ids"], output_names=["logits"], external_data=False)
        program.save(path, external_data=False)
        m = onnx.load(path)
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, {session.get_inputs()[0].name: ids.numpy()})[0]
        err = float(np.max(np.abs(got - expected)))
        assert err < 1e-5, f"{path}: onnxruntime differs from PyTorch by {err}"
        ops = sorted({n.op_type for n in m.graph.node})
        print(f"{os.path.basename(path)}: {os.path.getsize(path)} bytes, opset "
              f"{m.opset_import[0].version}, {len(m.graph.node)} nodes, onnxruntime vs torch {err:.1e}; ops {ops}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test",
                                                      "Import", "ONNX", "opset18+", "hf"))
    parser.add_argument("--opset", type=int, default=18)
    parser.add_argument("--models", default="gpt2,bert,llama")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, onnx {onnx.__version__}, "
          f"onnxruntime {onnxruntime.__version__}")
    for name in args.models.split(","):
        export(name, args.out, args.opset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
