#!/usr/bin/env python3
"""Export the bundled GPT (python/ptrain_fixtures/models/gpt.py) to ONNX with reference data.

Usage (from the repository root, with Debian's python3-torch and python3-onnx):

    PYTHONPATH=python /usr/bin/python3 -m ptrain_fixtures.export_bundled_gpt [--out models/gpt] [--seed 0]

Writes into OUT:
  gpt.onnx, gpt.onnx.data          opset 17, no constant folding, static shapes; weights as
                                   external data (one file), graph file well under 1 MB
  test_data_set_0/input_0.pb       TensorProto int64 [4, 64]: input_ids (real text bytes)
  test_data_set_0/output_0.pb      TensorProto f32 [4, 64, 256]: PyTorch reference logits
  reference_grads.onnx(.data)      initializers = d loss / d param, named like gpt.onnx's
  reference_loss.txt               next-token cross-entropy of the reference input, %.9g
  README.md                        what it is, versions, op-type counts, initializer names

Everything is deterministic: same torch/onnx versions give byte-identical files.
Run python/ptrain_fixtures/verify_bundled_gpt.py afterwards (needs onnxruntime) to check the export.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import sys
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from ptrain_fixtures.models.gpt import GPT, GPTConfig, next_token_loss

BATCH = 4
OPSET = 17
SEED = 0
COMMAND = "PYTHONPATH=python /usr/bin/python3 -m ptrain_fixtures.export_bundled_gpt --out models/gpt"


def reference_text(n: int) -> bytes:
    """n bytes of real English text that every Python 3 ships unchanged: the Zen of Python."""
    import codecs

    with contextlib.redirect_stdout(io.StringIO()):
        import this  # noqa: F401  (prints the Zen on import)
    text = codecs.decode(this.s, "rot13").encode("ascii")
    if len(text) < n:
        raise ValueError(f"need {n} bytes, the Zen has {len(text)}")
    return text[:n]


def save_tensor(path: str, arr: np.ndarray, name: str) -> None:
    t = numpy_helper.from_array(arr, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def save_external(model: onnx.ModelProto, path: str) -> None:
    location = os.path.basename(path) + ".data"
    data_path = os.path.join(os.path.dirname(path), location)
    if os.path.exists(data_path):
        os.remove(data_path)  # onnx appends to an existing data file
    onnx.save_model(
        model,
        path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=location,
        size_threshold=0,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="models/gpt")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--vocab-size", type=int, default=GPTConfig.vocab_size,
                    help="the vocabulary (default 256, bytes; 8192 for examples/tokenized-gpt's ptrain-data tokens)")
    args = ap.parse_args(argv)
    os.makedirs(os.path.join(args.out, "test_data_set_0"), exist_ok=True)

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    cfg = GPTConfig(vocab_size=args.vocab_size)
    model = GPT(cfg, seed=args.seed).eval()
    assert model.wte.weight is not None

    ids_np = (
        np.frombuffer(reference_text(BATCH * cfg.seq_len), dtype=np.uint8)
        .astype(np.int64)
        .reshape(BATCH, cfg.seq_len)
    )
    ids = torch.from_numpy(ids_np.copy())

    # ---- reference forward, loss and gradients --------------------------------------------
    model.zero_grad(set_to_none=True)
    logits = model(ids)
    loss = next_token_loss(logits, ids)
    loss.backward()
    logits_np = logits.detach().numpy().astype(np.float32)
    grads = {n: p.grad.detach().numpy().astype(np.float32) for n, p in model.named_parameters()}

    # ---- ONNX export ------------------------------------------------------------------------
    # TrainingMode.TRAINING: torch 1.13's initializer de-duplication compares parameters BY VALUE
    # in eval mode (so the equal-valued fresh LayerNorm weights/biases and zero biases would be
    # merged into one initializer plus Identity nodes) but only BY STORAGE in training mode (so
    # only the real tie is shared). The model has no dropout or batch norm, so the graph computes
    # the same function in both modes.
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        # The model turns traced sizes into Python ints on purpose (static shapes).
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(
            model,
            (ids,),
            buf,
            opset_version=OPSET,
            do_constant_folding=False,
            input_names=["input_ids"],
            output_names=["logits"],
            export_params=True,
            training=torch.onnx.TrainingMode.TRAINING,
        )
    m = onnx.load_model_from_string(buf.getvalue())
    onnx.checker.check_model(m)

    init_names = [t.name for t in m.graph.initializer]
    param_names = [n for n, _ in model.named_parameters()]
    missing = sorted(set(param_names) - set(init_names))
    extra = sorted(set(init_names) - set(param_names))
    if missing or extra:
        raise SystemExit(f"initializer/parameter name mismatch: missing={missing} extra={extra}")

    # The tie: one initializer, consumed by the embedding Gather and (through Transpose) the
    # LM head MatMul.
    users = [(n.op_type, list(n.input)) for n in m.graph.node if "wte.weight" in n.input]
    user_types = sorted(u[0] for u in users)
    if user_types != ["Gather", "Transpose"]:
        raise SystemExit(f"tied embedding not shared as expected: {users}")

    out_shape = [d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim]
    assert out_shape == [BATCH, cfg.seq_len, cfg.vocab_size], out_shape

    gpt_path = os.path.join(args.out, "gpt.onnx")
    save_external(m, gpt_path)

    # ---- reference data ------------------------------------------------------------------
    save_tensor(os.path.join(args.out, "test_data_set_0", "input_0.pb"), ids_np, "input_ids")
    save_tensor(os.path.join(args.out, "test_data_set_0", "output_0.pb"), logits_np, "logits")

    # Gradients as a tiny ONNX model: initializers named like gpt.onnx's, each also a graph
    # output so the model is valid and self-describing. Order = gpt.onnx initializer order.
    g_inits = [numpy_helper.from_array(grads[n], n) for n in init_names]
    g_outputs = [
        onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(grads[n].shape))
        for n in init_names
    ]
    g_graph = onnx.helper.make_graph(
        [], "reference_grads", [], g_outputs, initializer=g_inits,
        doc_string=f"d(loss)/d(param) for one step of the bundled GPT; loss = {loss.item():.9g}",
    )
    g_model = onnx.helper.make_model(
        g_graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)], producer_name="ptrain"
    )
    g_model.ir_version = m.ir_version
    onnx.checker.check_model(g_model)
    save_external(g_model, os.path.join(args.out, "reference_grads.onnx"))

    with open(os.path.join(args.out, "reference_loss.txt"), "w") as f:
        f.write(f"{loss.item():.9g}\n")

    # ---- report ----------------------------------------------------------------------------
    ops = collections.Counter(n.op_type for n in m.graph.node)
    graph_size = os.path.getsize(gpt_path)
    data_size = os.path.getsize(gpt_path + ".data")
    n_params = sum(int(np.prod(grads[n].shape)) for n in init_names)
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, opset {OPSET}")
    print(f"gpt.onnx {graph_size} bytes, gpt.onnx.data {data_size} bytes, {n_params} parameters")
    print(f"nodes {len(m.graph.node)}; op types:")
    for op, c in sorted(ops.items()):
        print(f"  {op:24s} {c}")
    print("initializers:")
    for t in m.graph.initializer:
        print(f"  {t.name:28s} {list(t.dims)}")
    print(f"reference loss {loss.item():.9g} (ln 256 = {np.log(256):.9g})")

    write_readme(args.out, m, ops, graph_size, data_size, n_params, loss.item(), ids_np)
    return 0


def write_readme(out, m, ops, graph_size, data_size, n_params, loss, ids_np) -> None:
    text = bytes(ids_np.reshape(-1).astype(np.uint8)).decode("ascii")
    op_lines = "\n".join(f"| {op} | {c} |" for op, c in sorted(ops.items()))
    init_lines = "\n".join(
        f"| `{t.name}` | {list(t.dims)} |" for t in m.graph.initializer
    )
    readme = f"""# The bundled GPT

A small byte-level GPT (`python/ptrain_fixtures/models/gpt.py`), exported to ONNX for the ptrain compiler
(DESIGN.md, "The bundled model"). Randomly initialized (seed {SEED}), not trained: training is the
compiler's job; `python/ptrain/data.py` builds the corpus.

- vocabulary 256 (bytes), 4 layers, 4 heads, hidden 128, sequence 64, MLP 4x with exact (erf) GELU
- pre-LayerNorm blocks: `h += attn(ln_1(h)); h += mlp(ln_2(h))`, fused QKV Linear, causal mask
- learned position embedding, final LayerNorm, LM head tied to the token embedding
  (`logits = ln_f(h) @ wte.weight^T`): ONE initializer `wte.weight`, used by the embedding
  `Gather` and by the head's `Transpose` -> `MatMul`
- {n_params} parameters; input `input_ids` int64 [4, 64], output `logits` float32 [4, 64, 256]
- opset {OPSET}, `do_constant_folding=False`, static shapes, weights as external data

## How it was made

    {COMMAND}
    .venv/bin/python python/ptrain_fixtures/verify_bundled_gpt.py --dir models/gpt   # onnxruntime check

with torch {torch.__version__} (Debian bookworm `python3-torch` 1.13.1) and onnx {onnx.__version__}
(Debian `python3-onnx`), numpy {np.__version__}, on {sys.platform}. The output is deterministic:
rerunning gives byte-identical files with these versions.

## Files

| file | content |
| --- | --- |
| `gpt.onnx` | the graph ({graph_size} bytes), weights in `gpt.onnx.data` ({data_size} bytes) |
| `test_data_set_0/input_0.pb` | TensorProto `input_ids` int64 [4, 64]: the first 256 bytes of the Zen of Python (`import this`), row-major |
| `test_data_set_0/output_0.pb` | TensorProto `logits` float32 [4, 64, 256]: PyTorch's logits for that input |
| `reference_loss.txt` | next-token cross-entropy, mean over 4x63 positions (`logits[:, :-1]` vs `input_ids[:, 1:]`): {loss:.9g} |
| `reference_grads.onnx` | a node-less ONNX model whose initializers (data in `reference_grads.onnx.data`) are d loss / d param, named like `gpt.onnx`'s initializers; `wte.weight`'s gradient includes both the embedding and the LM-head uses |

The input text:

```
{text}
```

## Export notes

- `do_constant_folding=False` alone is not enough with torch 1.13: in eval mode its initializer
  de-duplication merges parameters that are equal BY VALUE (the freshly initialized LayerNorm
  weights and the zero biases) into one initializer plus `Identity` nodes. The script exports with
  `training=TrainingMode.TRAINING`, where only parameters sharing storage (the real tie) are merged.
  The model has no dropout or batch norm, so the function is the same.
- The model turns traced sizes into Python ints, so every `Reshape` takes a `Constant` shape (no
  Shape/Gather/Unsqueeze/Concat chains). `Constant` nodes (shapes, split sizes, the 64x64 causal
  mask, the attention scale, GELU's constants, the position ids) stay inline in `gpt.onnx`; only
  initializers go to `gpt.onnx.data`.
- Each `Linear` is `Transpose(weight) -> MatMul -> Add(bias)` (3-D input, no Gemm).
- `python/tests/test_bundled_gpt.py` (skipped without torch) checks the structure, that the
  model reproduces the logits, loss and gradients, and the gradients by central finite differences
  in float64.

## Op types in gpt.onnx ({len(m.graph.node)} nodes)

| op | count |
| --- | --- |
{op_lines}

## Initializers (parameter names)

| name | shape |
| --- | --- |
{init_lines}

## onnxruntime check

<!-- ort-check -->
(not run: see `python/ptrain_fixtures/verify_bundled_gpt.py`)
<!-- /ort-check -->
"""
    path = os.path.join(out, "README.md")
    # Keep a recorded onnxruntime result across re-exports.
    if os.path.exists(path):
        old = open(path).read()
        a, b = "<!-- ort-check -->", "<!-- /ort-check -->"
        if a in old and b in old:
            rec = old[old.index(a) : old.index(b) + len(b)]
            readme = readme[: readme.index(a)] + rec + readme[readme.index(b) + len(b) :]
    with open(path, "w") as f:
        f.write(readme)


if __name__ == "__main__":
    sys.exit(main())
