#!/usr/bin/env python3
"""One training step's loss and gradients of an export's PyTorch model, named like the export's initializers.

The reference of docs/Exports.md's autograd column (test/Target/Cpp/exports_table.py): for an export whose
PyTorch model is in python/ptrain_fixtures/models, rebuilds the model (the TorchScript exporter's fixtures of
export_import_fixtures.py, GPT-2, BERT and LLaMA, of export_gpt_opset14.py, and the bundled models/gpt/gpt.onnx:
from their seeds; the dynamo exporter's Hugging Face models in test/Import/ONNX/opset18+/hf, made by export_hf.py
with torch 2.x and transformers: the same architectures in plain PyTorch with the weights of the unoptimized
export's initializers, hf_model), runs it on the export's committed input tokens as ptrain's `--signature auto`
does (token types zeros, attention mask ones), takes the next-token loss (mean cross-entropy of logits[:, :-1]
against tokens[:, 1:], the loss of --ptrain-build-training-step) and backpropagates with autograd in float64.

The export's initializers are not the module's parameters one for one: constant folding stores a linear's
weight transposed under an `onnx::` name, merges parameters of equal values into one initializer (read through
Identity nodes named like the others, or directly), splits a tied embedding and LM head into two initializers,
drops an Add of a bias that is zero, and folds an embedding lookup at constant indices (positions, token types)
into a constant. So the module's shared parameters are untied first (each use its own gradient), then each
initializer is matched to the parameters it stands for, among those of the kind its uses allow (a Gather's
table, a LayerNormalization's scale or bias: use_kinds): by name, through the Identity nodes that alias it,
then by value (also transposed) among the parameters left; its reference gradient is the sum of theirs
(transposed back). An initializer equal to a lookup's output gets the gradient of that output. Parameters
that no initializer stands for (folded away) are listed and have no gradient to compare.

Usage (Debian's python3-torch 1.13):
    PYTHONPATH=python /usr/bin/python3 -m ptrain_fixtures.exports_reference_grads MODEL.onnx OUT_DIR
Writes OUT_DIR/reference_grads.onnx (initializers: d loss / d initializer), OUT_DIR/tokens.pb (int64 [B, S])
and OUT_DIR/reference_loss.txt. Exits with 3 when MODEL has no known PyTorch model, 5 when it has dropout in
training mode (random masks: a training-mode export) and the step cannot match an eval-mode reference.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

# A gradient that is zero in exact arithmetic comes out of float64 autograd as rounding noise (1e-17): the key
# bias of attention, which the softmax cancels (it adds the same q . b_k to every score of a query). It is
# written as exact zeros, so that ptrain-interpret --expect-grads compares ptrain's float32 noise with it
# absolutely (its scale is 1 for an all-zero reference) instead of relative to 1e-17.
ZERO = 1e-12


def known_model(path: str):
    """(module, forward(ids) -> logits, tokens) for the export at `path`, or None."""
    name = os.path.basename(path)
    root = os.path.dirname(os.path.abspath(path))

    def tokens(p):
        t = onnx.TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t).astype(np.int64)

    if name.startswith("gpt2-opset"):
        from ptrain_fixtures.models.gpt2 import GPT2Config, GPT2LMHeadModel

        model = GPT2LMHeadModel(GPT2Config(), seed=0)
        return model, model, tokens(os.path.join(root, "gpt2", "input_0.pb"))
    if name.startswith("bert-opset"):
        from ptrain_fixtures.models.bert import BertConfig, BertForMaskedLM

        model = BertForMaskedLM(BertConfig(), seed=1)
        ids = tokens(os.path.join(root, "bert", "input_0.pb"))
        zeros = torch.zeros(ids.shape, dtype=torch.int64)
        ones = torch.ones(ids.shape, dtype=torch.int64)
        return model, lambda x: model(x, zeros, ones), ids
    if name.startswith("llama-opset"):
        from ptrain_fixtures.models.llama import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(), seed=2)
        return model, model, tokens(os.path.join(root, "llama", "input_0.pb"))
    if name == "gpt-opset14.onnx":
        from ptrain_fixtures.export_gpt_opset14 import CONFIG
        from ptrain_fixtures.models.gpt import GPT

        model = GPT(CONFIG, seed=0)
        return model, model, tokens(os.path.join(root, "gpt-opset14.input_0.pb"))
    if name == "gpt-tf2onnx-opset13.onnx":
        from ptrain_fixtures.models.keras_gpt import KerasGPT

        model = KerasGPT(path)
        return model, model, tokens(os.path.join(root, "gpt-tf2onnx.input_0.pb"))
    hf = hf_model(path)
    if hf is not None:
        return hf
    if name == "gpt.onnx" and os.path.exists(os.path.join(root, "test_data_set_0", "input_0.pb")):
        from ptrain_fixtures.models.gpt import GPT, GPTConfig

        model = GPT(GPTConfig(), seed=0)  # export_bundled_gpt.py's defaults
        return model, model, tokens(os.path.join(root, "test_data_set_0", "input_0.pb"))
    return None


# The dynamo exporter's Hugging Face models (python/ptrain_fixtures/export_hf.py: transformers' GPT2LMHeadModel,
# BertForMaskedLM and LlamaForCausalLM with its tiny configurations) as the same architectures in plain PyTorch
# (python/ptrain_fixtures/models), which torch 1.13 runs without transformers. Their weights come from the
# unoptimized export's initializers (the module's state_dict names under the exporter's `model.` prefix);
# parameter names that transformers spells otherwise are in HF_ALIASES.
HF_CONFIGS = {"gpt2": dict(vocab_size=128, n_positions=16, n_embd=32, n_layer=2, n_head=4),
              "bert": dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=16),
              "llama": dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
                            rms_norm_eps=1e-5)}
# module parameter -> its name in transformers' state_dict (BertLMPredictionHead ties decoder.bias to bias)
HF_ALIASES = {"cls.predictions.bias": "cls.predictions.decoder.bias"}


def hf_model(path: str):
    """(module, forward, tokens) for an export of test/Import/ONNX/opset18+/hf (MODEL.onnx or MODEL-folded.onnx),
    or None."""
    root = os.path.dirname(os.path.abspath(path))
    stem = os.path.basename(path)[: -len(".onnx")]
    base = stem[: -len("-folded")] if stem.endswith("-folded") else stem
    unoptimized = os.path.join(root, base + ".onnx")
    if base not in HF_CONFIGS or not os.path.exists(os.path.join(root, base + ".input_0.pb")) or not \
            os.path.exists(unoptimized):
        return None
    if base == "gpt2":
        from ptrain_fixtures.models.gpt2 import GPT2Config, GPT2LMHeadModel

        model = GPT2LMHeadModel(GPT2Config(**HF_CONFIGS[base]))
        forward = model
    elif base == "bert":
        from ptrain_fixtures.models.bert import BertConfig, BertForMaskedLM

        model = BertForMaskedLM(BertConfig(**HF_CONFIGS[base]))

        def forward(x):  # export_hf.py folds an attention mask of ones and token types of zeros into the graph
            return model(x, torch.zeros(x.shape, dtype=torch.int64), torch.ones(x.shape, dtype=torch.int64))
    else:
        from ptrain_fixtures.models.llama import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(**HF_CONFIGS[base]))
        forward = model
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(unoptimized).graph.initializer}
    with torch.no_grad():
        for sub_name, sub in model.named_modules():
            for attr, p in sub._parameters.items():  # every name of a tied parameter
                if p is None:
                    continue
                full = f"{sub_name}.{attr}" if sub_name else attr
                key = "model." + HF_ALIASES.get(full, full)
                if key in inits:
                    p.copy_(torch.from_numpy(inits[key].copy()))
                    p.loaded = True
    missing = [n for n, p in model.named_parameters() if not getattr(p, "loaded", False)]
    if missing:
        raise SystemExit(f"{unoptimized}: no initializer for the parameters {missing}")
    t = onnx.TensorProto()
    with open(os.path.join(root, base + ".input_0.pb"), "rb") as f:
        t.ParseFromString(f.read())
    return model, forward, numpy_helper.to_array(t).astype(np.int64)


# What an initializer can stand for, from how the graph reads it (through Identity nodes): a Gather's table is
# an embedding's weight, LayerNormalization's scale and bias a LayerNorm's; any other use leaves it open.
USE_KINDS = {("Gather", 0): "table", ("LayerNormalization", 1): "norm_weight", ("LayerNormalization", 2): "norm_bias"}


def use_kinds(graph) -> dict:
    """initializer -> the set of parameter kinds its uses allow (None: any)."""
    consumers = {}
    for node in graph.node:
        for k, i in enumerate(node.input):
            consumers.setdefault(i, []).append((node, k))

    def uses(name):
        for node, k in consumers.get(name, []):
            if node.op_type == "Identity":
                yield from (u for o in node.output for u in uses(o))
            else:
                yield node.op_type, k

    kinds = {}
    for t in graph.initializer:
        found = [USE_KINDS.get(u) for u in uses(t.name)]
        kinds[t.name] = set(found) if found and None not in found else None
    return kinds


def parameter_kinds(module: torch.nn.Module, names: dict) -> dict:
    """parameter name -> "table", "norm_weight", "norm_bias" or "other" (its module's type)."""
    kinds = {}
    for sub in module.modules():
        for attr, p in sub._parameters.items():
            if p is None:
                continue
            if isinstance(sub, torch.nn.Embedding):
                kinds[names[id(p)]] = "table"
            elif isinstance(sub, torch.nn.LayerNorm):
                kinds[names[id(p)]] = "norm_weight" if attr == "weight" else "norm_bias"
            else:
                kinds.setdefault(names[id(p)], "other")
    return kinds


def untie(module: torch.nn.Module) -> None:
    """Gives every use of a shared parameter its own copy (a tied embedding and LM head)."""
    seen = set()
    for sub in module.modules():
        for attr, p in list(sub._parameters.items()):
            if p is None:
                continue
            if id(p) in seen:
                sub._parameters[attr] = torch.nn.Parameter(p.detach().clone())
            seen.add(id(p))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("out")
    args = ap.parse_args(argv)
    found = known_model(args.model)
    if found is None:
        print(f"{args.model}: no known PyTorch model", file=sys.stderr)
        return 3
    module, forward, ids = found
    dropouts = [n.name for n in onnx.load(args.model, load_external_data=False).graph.node if n.op_type == "Dropout"
                and len(n.input) > 2 and n.input[2]]
    if dropouts:
        print(f"{args.model}: dropout in training mode (random masks, e.g. node '{dropouts[0]}'): not comparable",
              file=sys.stderr)
        return 5
    torch.manual_seed(0)
    untie(module)
    module = module.double().eval()
    # Each embedding lookup's own gradient (rows scattered from its output's), for a weight that the module
    # also reads elsewhere (a functional tie, h @ wte.weight^T) and the export folded into two initializers.
    lookups = []
    names = {id(p): n for n, p in module.named_parameters()}
    for sub in module.modules():
        if isinstance(sub, torch.nn.Embedding):
            def hook(mod, inputs, output):
                output.retain_grad()
                lookups.append((names[id(mod.weight)], inputs[0], output))
            sub.register_forward_hook(hook)
    logits = forward(torch.from_numpy(ids))
    vocab = logits.shape[-1]
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab), torch.from_numpy(ids)[:, 1:].reshape(-1))
    loss.backward()
    params = {n: (p.detach().numpy(), p.grad.numpy() if p.grad is not None else np.zeros(p.shape))
              for n, p in module.named_parameters()}
    lookup_grads = {}
    for name, idx, out in lookups:
        g = torch.zeros(params[name][0].shape, dtype=torch.float64)
        g.index_add_(0, idx.reshape(-1), out.grad.reshape(-1, g.shape[1]))
        lookup_grads[name] = lookup_grads.get(name, 0) + g.numpy()

    m = onnx.load(args.model)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer
             if t.data_type == onnx.TensorProto.FLOAT and t.dims}
    aliases = {}
    for node in m.graph.node:
        if node.op_type == "Identity" and node.input[0] in inits:
            aliases.setdefault(node.input[0], []).extend(node.output)
    # An initializer stands only for parameters of the kind its uses allow, whatever its name or value: the
    # dynamo exporter with its optimizer names a tied GPT-2's lookup table after the LM head (model.lm_head.weight,
    # the head a transposed copy), and merges all LayerNorm biases (zeros) into one initializer while it folds away
    # the Adds of the equally zero linear biases.
    allowed = use_kinds(m.graph)
    kinds = parameter_kinds(module, names)

    def may_be(n, p):
        return allowed.get(n) is None or kinds[p] in allowed[n]

    matched = {n: [] for n in inits}  # initializer -> [(param, transposed)]
    claimed = set()
    for n in inits:
        for alias in [n] + aliases.get(n, []):
            for candidate in (alias, alias[len("model."):] if alias.startswith("model.") else None):
                if candidate in params and candidate not in claimed and may_be(n, candidate):
                    matched[n].append((candidate, False))
                    claimed.add(candidate)
    # By value: first the initializers no name matched (folded copies), then those a parameter of the same
    # value may also stand for (the other use of a tied weight kept as one initializer).
    order = [n for n in inits if not matched[n]] + [n for n in inits if matched[n]]
    for n in order:
        value = inits[n]
        for p, (pv, _) in params.items():
            if p in claimed or not may_be(n, p):
                continue
            if pv.shape == value.shape and np.array_equal(pv.astype(np.float32), value):
                matched[n].append((p, False))
                claimed.add(p)
            elif pv.ndim == 2 and pv.T.shape == value.shape and np.array_equal(pv.T.astype(np.float32), value):
                matched[n].append((p, True))
                claimed.add(p)
    # A folded copy of an embedding that the module reads elsewhere too (no parameter of its own): the copy
    # gets the other uses' gradient, the embedding's initializer the lookup's.
    override = {}
    for n, value in inits.items():
        if matched[n]:
            continue
        for p, lookup in lookup_grads.items():
            pv, total = params[p]
            owner = [i for i in inits if (p, False) in matched[i]]
            if len(owner) != 1:
                continue
            if pv.shape == value.shape and np.array_equal(pv.astype(np.float32), value):
                override[n], override[owner[0]] = total - lookup, lookup
            elif pv.T.shape == value.shape and np.array_equal(pv.T.astype(np.float32), value):
                override[n], override[owner[0]] = (total - lookup).T, lookup
            else:
                continue
            matched[n].append((p, False))
            break
    # A lookup the exporter's optimizer folded into a constant (the position embedding's rows at positions
    # 0..T-1, the token type embedding's row 0 for token types of zeros): the gradient of the lookup's output.
    for n, value in inits.items():
        if matched[n] or n in override:
            continue
        for name, _, out in lookups:
            got = out.detach().numpy().astype(np.float32)
            if got.shape == value.shape and np.array_equal(got, value):
                override[n] = out.grad.numpy()
                matched[n].append((name + " (lookup)", False))
                break
    grads = []
    unmatched = []
    for n, value in inits.items():
        if not matched[n]:
            unmatched.append(n)
            continue
        g = override[n] if n in override else sum(params[p][1].T if t else params[p][1] for p, t in matched[n])
        g = np.asarray(g, dtype=np.float64).reshape(value.shape)
        if np.abs(g).max() < ZERO:
            g = np.zeros_like(g)  # zero up to float64 rounding (see ZERO)
        grads.append(numpy_helper.from_array(g.astype(np.float32), n))
    os.makedirs(args.out, exist_ok=True)
    graph = onnx.helper.make_graph([], "reference_grads", [], [], grads)
    onnx.save_model(onnx.helper.make_model(graph), os.path.join(args.out, "reference_grads.onnx"))
    with open(os.path.join(args.out, "tokens.pb"), "wb") as f:
        f.write(numpy_helper.from_array(ids, "tokens").SerializeToString())
    with open(os.path.join(args.out, "reference_loss.txt"), "w") as f:
        f.write(f"{float(loss):.9f}\n")
    left = sorted(set(params) - claimed)
    print(f"loss {float(loss):.9f}; {len(grads)} initializers matched; unmatched initializers: {unmatched}; "
          f"parameters left: {left}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
