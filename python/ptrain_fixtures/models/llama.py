"""A small LLaMA with the Hugging Face LLaMA architecture, in plain PyTorch (no transformers).

`python/ptrain_fixtures/export_import_fixtures.py` exports it to ONNX with the TorchScript exporter (Debian's
torch 1.13) for the importer's tests and docs/Exports.md. The module structure, parameter names and forward
computation follow `transformers`' `LlamaForCausalLM` as of 4.30 (modeling_llama.py, the last release whose
forward the TorchScript exporter of torch 1.13 traces at opset 11: later ones build the causal mask with
`triu`, Trilu from opset 14 only), so the exported graph has the shape of a real LLaMA export:

- RMSNorm (`LlamaRMSNorm`): `variance = x.to(float32).pow(2).mean(-1, keepdim=True)`,
  `x * torch.rsqrt(variance + eps)`, times the weight, no bias;
- rotary position embedding (`LlamaRotaryEmbedding`): cos / sin tables [1, 1, P, Dh] as buffers (the cat of
  the frequencies with themselves), sliced to the sequence, gathered at `position_ids`, applied as
  `q * cos + rotate_half(q) * sin` with `rotate_half(x) = cat(-x2, x1)`;
- grouped-query attention: `num_key_value_heads` < `num_attention_heads`, K and V repeated by `repeat_kv`
  (expand + reshape); scores `q k^T / sqrt(Dh)` plus a float causal mask from `_make_causal_mask` (a
  `full(min)` masked to 0 on and below the diagonal by comparing an `arange` with itself), softmax in fp32;
- SwiGLU MLP: `down_proj(silu(gate_proj(x)) * up_proj(x))`;
- no biases anywhere, a final `norm` and an untied `lm_head`.

Shapes (B batch, T sequence, V vocab, D hidden, H heads, Hkv key/value heads, Dh = D / H, F intermediate):
  input_ids                                     int64 [B, T]
  model.embed_tokens.weight                     f32 [V, D]
  model.layers.<i>.input_layernorm.weight       [D]
  model.layers.<i>.self_attn.q_proj.weight      [H Dh, D]
  model.layers.<i>.self_attn.{k,v}_proj.weight  [Hkv Dh, D]
  model.layers.<i>.self_attn.o_proj.weight      [D, H Dh]
  model.layers.<i>.post_attention_layernorm.weight [D]
  model.layers.<i>.mlp.{gate,up}_proj.weight    [F, D]
  model.layers.<i>.mlp.down_proj.weight         [D, F]
  model.norm.weight                             [D]
  lm_head.weight                                [V, D]
  logits                                        f32 [B, T, V]

Initialization is deterministic given a seed (only a seeded `torch.Generator` is used); the RMSNorm weights
are 1 + noise, as in a trained checkpoint (distinct values: no merging by the exporter's constant folding).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass(frozen=True)
class LlamaConfig:
    vocab_size: int = 128
    hidden_size: int = 32
    intermediate_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 16
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim: int, max_position_embeddings: int, base: float):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        t = torch.arange(max_position_embeddings, dtype=inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None, :, :], persistent=False)
        self.register_buffer("sin_cached", emb.sin()[None, None, :, :], persistent=False)

    def forward(self, x: torch.Tensor, seq_len: int):
        return (self.cos_cached[:, :, :seq_len, ...].to(dtype=x.dtype),
                self.sin_cached[:, :, :seq_len, ...].to(dtype=x.dtype))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids):
    cos = cos.squeeze(1).squeeze(0)  # [T, Dh]
    sin = sin.squeeze(1).squeeze(0)
    cos = cos[position_ids].unsqueeze(1)  # [B, 1, T, Dh]
    sin = sin[position_ids].unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.hidden_size = cfg.hidden_size
        self.num_heads = cfg.num_attention_heads
        self.head_dim = cfg.hidden_size // cfg.num_attention_heads
        self.num_key_value_heads = cfg.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, self.hidden_size, bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, cfg.max_position_embeddings, cfg.rope_theta)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads,
                                                     self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads,
                                                       self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, seq_len=key_states.shape[-2])
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin, position_ids)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / (self.head_dim ** 0.5)
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.self_attn = LlamaAttention(cfg)
        self.mlp = LlamaMLP(cfg)
        self.input_layernorm = LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, attention_mask, position_ids):
        hidden_states = hidden_states + self.self_attn(self.input_layernorm(hidden_states), attention_mask,
                                                       position_ids)
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


def make_causal_mask(bsz: int, tgt_len: int, dtype: torch.dtype, device) -> torch.Tensor:
    """transformers 4.30's `_make_causal_mask` without a past: [B, 1, T, T], 0 on and below the diagonal and
    the dtype's minimum above."""
    mask = torch.full((tgt_len, tgt_len), torch.tensor(torch.finfo(dtype).min, device=device), device=device)
    mask_cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)


class LlamaModel(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(cfg) for _ in range(cfg.num_hidden_layers)])
        self.norm = LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        batch_size, seq_length = input_ids.shape
        position_ids = torch.arange(0, seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).view(-1, seq_length)
        hidden_states = self.embed_tokens(input_ids)
        attention_mask = make_causal_mask(batch_size, seq_length, hidden_states.dtype, input_ids.device)
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask, position_ids)
        return self.norm(hidden_states)


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg: LlamaConfig = LlamaConfig(), seed: int = 0):
        super().__init__()
        self.cfg = cfg
        self.model = LlamaModel(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            p.copy_(1.0 + 0.1 * noise if "norm" in name else 0.02 * noise)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.model(input_ids))
