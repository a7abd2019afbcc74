#!/usr/bin/env python3
"""Emit a GPT-shaped L0 model graph (ptrain dialect) of any size, without weights.

The output has the form `ptrain-translate --import-onnx` gives the bundled GPT (models/gpt/gpt.onnx,
python/ptrain_fixtures/models/gpt.py): `ptrain.state` parameter declarations (tied input/output embedding, one
symbol) and `func.func @forward(%tokens: tensor<B x S x i64>) -> tensor<B x S x V x f32>` of ptrain model
ops: token + position embedding, per layer pre-LayerNorm attention (fused QKV, causal mask, softmax) and
GELU MLP with residual adds, final LayerNorm, LM head through the transposed embedding. Weights never
enter the IR (DESIGN decision 10), so a 175B-parameter shape is a few hundred kB of text: it is for the
timing analysis (docs/TimingModel.md), the stage split and the training-step passes, not for running.

The causal mask is computed from a position vector with model ops (relu and min of j - i, times -1e9), so
the text stays O(S), not O(S^2).

Usage:
    python3 python/ptrain_fixtures/gen_gpt_mlir.py --layers 52 --hidden 1920 --heads 24 --seq 1024 \
        --vocab 51200 --micro-batch 8 --grid dp=4,pp=4,tp=8 -o gpt-2.5b.mlir

With --grid the module also declares `ptrain.grid @grid(...)`, which --ptrain-build-training-step keeps
(its pp must equal --ptrain-split-stages' pp).
"""

from __future__ import annotations

import argparse
import sys


def emit(layers: int, hidden: int, heads: int, seq: int, vocab: int, batch: int, ffn: int,
         grid: list[tuple[str, int]] | None, dtype: str = "f32") -> str:
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    for name, v in (("layers", layers), ("hidden", hidden), ("heads", heads), ("seq", seq),
                    ("vocab", vocab), ("micro-batch", batch), ("ffn", ffn)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    H, N, D, S, B, V, F = hidden, heads, hidden // heads, seq, batch, vocab, ffn
    t = lambda *shape: "tensor<" + "x".join(str(s) for s in shape) + ("x" if shape else "") + dtype + ">"
    ti = lambda *shape: "tensor<" + "x".join(str(s) for s in shape) + "xi64>"
    out: list[str] = []
    w = out.append
    w(f'module attributes {{ptrain.model = "gen_gpt_mlir.py layers={layers} hidden={hidden} heads={heads} '
      f'seq={seq} vocab={vocab} micro-batch={batch} ffn={ffn}"}} {{')
    if grid:
        w("  ptrain.grid @grid(" + ", ".join(f"{n} = {s}" for n, s in grid) + ")")

    params: list[tuple[str, str]] = [("wte.weight", t(V, H)), ("wpe.weight", t(S, H))]
    for l in range(layers):
        p = f"blocks.{l}."
        params += [(p + "ln_1.weight", t(H)), (p + "ln_1.bias", t(H)),
                   (p + "attn.qkv.weight", t(3 * H, H)), (p + "attn.qkv.bias", t(3 * H)),
                   (p + "attn.proj.weight", t(H, H)), (p + "attn.proj.bias", t(H)),
                   (p + "ln_2.weight", t(H)), (p + "ln_2.bias", t(H)),
                   (p + "mlp.fc.weight", t(F, H)), (p + "mlp.fc.bias", t(F)),
                   (p + "mlp.proj.weight", t(H, F)), (p + "mlp.proj.bias", t(H))]
    params += [("ln_f.weight", t(H)), ("ln_f.bias", t(H))]
    for name, ty in params:
        w(f'  ptrain.state @{name} key "{name}" kind parameter : {ty}')

    w(f'  func.func @forward(%tokens: {ti(B, S)} {{ptrain.onnx_name = "input_ids"}}) -> '
      f'({t(B, S, V)} {{ptrain.onnx_name = "logits"}}) {{')
    counter = [0]

    def op(text: str) -> str:
        name = f"%v{counter[0]}"
        counter[0] += 1
        w(f"    {name} = {text}")
        return name

    positions = ", ".join(str(i) for i in range(S))
    pos_i = op(f"arith.constant dense<[{positions}]> : {ti(S)}")
    pos_f = op(f"arith.constant dense<[{', '.join(f'{i}.0' for i in range(S))}]> : {t(S)}")
    scale = op(f"arith.constant dense<{1.0 / D ** 0.5:.9g}> : {t()}")
    one = op(f"arith.constant dense<1.0> : {t()}")
    neg = op(f"arith.constant dense<-1.0e9> : {t()}")
    rows = op(f"ptrain.reshape {pos_f} : {t(S)} -> {t(S, 1)}")
    cols = op(f"ptrain.reshape {pos_f} : {t(S)} -> {t(1, S)}")
    diff = op(f"ptrain.binary sub {cols}, {rows} : {t(1, S)}, {t(S, 1)}")  # j - i
    pos_part = op(f"ptrain.unary relu {diff} : {t(S, S)}")
    future = op(f"ptrain.binary min {pos_part}, {one} : {t(S, S)}, {t()}")  # 1 where j > i
    mask = op(f"ptrain.binary mul {future}, {neg} : {t(S, S)}, {t()}")

    read = {}
    for name, ty in params:
        read[name] = op(f"ptrain.state_read @{name} : {ty}")

    tok = op(f"ptrain.embedding {read['wte.weight']}, %tokens : {t(V, H)}, {ti(B, S)}")
    pos = op(f"ptrain.embedding {read['wpe.weight']}, {pos_i} : {t(S, H)}, {ti(S)}")
    x = op(f"ptrain.binary add {tok}, {pos} : {t(B, S, H)}, {t(S, H)}")
    ln_attrs = "{axis = -1 : i64, epsilon = 1.0e-05 : f64}"
    for l in range(layers):
        p = lambda s: read[f"blocks.{l}.{s}"]
        h = op(f"ptrain.layer_norm {x}, {p('ln_1.weight')}, {p('ln_1.bias')} {ln_attrs} : "
               f"{t(B, S, H)}, {t(H)}, {t(H)}")
        wqkv = op(f"ptrain.transpose {p('attn.qkv.weight')} {{perm = array<i64: 1, 0>}} : {t(3 * H, H)} -> {t(H, 3 * H)}")
        qkv = op(f"ptrain.matmul {h}, {wqkv} : {t(B, S, H)}, {t(H, 3 * H)}")
        qkv = op(f"ptrain.binary add {p('attn.qkv.bias')}, {qkv} : {t(3 * H)}, {t(B, S, 3 * H)}")
        split = op(f"ptrain.split {qkv} {{axis = 2 : i64, sizes = array<i64: {H}, {H}, {H}>}} : {t(B, S, 3 * H)} -> "
                   f"{t(B, S, H)}, {t(B, S, H)}, {t(B, S, H)}")
        out[-1] = out[-1].replace(f"{split} =", f"{split}:3 =")
        q = op(f"ptrain.reshape {split}#0 : {t(B, S, H)} -> {t(B, S, N, D)}")
        q = op(f"ptrain.transpose {q} {{perm = array<i64: 0, 2, 1, 3>}} : {t(B, S, N, D)} -> {t(B, N, S, D)}")
        k = op(f"ptrain.reshape {split}#1 : {t(B, S, H)} -> {t(B, S, N, D)}")
        k = op(f"ptrain.transpose {k} {{perm = array<i64: 0, 2, 3, 1>}} : {t(B, S, N, D)} -> {t(B, N, D, S)}")
        v = op(f"ptrain.reshape {split}#2 : {t(B, S, H)} -> {t(B, S, N, D)}")
        v = op(f"ptrain.transpose {v} {{perm = array<i64: 0, 2, 1, 3>}} : {t(B, S, N, D)} -> {t(B, N, S, D)}")
        s = op(f"ptrain.matmul {q}, {k} : {t(B, N, S, D)}, {t(B, N, D, S)}")
        s = op(f"ptrain.binary mul {s}, {scale} : {t(B, N, S, S)}, {t()}")
        s = op(f"ptrain.binary add {s}, {mask} : {t(B, N, S, S)}, {t(S, S)}")
        a = op(f"ptrain.softmax {s} {{axis = -1 : i64}} : {t(B, N, S, S)}")
        c = op(f"ptrain.matmul {a}, {v} : {t(B, N, S, S)}, {t(B, N, S, D)}")
        c = op(f"ptrain.transpose {c} {{perm = array<i64: 0, 2, 1, 3>}} : {t(B, N, S, D)} -> {t(B, S, N, D)}")
        c = op(f"ptrain.reshape {c} : {t(B, S, N, D)} -> {t(B, S, H)}")
        wo = op(f"ptrain.transpose {p('attn.proj.weight')} {{perm = array<i64: 1, 0>}} : {t(H, H)} -> {t(H, H)}")
        o = op(f"ptrain.matmul {c}, {wo} : {t(B, S, H)}, {t(H, H)}")
        o = op(f"ptrain.binary add {p('attn.proj.bias')}, {o} : {t(H)}, {t(B, S, H)}")
        x = op(f"ptrain.binary add {x}, {o} : {t(B, S, H)}, {t(B, S, H)}")
        h = op(f"ptrain.layer_norm {x}, {p('ln_2.weight')}, {p('ln_2.bias')} {ln_attrs} : "
               f"{t(B, S, H)}, {t(H)}, {t(H)}")
        w1 = op(f"ptrain.transpose {p('mlp.fc.weight')} {{perm = array<i64: 1, 0>}} : {t(F, H)} -> {t(H, F)}")
        m = op(f"ptrain.matmul {h}, {w1} : {t(B, S, H)}, {t(H, F)}")
        m = op(f"ptrain.binary add {p('mlp.fc.bias')}, {m} : {t(F)}, {t(B, S, F)}")
        m = op(f"ptrain.gelu {m} : {t(B, S, F)}")
        w2 = op(f"ptrain.transpose {p('mlp.proj.weight')} {{perm = array<i64: 1, 0>}} : {t(H, F)} -> {t(F, H)}")
        m = op(f"ptrain.matmul {m}, {w2} : {t(B, S, F)}, {t(F, H)}")
        m = op(f"ptrain.binary add {p('mlp.proj.bias')}, {m} : {t(H)}, {t(B, S, H)}")
        x = op(f"ptrain.binary add {x}, {m} : {t(B, S, H)}, {t(B, S, H)}")
    h = op(f"ptrain.layer_norm {x}, {read['ln_f.weight']}, {read['ln_f.bias']} {ln_attrs} : "
           f"{t(B, S, H)}, {t(H)}, {t(H)}")
    head = op(f"ptrain.transpose {read['wte.weight']} {{perm = array<i64: 1, 0>}} : {t(V, H)} -> {t(H, V)}")
    logits = op(f"ptrain.matmul {h}, {head} : {t(B, S, H)}, {t(H, V)}")
    w(f"    return {logits} : {t(B, S, V)}")
    w("  }")
    w("}")
    return "\n".join(out) + "\n"


def parse_grid(text: str) -> list[tuple[str, int]]:
    grid = []
    for part in text.split(","):
        name, _, size = part.partition("=")
        if not name or not size.isdigit() or int(size) < 1:
            raise ValueError(f"--grid: expected name=size[,name=size...], got '{text}'")
        grid.append((name.strip(), int(size)))
    return grid


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--micro-batch", type=int, default=4, help="batch dimension of @forward")
    ap.add_argument("--ffn", type=int, default=0, help="MLP width (default 4 x hidden)")
    ap.add_argument("--grid", default="", help="e.g. dp=4,pp=4,tp=8 (declares ptrain.grid @grid)")
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args(argv)
    try:
        text = emit(args.layers, args.hidden, args.heads, args.seq, args.vocab, args.micro_batch,
                    args.ffn or 4 * args.hidden, parse_grid(args.grid) if args.grid else None)
    except ValueError as e:
        print(f"gen_gpt_mlir.py: error: {e}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
