"""PyTorch reference for ptrain's mixed-precision training curves (issue 24, docs/MixedPrecision.md).

Trains the bundled GPT (python/ptrain_fixtures/models/gpt.py) exactly as the CTest `codegen-cpu-precision`
(test/Target/Cpp/precision_e2e.py) trains ptrain's compiled step, once in fp32 and once under
`torch.autocast('cpu', dtype=torch.bfloat16)`, and prints bf16 / fp32 mean loss - 1 by 20-step windows:

- the same initial weights: the initializers of models/gpt/gpt.onnx, loaded by name (wte.weight is one
  Parameter, the embedding and the tied LM head, as in the export);
- the same batches: STEPS consecutive, never repeated [4, 64] byte batches of the repository's docs/*.md
  (sorted, concatenated); each loss is the step's own forward, measured before it trains on its batch;
- the same loss: next-token cross-entropy, logits[:, :-1] against tokens[:, 1:], mean in nats (computed in fp32
  from the logits, as torch autocast does for its fp32-listed losses);
- the same optimizer: AdamW (torch.optim.AdamW, which is ptrain_adamw_step_f32's algorithm), betas (0.9, 0.95),
  eps 1e-8, decoupled weight decay 0.1 on parameters of rank >= 2 only, and ptrain's learning rate
  (lib/Target/Cpp/EmitOptimizer.cpp, lib/Runtime/cpu/Optimizer.cpp): for the 1-based step t, peak t / W while
  t <= W, then min + (peak - min) (1 + cos(pi (t - W) / (T - W))) / 2 with min = 0.1 peak.

Under autocast every matmul/linear (the tied LM head `h @ wte.weight.t()` included) runs in bf16 with bf16
outputs; layer norm, softmax and the loss stay fp32 (torch's CPU autocast lists), master weights and AdamW
state fp32.

Usage: /usr/bin/python3 bench/precision/torch_reference.py [--steps 200] [--lr 1e-3] [--warmup 10]
       [--modes fp32,bf16,bf16-fp32-head,fp32-perturbed]
       [--json out.json] [--compare ptrain_curves.json]
(Debian's python3-torch 1.13; `bf16-fp32-head` runs autocast with the LM-head matmul in fp32: the recipe
ptrain adopts if autocast shows the gap.)
"""

import argparse
import glob
import json
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from ptrain_fixtures.models.gpt import GPT  # noqa: E402


def load_weights(model, onnx_path):
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(onnx_path).graph.initializer}
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            if name not in inits:
                raise SystemExit(f"{onnx_path}: no initializer {name}")
            p.copy_(torch.from_numpy(np.array(inits[name], dtype=np.float32)).reshape(p.shape))


def lr_at(t, peak, warmup, total, min_ratio=0.1):
    """ptrain's learning rate for the 1-based step t (EmitOptimizer.cpp's emitLearningRate)."""
    if t <= warmup:
        return peak * t / warmup
    lo = peak * min_ratio
    progress = min(1.0, (t - warmup) / (total - warmup)) if total > warmup else 1.0
    return lo + (peak - lo) * 0.5 * (1.0 + math.cos(math.pi * progress))


def forward_fp32_head(model, ids):
    """The model's forward with the tied LM-head matmul outside autocast (fp32 operands and output)."""
    b, t = ids.shape
    h = model.wte(ids) + model.wpe(model.pos_ids[:t])
    for blk in model.blocks:
        h = blk(h)
    h = model.ln_f(h)
    with torch.autocast("cpu", enabled=False):
        return h.float() @ model.wte.weight.t()


def train(mode, data, batch_shape, args):
    torch.manual_seed(0)
    model = GPT()
    load_weights(model, os.path.join(ROOT, "models/gpt/gpt.onnx"))
    if mode == "fp32-perturbed":
        # The noise floor: fp32 from weights moved by one fp32 ulp (2^-23 relative, random sign), which is what
        # any change of summation order does after one step.
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for p in model.parameters():
                sign = torch.randint(0, 2, p.shape, generator=g).float() * 2 - 1
                p.mul_(1 + sign * 2.0 ** -23)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    b, s = batch_shape
    curve = []
    for i in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(i + 1, args.lr, args.warmup, args.steps)
        ids = torch.from_numpy(data[i * b * s:(i + 1) * b * s].reshape(b, s))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode.startswith("bf16")):
            logits = forward_fp32_head(model, ids) if mode == "bf16-fp32-head" else model(ids)
        loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.clip > 0:  # ptrain's clip-norm: min(1, C / (norm + 1e-6)), torch's clip_grad_norm_
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        curve.append(float(loss))
    return curve


def windows(a, b, width=20):
    return [(k, min(k + width, len(a)) - 1, float(np.mean(b[k:k + width]) / np.mean(a[k:k + width]) - 1.0))
            for k in range(0, len(a), width)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--modes", default="fp32,bf16,bf16-fp32-head,fp32-perturbed")
    ap.add_argument("--clip", type=float, default=0.0, help="global-norm clipping (ptrain's clip-norm); 0: off")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the curves here")
    ap.add_argument("--compare", help="ptrain's curves (precision_e2e.py with PTRAIN_PRECISION_CURVES=<file>)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tokens = numpy_helper.to_array(onnx.load_tensor(os.path.join(ROOT, "models/gpt/test_data_set_0/input_0.pb")))
    b, s = tokens.shape
    corpus = b"".join(open(p, "rb").read() for p in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))
    need = (args.steps + 1) * b * s
    if len(corpus) < need:
        raise SystemExit(f"the corpus has {len(corpus)} bytes, {need} needed")
    data = np.frombuffer(corpus[:need], np.uint8).astype(np.int64)
    curves = {m: train(m, data, (b, s), args) for m in args.modes.split(",")}
    if args.compare:
        for m, c in json.load(open(args.compare)).items():
            curves["ptrain-" + m] = c[:args.steps]
    for m, c in curves.items():
        print(f"{m}: loss {c[0]:.4f} -> mean of the last 20 {np.mean(c[-20:]):.4f}")
    for m in curves:
        base = "ptrain-fp32" if m.startswith("ptrain-") else "fp32"
        if m == base:
            continue
        gaps = windows(curves[base], curves[m])
        last = float(np.mean(curves[m][-20:]) / np.mean(curves[base][-20:]) - 1.0)
        print(f"{m} / {base} - 1 by 20-step windows: " + ", ".join(f"{lo}-{hi} {g:+.4f}" for lo, hi, g in gaps)
              + f"; last 20 steps {last:+.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(curves, f)


if __name__ == "__main__":
    main()
