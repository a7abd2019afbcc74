"""An independent float64 numpy model of export_newest.py's LLaMA-style ONNX graph, with reverse-mode
gradients, for the importer's gradient check.

The forward is written from the ONNX operator definitions (RMSNormalization, RotaryEmbedding, Attention with
grouped-query heads and is_causal, SwiGLU) with a small tape autodiff over numpy primitives (gather, matmul,
add, mul, slice, concat, softmax, ...); none of ptrain's gradient rules is reused. `check_gradients` compares
the tape's gradients with central finite differences in float64.
"""
import numpy as np


class V:
    """A tape value: data and, after backward(), grad."""

    tape = []

    def __init__(self, data, parents=(), backward=None):
        self.data, self.parents, self.backward_fn, self.grad = np.asarray(data, np.float64), parents, backward, None
        V.tape.append(self)


def unbroadcast(g, shape):
    while g.ndim > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdims=True)
    return g


def op(data, parents, grads_fn):
    return V(data, parents, grads_fn)


def add(a, b):
    return op(a.data + b.data, (a, b), lambda g: (unbroadcast(g, a.data.shape), unbroadcast(g, b.data.shape)))


def mul(a, b):
    return op(a.data * b.data, (a, b),
              lambda g: (unbroadcast(g * b.data, a.data.shape), unbroadcast(g * a.data, b.data.shape)))


def matmul(a, b):
    return op(a.data @ b.data, (a, b),
              lambda g: (unbroadcast(g @ np.swapaxes(b.data, -1, -2), a.data.shape),
                         unbroadcast(np.swapaxes(a.data, -1, -2) @ g, b.data.shape)))


def sigmoid(a):
    s = 1 / (1 + np.exp(-a.data))
    return op(s, (a,), lambda g: (g * s * (1 - s),))


def scale(a, c):
    return op(a.data * c, (a,), lambda g: (g * c,))


def mean_last(a):
    n = a.data.shape[-1]
    return op(a.data.mean(-1, keepdims=True), (a,), lambda g: (np.broadcast_to(g / n, a.data.shape),))


def rsqrt(a):
    y = a.data ** -0.5
    return op(y, (a,), lambda g: (-0.5 * g * y ** 3,))


def add_const(a, c):
    return op(a.data + c, (a,), lambda g: (g,))


def reshape(a, shape):
    return op(a.data.reshape(shape), (a,), lambda g: (g.reshape(a.data.shape),))


def transpose(a, perm):
    inv = np.argsort(perm)
    return op(a.data.transpose(perm), (a,), lambda g: (g.transpose(inv),))


def slice_last(a, lo, hi):
    def back(g):
        full = np.zeros_like(a.data)
        full[..., lo:hi] = g
        return (full,)
    return op(a.data[..., lo:hi], (a,), back)


def concat_last(a, b):
    n = a.data.shape[-1]
    return op(np.concatenate([a.data, b.data], -1), (a, b), lambda g: (g[..., :n], g[..., n:]))


def softmax_last(a):
    e = np.exp(a.data - a.data.max(-1, keepdims=True))
    y = e / e.sum(-1, keepdims=True)
    return op(y, (a,), lambda g: (y * (g - (g * y).sum(-1, keepdims=True)),))


def repeat_heads(a, groups):
    b, h, s, d = a.data.shape
    return op(np.repeat(a.data, groups, axis=1), (a,), lambda g: (g.reshape(b, h, groups, s, d).sum(2),))


def gather_rows(table, ids):
    def back(g):
        full = np.zeros_like(table.data)
        np.add.at(full, ids, g)
        return (full,)
    return op(table.data[ids], (table,), back)


def backward(loss):
    loss.grad = np.ones_like(loss.data)
    for v in reversed(V.tape):
        if v.grad is None or v.backward_fn is None:
            continue
        for p, g in zip(v.parents, v.backward_fn(v.grad)):
            p.grad = g if p.grad is None else p.grad + g


def rms_norm(x, w, eps):
    return mul(mul(x, rsqrt(add_const(mean_last(mul(x, x)), eps))), w)


def rope(x, cos, sin):
    """x [B, N, S, D]; cos/sin [B, 1, S, D/2] (constants): the half-split rotation of RotaryEmbedding-23."""
    h = x.data.shape[-1] // 2
    x1, x2 = slice_last(x, 0, h), slice_last(x, h, 2 * h)
    return concat_last(add(mul(x1, cos), scale(mul(x2, sin), -1.0)), add(mul(x2, cos), mul(x1, sin)))


def forward(weights, ids, positions, config):
    """Returns (logits V, params {name: V}); weights are float64 arrays by initializer name."""
    c = config
    b, s = ids.shape
    h, heads, kvh = c["hidden"], c["heads"], c["kv_heads"]
    hd = h // heads
    V.tape = []
    params = {k: V(w) for k, w in weights.items() if k not in ("rope.cos", "rope.sin")}
    cos = V(weights["rope.cos"][positions][:, None]), V(weights["rope.sin"][positions][:, None])
    causal = V(np.where(np.tril(np.ones((s, s), bool)), 0.0, -np.inf))

    def split_heads(t, n):
        return transpose(reshape(t, (b, s, n, hd)), (0, 2, 1, 3))

    x = gather_rows(params["embed_tokens.weight"], ids)
    for i in range(c["layers"]):
        p = f"layers.{i}."
        n = rms_norm(x, params[p + "input_layernorm.weight"], c["eps"])
        q = rope(split_heads(matmul(n, params[p + "q_proj.weight"]), heads), *cos)
        k = rope(split_heads(matmul(n, params[p + "k_proj.weight"]), kvh), *cos)
        v = split_heads(matmul(n, params[p + "v_proj.weight"]), kvh)
        k, v = repeat_heads(k, heads // kvh), repeat_heads(v, heads // kvh)
        scores = add(scale(matmul(q, transpose(k, (0, 1, 3, 2))), 1 / np.sqrt(hd)), causal)
        a = matmul(softmax_last(scores), v)
        a = reshape(transpose(a, (0, 2, 1, 3)), (b, s, h))
        x = add(x, matmul(a, params[p + "o_proj.weight"]))
        n = rms_norm(x, params[p + "post_attention_layernorm.weight"], c["eps"])
        gate = matmul(n, params[p + "gate_proj.weight"])
        up = matmul(n, params[p + "up_proj.weight"])
        x = add(x, matmul(mul(mul(gate, sigmoid(gate)), up), params[p + "down_proj.weight"]))
    n = rms_norm(x, params["norm.weight"], c["eps"])
    return matmul(n, params["lm_head.weight"]), params


def next_token_loss(logits, ids):
    """Mean cross-entropy of logits[:, :-1] against ids[:, 1:] (ptrain's training step without labels)."""
    z = logits.data[:, :-1]
    labels = ids[:, 1:]
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[..., 0]
    count = labels.size
    loss = (lse - np.take_along_axis(z, labels[..., None], -1)[..., 0]).mean()

    def back(g):
        p = np.exp(z - lse[..., None])
        np.put_along_axis(p, labels[..., None], np.take_along_axis(p, labels[..., None], -1) - 1, -1)
        full = np.zeros_like(logits.data)
        full[:, :-1] = g * p / count
        return (full,)
    return op(loss, (logits,), back)


def loss_and_gradients(weights, ids, positions, config):
    logits, params = forward(weights, ids, positions, config)
    loss = next_token_loss(logits, ids)
    backward(loss)
    grads = {k: (p.grad if p.grad is not None else np.zeros_like(p.data)) for k, p in params.items()}
    for k in ("rope.cos", "rope.sin"):
        grads[k] = np.zeros_like(weights[k])
    return float(loss.data), logits.data, grads


def check_gradients(weights, ids, positions, config, rng, samples=24, eps=1e-4):
    """Central finite differences of the loss at `samples` random entries; returns the worst relative error."""
    _, _, grads = loss_and_gradients(weights, ids, positions, config)
    worst = 0.0
    keys = [k for k in sorted(weights) if not k.startswith("rope.")]
    for _ in range(samples):
        key = keys[rng.integers(len(keys))]
        idx = tuple(rng.integers(n) for n in weights[key].shape)
        plus = {k: w.copy() for k, w in weights.items()}
        minus = {k: w.copy() for k, w in weights.items()}
        plus[key][idx] += eps
        minus[key][idx] -= eps
        numeric = (loss_and_gradients(plus, ids, positions, config)[0] -
                   loss_and_gradients(minus, ids, positions, config)[0]) / (2 * eps)
        worst = max(worst, abs(numeric - grads[key][idx]) / max(abs(numeric), 1e-6))
    return worst
