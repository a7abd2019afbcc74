"""tf2onnx's Keras GPT (python/ptrain_fixtures/export_tf2onnx.py) in plain PyTorch, for its autograd reference.

The Keras model (vocabulary V = 64, hidden D = 32, sequence T = 8, 2 pre-LN blocks, 2 heads of 16, MLP 4D with
the tanh GELU, a final LayerNorm and an LM head without bias; every Dense bias and LayerNorm bias zero, every
LayerNorm scale one) exactly as tf2onnx 1.17 left its weights in test/Import/ONNX/Inputs/tf2onnx/
gpt-tf2onnx-opset13.onnx, loaded from there: the token table, the position rows wpe[0:T] folded into one
[1, T, D] constant added to the lookup, the einsum kernels of MultiHeadAttention reshaped to [D, D] (columns head
major), the Dense kernels [in, out], and the zero biases folded away. tf2onnx merged the five equal LayerNorm
scales into one initializer and the biases into another: here one scale and one bias read by all five norms
(so their gradients are the sums, as ptrain's states of the merged initializers get). Keras' LayerNorm epsilon
1e-5; its causal mask as -1e9 on the masked scores (exp underflows to exactly 0 in float64, as Keras' masked
softmax gives).
"""
import onnx
import torch
from onnx import numpy_helper

PREFIX = "functional_1/"


class KerasGPT(torch.nn.Module):
    def __init__(self, path: str, layers: int = 2, heads: int = 2):
        super().__init__()
        inits = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
                 for t in onnx.load(path).graph.initializer}

        def param(name):
            return torch.nn.Parameter(inits[PREFIX + name].clone())

        self.heads = heads
        table = inits[PREFIX + "wte_1/GatherV2/ReadVariableOp:0"]
        self.wte = torch.nn.Embedding(*table.shape)
        self.wte.weight = torch.nn.Parameter(table.clone())
        self.pos = param("Add/y:0")  # wpe rows 0..T-1, [1, T, D]
        self.ln_scale = param("h1_ln_2_1/Reshape:0")  # the five norms' merged scale, [1, 1, D]
        self.ln_bias = param("h0_ln_1_1/Reshape_1:0")  # and bias
        self.blocks = torch.nn.ModuleList()
        for i in range(layers):
            block = torch.nn.Module()
            for role in ("query", "key", "value"):
                setattr(block, role, param(f"h{i}_attn_1/{role}_1/Reshape:0"))
            block.out = param(f"h{i}_attn_1/attention_output_1/Reshape_1:0")
            block.fc = param(f"h{i}_fc_1/Cast/ReadVariableOp:0")
            block.proj = param(f"h{i}_proj_1/Cast/ReadVariableOp:0")
            self.blocks.append(block)
        self.lm_head = param("lm_head_1/Cast/ReadVariableOp:0")

    def norm(self, x):
        d = x.shape[-1]
        return torch.nn.functional.layer_norm(x, (d,), self.ln_scale.reshape(d), self.ln_bias.reshape(d), eps=1e-5)

    def forward(self, ids):
        h = self.wte(ids) + self.pos
        b, t, d = h.shape
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
        for block in self.blocks:
            a = self.norm(h)
            q, k, v = (
                (a @ w).reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                for w in (block.query, block.key, block.value))
            scores = (q @ k.transpose(-1, -2)) / (d // self.heads) ** 0.5
            probs = torch.softmax(scores.masked_fill(~causal, -1e9), dim=-1)
            h = h + (probs @ v).transpose(1, 2).reshape(b, t, d) @ block.out
            m = torch.nn.functional.gelu(self.norm(h) @ block.fc, approximate="tanh")
            h = h + m @ block.proj
        return self.norm(h) @ self.lm_head
