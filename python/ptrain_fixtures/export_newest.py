#!/usr/bin/env python3
"""Generates the importer fixtures for ONNX opsets 18-23 and their reference outputs.

The models are built with onnx.helper from PyPI onnx (python/requirements-test.txt; Debian's onnx 1.12 knows
opsets <= 17 only) and their reference outputs are computed by onnxruntime, each cross-checked against
onnx.reference (the ONNX specification's own Python implementation) to 1e-5. PyPI torch is multi-GB with its
CUDA wheels, so the LLaMA-style model is written directly as an opset-23 graph here, with the operators the
newest exporters emit (RMSNormalization, RotaryEmbedding, Attention with grouped-query heads, a SwiGLU MLP
with Sigmoid).

Usage: PYTHONPATH=python .venv/bin/python -m ptrain_fixtures.export_newest [--out test/Import/ONNX/opset18+/Inputs]
Every file is a pure function of the seeds below: rerunning reproduces the committed bytes.
"""
import argparse
import os

import numpy as np
import onnx
import onnx.reference
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from ptrain_fixtures import llama_reference

F = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(nodes, inputs, outputs, initializers, opset, name):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ptrain-export-newest")
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    return m


def reference_outputs(m, feeds):
    """onnxruntime's outputs, checked against onnx.reference."""
    session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    ort = session.run(None, feeds)
    ref = onnx.reference.ReferenceEvaluator(m).run(None, feeds)
    for out, a, b in zip(m.graph.output, ort, ref):
        err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
        assert err < 1e-5, f"{m.graph.name}: output {out.name}: onnxruntime and onnx.reference differ by {err}"
    return ort


def save(out_dir, name, m, feeds):
    outputs = reference_outputs(m, feeds)
    onnx.save_model(m, os.path.join(out_dir, f"{name}.onnx"))
    for i, inp in enumerate(m.graph.input):
        with open(os.path.join(out_dir, f"{name}.input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[inp.name], inp.name).SerializeToString())
    for i, (out, value) in enumerate(zip(m.graph.output, outputs)):
        with open(os.path.join(out_dir, f"{name}.output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, out.name).SerializeToString())
    print(f"{name}.onnx: {os.path.getsize(os.path.join(out_dir, name + '.onnx'))} bytes, "
          f"{len(outputs)} reference output(s)")
    return outputs


def opset18_ops(rng):
    """Split-18 num_outputs (uneven), ReduceMean/ReduceMax-18 with axes inputs, Gelu-20, Sigmoid."""
    x = rng.standard_normal((2, 7, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b", "c"], name="split_uneven", axis=1, num_outputs=3),
        helper.make_node("Split", ["x", "sizes"], ["d", "e"], name="split_sizes", axis=-1),
        helper.make_node("ReduceMean", ["x", "axes_last"], ["mean"], name="mean18", keepdims=1),
        helper.make_node("ReduceMax", ["x", "axes_1"], ["max"], name="max18", keepdims=0),
        helper.make_node("Gelu", ["x"], ["gelu"], name="gelu_erf"),
        helper.make_node("Gelu", ["x"], ["gelu_tanh"], name="gelu_tanh", approximate="tanh"),
        helper.make_node("Sigmoid", ["x"], ["sigmoid"], name="sigmoid"),
    ]
    outs = [vi("a", F, [2, 3, 6]), vi("c", F, [2, 1, 6]), vi("e", F, [2, 7, 4]), vi("mean", F, [2, 7, 1]),
            vi("max", F, [2, 6]), vi("gelu", F, [2, 7, 6]), vi("gelu_tanh", F, [2, 7, 6]), vi("sigmoid", F, [2, 7, 6])]
    inits = [init("sizes", np.array([2, 4], np.int64)), init("axes_last", np.array([-1], np.int64)),
             init("axes_1", np.array([1], np.int64))]
    return model(nodes, [vi("x", F, [2, 7, 6])], outs, inits, 20, "opset18_ops"), {"x": x}


def rms_norm(rng):
    """RMSNormalization-23 over the last axis, over two axes, and with a scale that broadcasts."""
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    nodes = [
        helper.make_node("RMSNormalization", ["x", "g_last"], ["y_last"], name="rms_last", epsilon=1e-6),
        helper.make_node("RMSNormalization", ["x", "g_two"], ["y_two"], name="rms_two_axes", axis=1),
        helper.make_node("RMSNormalization", ["x", "g_bcast"], ["y_bcast"], name="rms_broadcast_scale", axis=-2),
    ]
    inits = [init("g_last", (1 + 0.1 * rng.standard_normal(16)).astype(np.float32)),
             init("g_two", (1 + 0.1 * rng.standard_normal((5, 16))).astype(np.float32)),
             init("g_bcast", (1 + 0.1 * rng.standard_normal((1, 16))).astype(np.float32))]
    outs = [vi(n, F, [2, 5, 16]) for n in ("y_last", "y_two", "y_bcast")]
    return model(nodes, [vi("x", F, [2, 5, 16])], outs, inits, 23, "rms_norm"), {"x": x}


def rope_cache(positions, rotated):
    inv = 1.0 / (10000.0 ** (np.arange(0, rotated, 2, dtype=np.float64) / rotated))
    angles = np.outer(np.arange(positions, dtype=np.float64), inv)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rotary(rng):
    """RotaryEmbedding-23: 4-D with position_ids, 3-D interleaved (num_heads), partial rotation, and caches
    already per position (no position_ids)."""
    x4 = rng.standard_normal((2, 4, 6, 8)).astype(np.float32)
    x3 = rng.standard_normal((2, 6, 32)).astype(np.float32)
    pos = np.array([[0, 1, 2, 3, 4, 5], [3, 4, 5, 6, 7, 8]], np.int64)
    cos8, sin8 = rope_cache(10, 8)
    cos4, sin4 = rope_cache(10, 4)
    cos_b, sin_b = cos8[pos], sin8[pos]
    nodes = [
        helper.make_node("RotaryEmbedding", ["x4", "cos8", "sin8", "position_ids"], ["y4"], name="rope_4d"),
        helper.make_node("RotaryEmbedding", ["x3", "cos8", "sin8", "position_ids"], ["y3"], name="rope_3d_interleaved",
                         num_heads=4, interleaved=1),
        helper.make_node("RotaryEmbedding", ["x4", "cos4", "sin4", "position_ids"], ["y_partial"], name="rope_partial",
                         rotary_embedding_dim=4),
        helper.make_node("RotaryEmbedding", ["x4", "cos_b", "sin_b"], ["y_cached"], name="rope_no_position_ids"),
    ]
    inits = [init("cos8", cos8), init("sin8", sin8), init("cos4", cos4), init("sin4", sin4),
             init("cos_b", cos_b), init("sin_b", sin_b)]
    inputs = [vi("x4", F, [2, 4, 6, 8]), vi("x3", F, [2, 6, 32]), vi("position_ids", I64, [2, 6])]
    outs = [vi("y4", F, [2, 4, 6, 8]), vi("y3", F, [2, 6, 32]), vi("y_partial", F, [2, 4, 6, 8]),
            vi("y_cached", F, [2, 4, 6, 8])]
    return model(nodes, inputs, outs, inits, 23, "rotary"), {"x4": x4, "x3": x3, "position_ids": pos}


def attention(rng):
    """Attention-23: 4-D multi-head with a boolean mask; 3-D grouped-query (4 query heads, 2 kv heads) causal
    with present_key/present_value; multi-query cross attention with a float mask, scale and softcap."""
    q = rng.standard_normal((2, 4, 6, 8)).astype(np.float32)
    k = rng.standard_normal((2, 4, 6, 8)).astype(np.float32)
    v = rng.standard_normal((2, 4, 6, 8)).astype(np.float32)
    mask = rng.random((2, 1, 6, 6)) < 0.7
    mask[..., np.arange(6), np.arange(6)] = True
    q3 = rng.standard_normal((2, 6, 32)).astype(np.float32)
    k3 = rng.standard_normal((2, 6, 16)).astype(np.float32)
    v3 = rng.standard_normal((2, 6, 16)).astype(np.float32)
    kx = rng.standard_normal((2, 1, 5, 8)).astype(np.float32)
    vx = rng.standard_normal((2, 1, 5, 4)).astype(np.float32)
    fmask = (0.5 * rng.standard_normal((6, 5))).astype(np.float32)
    nodes = [
        helper.make_node("Attention", ["q", "k", "v", "mask"], ["y_mha"], name="attention_mha_bool_mask"),
        helper.make_node("Attention", ["q3", "k3", "v3"], ["y_gqa", "present_key", "present_value"],
                         name="attention_gqa_causal", q_num_heads=4, kv_num_heads=2, is_causal=1),
        helper.make_node("Attention", ["q", "kx", "vx", "fmask"], ["y_mqa"], name="attention_mqa_softcap",
                         scale=0.25, softcap=2.0),
    ]
    inputs = [vi("q", F, [2, 4, 6, 8]), vi("k", F, [2, 4, 6, 8]), vi("v", F, [2, 4, 6, 8]), vi("mask", BOOL, [2, 1, 6, 6]),
              vi("q3", F, [2, 6, 32]), vi("k3", F, [2, 6, 16]), vi("v3", F, [2, 6, 16]), vi("kx", F, [2, 1, 5, 8]),
              vi("vx", F, [2, 1, 5, 4])]
    outs = [vi("y_mha", F, [2, 4, 6, 8]), vi("y_gqa", F, [2, 6, 32]), vi("present_key", F, [2, 2, 6, 8]),
            vi("present_value", F, [2, 2, 6, 8]), vi("y_mqa", F, [2, 4, 6, 4])]
    feeds = {"q": q, "k": k, "v": v, "mask": mask, "q3": q3, "k3": k3, "v3": v3, "kx": kx, "vx": vx}
    return model(nodes, inputs, outs, [init("fmask", fmask)], 23, "attention"), feeds


# The LLaMA-style model's shape: 2 layers, hidden 64, 4 query heads and 2 kv heads of 16, SwiGLU 128,
# vocabulary 128, sequences of 16.
def reductions(rng, opset):
    """ReduceMin and ReduceProd at `opset` (13: axes attribute, 18: axes input), with keepdims 0 and 1, all
    axes, a minimum tied twice, and a product over a zero; ReduceMax beside them."""
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    x[1, :, 2] = [0.5, -1.5, 2.0, -1.5, 1.0]  # a tied minimum
    x[0, 3, 1] = 0.0  # a product through a zero
    def axes(name, values, **attrs):
        if opset >= 18:
            return [name], attrs
        return [], dict(attrs, axes=values)
    nodes, inits = [], []
    for op, out, name, values, keepdims in [("ReduceMin", "min_1", "axes_1", [1], 0),
                                            ("ReduceMin", "min_02", "axes_02", [0, -1], 1),
                                            ("ReduceProd", "prod_1", "axes_1", [1], 1),
                                            ("ReduceProd", "prod_2", "axes_2", [-1], 0),
                                            ("ReduceMax", "max_1", "axes_1", [1], 0)]:
        extra, attrs = axes(name, values, keepdims=keepdims)
        nodes.append(helper.make_node(op, ["x"] + extra, [out], name=out, **attrs))
        if extra and name not in [t.name for t in inits]:
            inits.append(init(name, np.array(values, np.int64)))
    nodes.append(helper.make_node("ReduceProd", ["x"], ["prod_all"], name="prod_all", keepdims=0))
    outs = [vi("min_1", F, [2, 3]), vi("min_02", F, [1, 5, 1]), vi("prod_1", F, [2, 1, 3]), vi("prod_2", F, [2, 5]),
            vi("max_1", F, [2, 3]), vi("prod_all", F, [])]
    return model(nodes, [vi("x", F, [2, 5, 3])], outs, inits, opset, f"reductions{opset}"), {"x": x}


def reductions13(rng):
    return reductions(rng, 13)


def reductions18(rng):
    return reductions(rng, 18)


LLAMA = dict(layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=128, seq=16, batch=2, eps=1e-5)


def llama_tiny(rng, unfused=False, layers=None, **shape):
    """A LLaMA-style decoder (Touvron et al., 2023): token embedding, pre-norm RMSNorm, rotary q/k,
    grouped-query causal attention, SwiGLU MLP (silu(x W_gate) * x W_up) W_down, final RMSNorm, LM head.

    unfused: the same model (same seed, same weights) at opset 17, as exporters write it below opset 23 (Hugging
    Face LlamaForCausalLM through the TorchScript exporter): RMSNorm as x * 1/sqrt(mean(x^2) + eps) * w, rotary
    embeddings in the rotate-half form x * cos + rotate_half(x) * sin with cos = cat(c, c) gathered by position,
    attention as MatMul/Softmax with K and V repeated per query head (Expand) and a Where causal mask.

    layers: another depth (llama_tiny_4l, 4 layers: pipeline plans with pp = 4 and interleaved stages);
    shape: other LLAMA entries (llama_tiny_8l: 8 layers of hidden 32 and SwiGLU 64, for interleaved pp = 4 x
    v = 2 with one layer per virtual stage, under 1 MB)."""
    c = LLAMA if layers is None else dict(LLAMA, layers=layers, **shape)
    h, hd, kvh = c["hidden"], c["hidden"] // c["heads"], c["kv_heads"]
    inits, nodes = [], []

    def weight(name, shape, std=0.02):
        inits.append(init(name, (std * rng.standard_normal(shape)).astype(np.float32)))
        return name

    def norm_weight(name):
        inits.append(init(name, (1 + 0.1 * rng.standard_normal(h)).astype(np.float32)))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def const(name, array):
        nodes.append(helper.make_node("Constant", [], [name], name=name, value=init(name, array)))
        return name

    def rms_norm(x, w, out):
        if not unfused:
            return node("RMSNormalization", [x, w], out, epsilon=c["eps"])
        square = node("Pow", [x, const(out + "/two", np.float32(2))], out + "/Pow")
        mean = node("ReduceMean", [square], out + "/ReduceMean", axes=[-1], keepdims=1)
        std = node("Sqrt", [node("Add", [mean, const(out + "/eps", np.float32(c["eps"]))], out + "/Add")], out + "/Sqrt")
        normed = node("Mul", [x, node("Reciprocal", [std], out + "/Reciprocal")], out + "/Mul")
        return node("Mul", [w, normed], out)

    def heads_first(x, heads, out):  # [B, S, heads * hd] -> [B, heads, S, hd]
        shape = const(out + "/shape", np.array([c["batch"], c["seq"], heads, hd], np.int64))
        return node("Transpose", [node("Reshape", [x, shape], out + "/Reshape")], out, perm=[0, 2, 1, 3])

    def rotate_half(x, out):  # cat(-x[..., hd/2:], x[..., :hd/2])
        half, last = const(out + "/half", np.array([hd // 2], np.int64)), const(out + "/axis", np.array([-1], np.int64))
        x1 = node("Slice", [x, const(out + "/zero", np.array([0], np.int64)), half, last], out + "/Slice")
        x2 = node("Slice", [x, half, const(out + "/end", np.array([hd], np.int64)), last], out + "/Slice_1")
        return node("Concat", [node("Neg", [x2], out + "/Neg"), x1], out, axis=-1)

    def rotary(x, heads, out):
        if not unfused:
            return node("RotaryEmbedding", [x, "rope.cos", "rope.sin", "position_ids"], out, num_heads=heads)
        x = heads_first(x, heads, out + "/heads")
        rotated = node("Mul", [rotate_half(x, out + "/rotate_half"), "rope/sin_full"], out + "/Mul_1")
        return node("Add", [node("Mul", [x, "rope/cos_full"], out + "/Mul"), rotated], out)

    def repeat_kv(x, out):  # [B, kvh, S, hd] -> [B, heads, S, hd]: each kv head repeated for its query heads
        b, s, rep = c["batch"], c["seq"], c["heads"] // kvh
        x = node("Reshape", [x, const(out + "/shape5", np.array([b, kvh, 1, s, hd], np.int64))], out + "/Unsqueeze")
        x = node("Expand", [x, const(out + "/expand", np.array([b, kvh, rep, s, hd], np.int64))], out + "/Expand")
        return node("Reshape", [x, const(out + "/shape4", np.array([b, c["heads"], s, hd], np.int64))], out)

    def attention(q, k, v, out):
        if not unfused:
            return node("Attention", [q, k, v], out, q_num_heads=c["heads"], kv_num_heads=kvh, is_causal=1)
        k, v = repeat_kv(k, out + "/repeat_k"), repeat_kv(heads_first(v, kvh, out + "/v_heads"), out + "/repeat_v")
        scores = node("MatMul", [q, node("Transpose", [k], out + "/k_t", perm=[0, 1, 3, 2])], out + "/MatMul")
        scores = node("Mul", [scores, const(out + "/scale", np.float32(1 / np.sqrt(hd)))], out + "/Mul")
        causal = np.tril(np.ones((c["seq"], c["seq"]), bool))
        scores = node("Where", [const(out + "/causal", causal), scores, const(out + "/neg_inf", np.float32(-np.inf))],
                      out + "/Where")
        ctx = node("MatMul", [node("Softmax", [scores], out + "/Softmax", axis=-1), v], out + "/MatMul_1")
        ctx = node("Transpose", [ctx], out + "/Transpose", perm=[0, 2, 1, 3])
        return node("Reshape", [ctx, const(out + "/merge", np.array([c["batch"], c["seq"], h], np.int64))], out)

    cos, sin = rope_cache(c["seq"], hd)
    inits += [init("rope.cos", cos), init("rope.sin", sin)]
    if unfused:  # Hugging Face's cos = cat(freqs, freqs).cos(), gathered by position and given a heads axis
        for table in ("cos", "sin"):
            half = node("Gather", ["rope." + table, "position_ids"], f"rope/{table}")
            full = node("Concat", [half, half], f"rope/{table}_cat", axis=-1)
            node("Unsqueeze", [full, const(f"rope/{table}_axes", np.array([1], np.int64))], f"rope/{table}_full")
    x = node("Gather", [weight("embed_tokens.weight", (c["vocab"], h), 1.0), "input_ids"], "embed")
    for i in range(c["layers"]):
        p = f"layers.{i}."
        n = rms_norm(x, norm_weight(p + "input_layernorm.weight"), p + "attn_norm")
        q = node("MatMul", [n, weight(p + "q_proj.weight", (h, h))], p + "q")
        k = node("MatMul", [n, weight(p + "k_proj.weight", (h, kvh * hd))], p + "k")
        v = node("MatMul", [n, weight(p + "v_proj.weight", (h, kvh * hd))], p + "v")
        q = rotary(q, c["heads"], p + "q_rope")
        k = rotary(k, kvh, p + "k_rope")
        a = attention(q, k, v, p + "attn")
        o = node("MatMul", [a, weight(p + "o_proj.weight", (h, h))], p + "o")
        x = node("Add", [x, o], p + "attn_residual")
        n = rms_norm(x, norm_weight(p + "post_attention_layernorm.weight"), p + "mlp_norm")
        gate = node("MatMul", [n, weight(p + "gate_proj.weight", (h, c["ffn"]))], p + "gate")
        silu = node("Mul", [gate, node("Sigmoid", [gate], p + "gate_sigmoid")], p + "silu")
        up = node("MatMul", [n, weight(p + "up_proj.weight", (h, c["ffn"]))], p + "up")
        down = node("MatMul", [node("Mul", [silu, up], p + "swiglu"), weight(p + "down_proj.weight", (c["ffn"], h))],
                    p + "down")
        x = node("Add", [x, down], p + "mlp_residual")
    n = rms_norm(x, norm_weight("norm.weight"), "final_norm")
    node("MatMul", [n, weight("lm_head.weight", (h, c["vocab"]))], "logits")
    b, s = c["batch"], c["seq"]
    inputs = [vi("input_ids", I64, [b, s]), vi("position_ids", I64, [b, s])]
    name = "llama_tiny_unfused" if unfused else "llama_tiny" if layers is None else f"llama_tiny_{layers}l"
    m = model(nodes, inputs, [vi("logits", F, [b, s, c["vocab"]])], inits, 17 if unfused else 23, name)
    ids = rng.integers(0, c["vocab"], (b, s)).astype(np.int64)
    pos = np.tile(np.arange(s, dtype=np.int64), (b, 1))
    return m, {"input_ids": ids, "position_ids": pos}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "test", "Import", "ONNX",
                                                      "opset18+", "Inputs"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for seed, build in enumerate([opset18_ops, rms_norm, rotary, attention, llama_tiny, reductions13, reductions18]):
        m, feeds = build(np.random.default_rng(seed))
        outputs = save(args.out, m.graph.name, m, feeds)
        if build is llama_tiny:
            llama_gradients(args.out, m, feeds, outputs[0])
            llama_outputs = outputs
    # The same model (seed 4, the same weights) unfused at opset 17: onnxruntime gives the fused logits.
    unfused, unfused_feeds = llama_tiny(np.random.default_rng(4), unfused=True)
    unfused_logits = save(args.out, unfused.graph.name, unfused, unfused_feeds)[0]
    err = float(np.max(np.abs(unfused_logits - llama_outputs[0])))
    assert err < 1e-5, f"unfused LLaMA logits differ from the fused model's by {err}"
    print(f"llama_tiny_unfused: logits vs the fused model {err:.2e}")
    # Four layers (seed 7) for the pipeline plans with one layer per stage (unittests/Interpreter/LlamaPlanTest.cpp).
    deep, deep_feeds = llama_tiny(np.random.default_rng(7), layers=4)
    save(args.out, deep.graph.name, deep, deep_feeds)
    # Eight narrower layers (seed 8): interleaved pp = 4 x v = 2, one layer per virtual stage.
    deeper, deeper_feeds = llama_tiny(np.random.default_rng(8), layers=8, hidden=32, ffn=64)
    save(args.out, deeper.graph.name, deeper, deeper_feeds)


def llama_gradients(out_dir, m, feeds, ort_logits):
    """The next-token loss and every parameter's gradient of the LLaMA-style model from the independent
    float64 numpy model (llama_reference.py), checked against onnxruntime's logits and finite differences."""
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    ids, pos = feeds["input_ids"], feeds["position_ids"]
    loss, logits, grads = llama_reference.loss_and_gradients(weights, ids, pos, LLAMA)
    err = float(np.max(np.abs(logits - ort_logits)))
    assert err < 1e-4, f"numpy LLaMA logits differ from onnxruntime by {err}"
    worst = llama_reference.check_gradients(weights, ids, pos, LLAMA, np.random.default_rng(99))
    assert worst < 1e-5, f"numpy LLaMA gradients differ from finite differences by {worst} (relative)"
    grad_inits = [init(k, g.astype(np.float32)) for k, g in sorted(grads.items())]
    graph = helper.make_graph([], "llama_tiny_reference_grads", [], [], grad_inits)
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)]),
                    os.path.join(out_dir, "llama_tiny.reference_grads.onnx"))
    with open(os.path.join(out_dir, "llama_tiny.reference_loss.txt"), "w") as f:
        f.write(f"{loss:.9f}\n")
    print(f"llama_tiny: numpy vs onnxruntime logits {err:.2e}; next-token loss {loss:.9f}; "
          f"gradients vs finite differences {worst:.2e} (relative, worst of 24 entries)")


if __name__ == "__main__":
    main()
