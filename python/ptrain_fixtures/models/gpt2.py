"""A small GPT-2 with the Hugging Face GPT-2 architecture, in plain PyTorch (no transformers).

`python/ptrain_fixtures/export_import_fixtures.py` exports it to ONNX for the importer's tests. The module
structure, parameter names and forward computation follow `transformers`' `GPT2LMHeadModel`
(modeling_gpt2.py, eager attention), so the exported graphs have the shape of a real GPT-2 export:

- Conv1D linears: `weight` is [in, out] and `y = addmm(bias, x.view(-1, in), weight)` then a view
  back, so every linear exports as Shape/Gather/.../Reshape -> Gemm -> Reshape (not Transpose+MatMul);
- learned position embedding with `position_ids = arange(past, past + T).unsqueeze(0)` (a Range
  over traced sizes);
- a causal mask taken from a bool buffer `bias` [1, 1, P, P] by slicing with traced sizes, applied
  with `where(mask, w, finfo.min)`; attention scale `w / sqrt(Dh)` as a Div by a full([]) tensor;
- "gelu_new", the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
- dropout (p = 0.1) on the embeddings, the attention probabilities and both residual branches, as in
  GPT-2 (identities in eval mode; ONNX Dropout with training_mode true in a training-mode export);
- pre-LayerNorm blocks, final `ln_f`, and an LM head `lm_head` (Linear without bias) whose weight IS
  `transformer.wte.weight` (tied).

Shapes (B batch, T sequence, V vocab, D hidden, H heads, Dh = D / H, P positions):
  input_ids                      int64 [B, T]
  transformer.wte.weight         f32 [V, D]   tied with lm_head.weight
  transformer.wpe.weight         f32 [P, D]
  transformer.h.<i>.ln_1.{weight,bias}        [D]
  transformer.h.<i>.attn.c_attn.{weight,bias} [D, 3D], [3D]
  transformer.h.<i>.attn.c_proj.{weight,bias} [D, D], [D]
  transformer.h.<i>.ln_2.{weight,bias}        [D]
  transformer.h.<i>.mlp.c_fc.{weight,bias}    [D, 4D], [4D]
  transformer.h.<i>.mlp.c_proj.{weight,bias}  [4D, D], [D]
  transformer.ln_f.{weight,bias}              [D]
  logits                         f32 [B, T, V]

Initialization is deterministic given a seed (only a seeded `torch.Generator` is used). LayerNorm
weights are 1 + noise and biases small noise, as in a trained checkpoint: with equal values, torch's
ONNX export (eval mode) merges parameters by value into one initializer plus Identity nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass(frozen=True)
class GPT2Config:
    vocab_size: int = 64
    n_positions: int = 16
    n_embd: int = 32
    n_layer: int = 2
    n_head: int = 2
    layer_norm_epsilon: float = 1e-5
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1


class Conv1D(nn.Module):
    """Hugging Face's Conv1D: a linear layer with the weight stored transposed, [nx, nf]."""

    def __init__(self, nf: int, nx: int):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's tanh approximation of GELU (transformers' NewGELUActivation)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, cfg: GPT2Config):
        super().__init__()
        p = cfg.n_positions
        self.register_buffer(
            "bias", torch.tril(torch.ones((p, p), dtype=torch.bool)).view(1, 1, p, p), persistent=False
        )
        self.embed_dim = cfg.n_embd
        self.num_heads = cfg.n_head
        self.head_dim = cfg.n_embd // cfg.n_head
        self.c_attn = Conv1D(3 * cfg.n_embd, cfg.n_embd)
        self.c_proj = Conv1D(cfg.n_embd, cfg.n_embd)
        self.attn_dropout = nn.Dropout(cfg.attn_pdrop)
        self.resid_dropout = nn.Dropout(cfg.resid_pdrop)

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        new_shape = t.size()[:-1] + (self.num_heads, self.head_dim)
        return t.view(new_shape).permute(0, 2, 1, 3)  # [B, H, T, Dh]

    def _merge_heads(self, t: torch.Tensor) -> torch.Tensor:
        t = t.permute(0, 2, 1, 3).contiguous()
        new_shape = t.size()[:-2] + (self.num_heads * self.head_dim,)
        return t.view(new_shape)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
        )
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = self.attn_dropout(nn.functional.softmax(attn_weights, dim=-1))
        attn_output = self._merge_heads(torch.matmul(attn_weights, value))
        return self.resid_dropout(self.c_proj(attn_output))


class GPT2MLP(nn.Module):
    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.c_fc = Conv1D(4 * cfg.n_embd, cfg.n_embd)
        self.c_proj = Conv1D(cfg.n_embd, 4 * cfg.n_embd)
        self.dropout = nn.Dropout(cfg.resid_pdrop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(gelu_new(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.attn = GPT2Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)
        self.mlp = GPT2MLP(cfg)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h + self.attn(self.ln_1(h))
        return h + self.mlp(self.ln_2(h))


class GPT2Model(nn.Module):
    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.n_positions, cfg.n_embd)
        self.drop = nn.Dropout(cfg.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        past_length = 0
        position_ids = torch.arange(
            past_length, input_shape[-1] + past_length, dtype=torch.long, device=input_ids.device
        ).unsqueeze(0)
        h = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        for block in self.h:
            h = block(h)
        h = self.ln_f(h)
        return h.view(input_shape + (h.size(-1),))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, cfg: GPT2Config = GPT2Config(), seed: int = 0):
        super().__init__()
        self.cfg = cfg
        self.transformer = GPT2Model(cfg)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied (transformers' tie_weights)
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():  # the tied weight is listed once
            noise = torch.randn(p.shape, generator=g)
            if ".ln_" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.02 * noise)
            else:
                p.copy_(0.02 * noise)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.transformer(input_ids))
