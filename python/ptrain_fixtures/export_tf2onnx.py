#!/usr/bin/env python3
"""Export a small GPT-style Keras model with tf2onnx (issue 21 item 6: the table's tf2onnx row).

Not part of the project's environments: TensorFlow is big. In a throw-away venv (73 s on this machine):
    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu tf2onnx
    /tmp/tfvenv/bin/python python/ptrain_fixtures/export_tf2onnx.py [--out test/Import/ONNX/Inputs/tf2onnx]
(measured with tensorflow-cpu 2.21.0, keras 3.15.1, tf2onnx 1.17.0, onnx 1.23.2).

The model (keras.utils.set_random_seed(0), Keras' default initializers: LayerNorm scales ones and biases zeros,
Dense biases zeros): token and position Embeddings (vocabulary 64, hidden 32, sequence 8), 2 pre-LN blocks of
LayerNormalization, MultiHeadAttention (2 heads, key_dim 16, causal mask), residual, LayerNormalization,
Dense(128) with tanh GELU, Dense(32), residual, a final LayerNormalization and a Dense LM head without bias.
Keras' exact GELU uses Erfc, which tf2onnx 1.17 does not convert, hence the tanh form. Input input_ids int64
[2, 8]. tf2onnx freezes the variables into initializers, folds the position lookup into a [1, 8, 32] constant
and the zero biases away, merges the equal LayerNorm scales and biases, writes TensorFlow's moments as
GlobalAveragePool over the last axis, and wraps the token ids for negative indices (Less, Not, Cast, Mul, Add).
Writes OUT/gpt-tf2onnx-opset13.onnx, OUT/gpt-tf2onnx.input_0.pb (the Zen of Python's bytes modulo 64) and
OUT/gpt-tf2onnx.output_0.pb (Keras' logits, float32 [2, 8, 64]).
"""
import argparse
import codecs
import contextlib
import io
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf2onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

V, T, D, H, L, B, OPSET = 64, 8, 32, 2, 2, 2, 13


def gelu_tanh(x):
    return keras.activations.gelu(x, approximate=True)


def build():
    keras.utils.set_random_seed(0)
    ids = keras.Input(shape=(T,), batch_size=B, dtype="int64", name="input_ids")
    h = keras.layers.Embedding(V, D, name="wte")(ids) + keras.layers.Embedding(T, D, name="wpe")(tf.range(T)[None, :])
    for i in range(L):
        a = keras.layers.LayerNormalization(epsilon=1e-5, name=f"h{i}_ln_1")(h)
        h = h + keras.layers.MultiHeadAttention(num_heads=H, key_dim=D // H, name=f"h{i}_attn")(a, a,
                                                                                            use_causal_mask=True)
        m = keras.layers.LayerNormalization(epsilon=1e-5, name=f"h{i}_ln_2")(h)
        m = keras.layers.Dense(4 * D, activation=gelu_tanh, name=f"h{i}_fc")(m)
        h = h + keras.layers.Dense(D, name=f"h{i}_proj")(m)
    h = keras.layers.LayerNormalization(epsilon=1e-5, name="ln_f")(h)
    return keras.Model(ids, keras.layers.Dense(V, use_bias=False, name="lm_head")(h))


def zen_ids():
    with contextlib.redirect_stdout(io.StringIO()):
        import this  # noqa: F401
    text = codecs.decode(this.s, "rot13").encode("ascii")[1 : 1 + B * T]
    return (np.frombuffer(text, dtype=np.uint8).astype(np.int64) % V).reshape(B, T)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="test/Import/ONNX/Inputs/tf2onnx")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    model = build()
    ids = zen_ids()
    logits = model(ids).numpy()
    path = os.path.join(args.out, f"gpt-tf2onnx-opset{OPSET}.onnx")
    spec = (tf.TensorSpec((B, T), tf.int64, name="input_ids"),)
    m, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=OPSET, output_path=path)
    onnx.checker.check_model(m)
    for suffix, array, name in (("input_0", ids, "input_ids"), ("output_0", logits, m.graph.output[0].name)):
        with open(os.path.join(args.out, f"gpt-tf2onnx.{suffix}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, name).SerializeToString())
    print(f"{path}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes, tensorflow {tf.__version__}, keras "
          f"{keras.__version__}, tf2onnx {tf2onnx.__version__}; ops {sorted({n.op_type for n in m.graph.node})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
