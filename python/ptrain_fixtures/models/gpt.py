"""The bundled GPT: a small byte-level decoder-only transformer in PyTorch.

This is the model that `python/ptrain_fixtures/export_bundled_gpt.py` exports to ONNX for the
compiler (see DESIGN.md, "The bundled model").

Configuration (defaults of `GPTConfig`):
  vocab V = 256 (bytes), layers L = 4, heads H = 4, hidden D = 128, head dim Dh = D/H = 32,
  sequence T = 64, MLP hidden 4D = 512.

Shapes (B = batch):
  input_ids          int64  [B, T]
  wte.weight         f32    [V, D]      token embedding, TIED with the LM head (same Parameter)
  wpe.weight         f32    [T, D]      learned position embedding
  per block i (pre-LayerNorm):
    ln_1.{weight,bias}      [D]
    attn.qkv.{weight,bias}  [3D, D], [3D]  fused Q|K|V projection (torch Linear: y = x W^T + b)
    attn.proj.{weight,bias} [D, D], [D]
    ln_2.{weight,bias}      [D]
    mlp.fc.{weight,bias}    [4D, D], [4D]
    mlp.proj.{weight,bias}  [D, 4D], [D]
  ln_f.{weight,bias} [D]
  logits             f32    [B, T, V] = ln_f(h) @ wte.weight^T

Block:  h = h + attn(ln_1(h));  h = h + mlp(ln_2(h))
  attn: q,k,v = split(qkv(x)) each [B, H, T, Dh]; softmax(q k^T / sqrt(Dh) + causal mask) v
        -> [B, T, D] -> proj
  mlp:  proj(gelu_erf(fc(x)))

Initialization is deterministic given a seed: GPT-2 style normal(0, 0.02) for the Linear and
embedding weights, zeros for biases, ones/zeros for LayerNorm, and the residual output projections
scaled by 1/sqrt(2L).  Only a `torch.Generator` seeded with `seed` is used, so the global RNG
state does not matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    seq_len: int = 64
    mlp_ratio: int = 4
    ln_eps: float = 1e-5


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.n_head = cfg.n_head
        self.head_dim = cfg.n_embd // cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        # Additive causal mask [T, T]: 0 on and below the diagonal, -inf above. A buffer, so it
        # exports as a constant rather than an initializer-like parameter.
        mask = torch.full((cfg.seq_len, cfg.seq_len), float("-inf")).triu(1)
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [B, T, D]
        # Python ints, so that a traced export gets constant shapes (no Unsqueeze/Concat chains).
        b, t, d = (int(s) for s in x.shape)
        qkv = self.qkv(x)  # [B, T, 3D]
        q, k, v = qkv.split(d, dim=2)  # each [B, T, D]
        q = q.view(b, t, self.n_head, self.head_dim).transpose(1, 2)  # [B, H, T, Dh]
        k = k.view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.n_head, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))  # [B, H, T, T]
        # Static shapes: at the full sequence length no Slice is traced.
        mask = self.causal_mask if t == self.causal_mask.shape[0] else self.causal_mask[:t, :t]
        att = att + mask
        att = F.softmax(att, dim=-1)
        y = att @ v  # [B, H, T, Dh]
        y = y.transpose(1, 2).reshape(b, t, d)  # [B, T, D]
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, cfg.mlp_ratio * cfg.n_embd)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.n_embd, cfg.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # GELU in its exact erf form: exports as Div/Erf/Add/Mul/Mul.
        return self.proj(F.gelu(self.fc(x), approximate="none"))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.ln_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.ln_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig = GPTConfig(), seed: int = 0):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.seq_len, cfg.n_embd)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=cfg.ln_eps)
        self.register_buffer(
            "pos_ids", torch.arange(cfg.seq_len, dtype=torch.int64), persistent=False
        )
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        resid_std = 0.02 / math.sqrt(2 * self.cfg.n_layer)
        # named_parameters() order is deterministic (registration order).
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif ".ln_" in name or name.startswith("ln_"):
                p.fill_(1.0)  # LayerNorm weight
            else:
                std = resid_std if name.endswith("proj.weight") else 0.02
                p.copy_(torch.randn(p.shape, generator=g) * std)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        # input_ids: int64 [B, T] -> logits: f32 [B, T, V]
        b, t = (int(s) for s in input_ids.shape)
        pos = self.pos_ids if t == self.cfg.seq_len else self.pos_ids[:t]
        h = self.wte(input_ids) + self.wpe(pos)  # [B, T, D]
        for blk in self.blocks:
            h = blk(h)
        h = self.ln_f(h)
        return h @ self.wte.weight.t()  # tied LM head: [B, T, V]


def next_token_loss(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of logits[:, :-1] predicting input_ids[:, 1:] (B*(T-1) positions)."""
    v = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, v), input_ids[:, 1:].reshape(-1))
