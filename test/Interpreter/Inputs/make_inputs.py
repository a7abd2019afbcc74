#!/usr/bin/env python3
"""Writes the ONNX inputs of test/Interpreter (deterministic; rerun with /usr/bin/python3 and commit the output).

  /usr/bin/python3 test/Interpreter/Inputs/make_inputs.py

linear.onnx         y = x @ w + b with initializers `w` (float_data, 3x2) and `b` (raw_data, 2), inline
linear_*.pb         input x [2,3] f32, expected y [2,2] f32, and a wrongly shaped input x [3,3]
attention.onnx      initializers of a one-layer attention block, all as EXTERNAL data in attention.onnx.data
attention_*.pb      input ids / labels [1,4] i64; expected logits [1,4,8] f32 and loss [] f32, computed below
                    with numpy in float32, one rounding per op like the interpreter (see attention.mlir for
                    the same graph in ptrain ops)
"""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
f32 = np.float32


def save_pb(array, name, path):
    with open(os.path.join(HERE, path), "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def linear():
    w = np.array([[1.0, -2.0], [0.5, 0.25], [-1.5, 3.0]], dtype=f32)
    b = np.array([0.125, -0.75], dtype=f32)
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]], dtype=f32)
    w_init = helper.make_tensor("w", TensorProto.FLOAT, [3, 2], w.flatten().tolist())  # float_data
    b_init = numpy_helper.from_array(b, "b")  # raw_data
    assert w_init.float_data and b_init.raw_data
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        [w_init, b_init],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(HERE, "linear.onnx"))
    save_pb(x, "x", "linear_input.pb")
    save_pb((x @ w + b).astype(f32), "y", "linear_output.pb")
    save_pb(np.zeros((3, 3), dtype=f32), "x", "linear_bad_input.pb")


def gelu_erf(x):
    return (x.astype(np.float64) * 0.5 * (1.0 + np.vectorize(math.erf)(x.astype(np.float64) / math.sqrt(2.0)))).astype(f32)


def gelu_tanh(x):
    y = x.astype(np.float64)
    return (0.5 * y * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * y**3)))).astype(f32)


def layer_norm(x, g, b, eps=1e-5):
    y = x.astype(np.float64)
    mean = y.mean(-1, keepdims=True)
    var = ((y - mean) ** 2).mean(-1, keepdims=True)
    return ((y - mean) / np.sqrt(var + eps) * g + b).astype(f32)


def softmax(x):
    y = x.astype(np.float64)
    e = np.exp(y - y.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(f32)


def matmul(a, b):
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(f32)


def attention():
    rng = np.random.default_rng(0)
    V, H, NH, HD, T = 8, 8, 2, 4, 4
    wte = rng.standard_normal((V, H)).astype(f32)
    ln_g = (1.0 + 0.1 * rng.standard_normal(H)).astype(f32)
    ln_b = (0.1 * rng.standard_normal(H)).astype(f32)
    wqkv = (0.5 * rng.standard_normal((H, 3 * H))).astype(f32)
    bqkv = (0.1 * rng.standard_normal(3 * H)).astype(f32)
    ids = np.array([[3, 1, 4, 1]], dtype=np.int64)
    labels = np.array([[1, 4, 1, 5]], dtype=np.int64)

    x = wte[ids]                                             # embedding        [1,4,8]
    h = layer_norm(x, ln_g, ln_b)                            # layer_norm
    qkv = (matmul(h, wqkv) + bqkv).astype(f32)               # matmul, add      [1,4,24]
    q, k, v = np.split(qkv, 3, axis=2)                       # split            3 x [1,4,8]
    heads = lambda t: t.reshape(1, T, NH, HD)                # reshape          [1,4,2,4]
    qt = heads(q).transpose(0, 2, 1, 3)                      # transpose        [1,2,4,4]
    kt = heads(k).transpose(0, 2, 3, 1)                      #                  [1,2,4(hd),4(t)]
    vt = heads(v).transpose(0, 2, 1, 3)
    s = (matmul(qt, kt) * f32(0.5)).astype(f32)              # matmul, mul by 1/sqrt(HD)
    mask = np.triu(np.full((T, T), -np.inf, dtype=f32), 1)
    p = softmax((s + mask).astype(f32))                      # add mask, softmax
    o = matmul(p, vt).transpose(0, 2, 1, 3).reshape(1, T, H)  # matmul, transpose, reshape
    r = (x + o).astype(f32)                                  # residual add
    m = gelu_tanh(gelu_erf(r))                               # gelu none, gelu tanh
    logits = matmul(m, wte.T)                                # tied head: transpose, matmul [1,4,8]
    lg = logits.astype(np.float64).reshape(-1, V)
    lse = np.log(np.exp(lg - lg.max(-1, keepdims=True)).sum(-1)) + lg.max(-1)
    loss = f32((lse - lg[np.arange(T), labels.reshape(-1)]).mean())

    inits = [numpy_helper.from_array(a, n) for a, n in
             [(wte, "wte.weight"), (ln_g, "ln.weight"), (ln_b, "ln.bias"), (wqkv, "attn.qkv.weight"),
              (bqkv, "attn.qkv.bias")]]
    graph = helper.make_graph([helper.make_node("Gather", ["wte.weight", "ids"], ["x"])], "attention",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, T])],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(HERE, "attention.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="attention.onnx.data", size_threshold=0)
    save_pb(ids, "ids", "attention_ids.pb")
    save_pb(labels, "labels", "attention_labels.pb")
    save_pb(logits, "logits", "attention_logits.pb")
    save_pb(np.array(loss, dtype=f32), "loss", "attention_loss.pb")
    # A labels file with a class id out of range, for the error test.
    save_pb(np.array([[1, 4, 8, 5]], dtype=np.int64), "labels", "attention_bad_labels.pb")
    print("attention: max|logits| = %.6e, loss = %.8f" % (np.abs(logits).max(), loss))


if __name__ == "__main__":
    linear()
    attention()
