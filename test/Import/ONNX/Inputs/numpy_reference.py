#!/usr/bin/env python3
"""An independent numpy evaluation of an ONNX graph, to check ptrain's import + interpreter on real exports
for which no onnxruntime reference ships (this machine's Python has onnx 1.12 and numpy only).

Usage: numpy_reference.py MODEL.onnx OUTDIR name=size,...
Writes OUTDIR/input_<i>.pb (one per graph input that is not an initializer) and OUTDIR/output_<i>.pb. Inputs
are chosen per name: *ids* integer ids in range of the table they index, position ids 0..S-1, masks ones
(4-D masks: a lower-triangular causal mask), past_* zero-size tensors. Only the ops of
gpt2_megatron.onnx and bert_toy_optimized.onnx are implemented, each from the ONNX operator definitions.
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def run(graph, env):
    erf = np.vectorize(math.erf)
    pending = list(graph.node)
    while pending:  # bert_toy_optimized.onnx is not topologically sorted.
        progress = False
        for node in list(pending):
            if not all(i in env for i in node.input if i):
                continue
            a, x = attrs(node), [env[i] for i in node.input if i]
            op = node.op_type
            if op == "Constant":
                y = [numpy_helper.to_array(a["value"])]
            elif op in ("Add", "Sub", "Mul", "Div", "Pow", "Min"):
                f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
                     "Min": np.minimum}[op]
                y = [f(x[0], x[1]).astype(x[0].dtype)]
            elif op in ("Sqrt", "Tanh", "Erf"):
                y = [{"Sqrt": np.sqrt, "Tanh": np.tanh, "Erf": erf}[op](x[0]).astype(x[0].dtype)]
            elif op == "Cast":
                y = [x[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])]
            elif op == "ReduceMean":
                y = [x[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1))).astype(x[0].dtype)]
            elif op == "MatMul":
                y = [np.matmul(x[0], x[1])]
            elif op == "Gemm":
                b = x[1].T if a.get("transB", 0) else x[1]
                y = [a.get("alpha", 1.0) * (x[0] @ b) + a.get("beta", 1.0) * x[2]]
            elif op == "Gather":
                y = [np.take(x[0], x[1], axis=a.get("axis", 0))]
            elif op == "Split":
                cuts = np.cumsum(a["split"])[:-1]
                y = np.split(x[0], cuts, axis=a.get("axis", 0))
            elif op == "Shape":
                y = [np.array(x[0].shape, dtype=np.int64)]
            elif op == "Unsqueeze":
                y = [np.expand_dims(x[0], tuple(a["axes"]))]
            elif op == "Squeeze":
                y = [np.squeeze(x[0], tuple(a["axes"]))]
            elif op == "Concat":
                y = [np.concatenate(x, axis=a["axis"])]
            elif op == "Reshape":
                shape = [x[0].shape[i] if d == 0 else d for i, d in enumerate(x[1])]
                y = [x[0].reshape(shape)]
            elif op == "Transpose":
                y = [np.transpose(x[0], a["perm"])]
            elif op == "Expand":
                y = [x[0] * np.ones(x[1], dtype=x[0].dtype)]
            elif op == "Slice":
                index = [slice(None)] * x[0].ndim
                axes = x[3] if len(x) > 3 else range(len(x[1]))
                steps = x[4] if len(x) > 4 else [1] * len(x[1])
                for s, e, ax, st in zip(x[1], x[2], axes, steps):
                    index[ax] = slice(int(s), int(e), int(st))
                y = [x[0][tuple(index)]]
            elif op == "Softmax":
                z = x[0] - x[0].max(axis=a["axis"], keepdims=True)
                e = np.exp(z)
                y = [(e / e.sum(axis=a["axis"], keepdims=True)).astype(x[0].dtype)]
            else:
                raise SystemExit("numpy_reference: no rule for " + op)
            for name, value in zip(node.output, y):
                env[name] = np.asarray(value)
            pending.remove(node)
            progress = True
        if not progress:
            raise SystemExit("numpy_reference: the graph has a cycle or an undefined input")


def main():
    model_path, outdir, binds = sys.argv[1], sys.argv[2], sys.argv[3]
    sizes = dict((k, int(v)) for k, v in (b.split("=") for b in binds.split(",")))
    model = onnx.load(model_path)
    graph = model.graph
    env = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    rng = np.random.default_rng(0)
    os.makedirs(outdir, exist_ok=True)
    inputs = [i for i in graph.input if i.name not in env]
    for index, info in enumerate(inputs):
        t = info.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else sizes[d.dim_param] for d in t.shape.dim]
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.elem_type]
        name = info.name
        if "position" in name:
            value = np.broadcast_to(np.arange(shape[1]), shape)
        elif "mask" in name and len(shape) == 4:
            value = np.broadcast_to(np.tril(np.ones(shape[-2:])), shape)
        elif "mask" in name:
            value = np.ones(shape)
        elif "past" in name:
            value = np.zeros(shape)
        elif "token_type" in name:
            value = rng.integers(0, 2, size=shape)
        else:  # token ids: in range of every table they index (the smallest vocabulary in the graph).
            vocab = min(v.shape[0] for k, v in env.items() if "embeddings" in k and v.ndim == 2)
            value = rng.integers(0, vocab, size=shape)
        env[name] = np.ascontiguousarray(value.astype(dtype))
        onnx.save_tensor(numpy_helper.from_array(env[name], name), os.path.join(outdir, "input_%d.pb" % index))
    run(graph, env)
    for index, info in enumerate(graph.output):
        onnx.save_tensor(numpy_helper.from_array(env[info.name], info.name),
                         os.path.join(outdir, "output_%d.pb" % index))


if __name__ == "__main__":
    main()
