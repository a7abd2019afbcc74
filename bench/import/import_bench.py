#!/usr/bin/env python3
"""Import time and peak memory of big ONNX models: weights are neither copied nor read at import.

Generates (with onnx.helper, no torch) and imports with `ptrain-translate --import-onnx`:
  gpt2-124m      GPT-2 124M-shaped (12 layers, hidden 768, 12 heads, vocabulary 50257, positions 1024;
                 batch 1, sequence 64), opset 17, every weight EMBEDDED in the .onnx (raw_data, ~500 MB of
                 random values);
  llama-1b       LLaMA-style at TinyLlama-1.1B's shape (22 layers, hidden 2048, 32 query / 4 kv heads,
                 SwiGLU 5632, vocabulary 32000), opset 23 (RMSNormalization, RotaryEmbedding, Attention),
                 weights in EXTERNAL data (4.4 GB);
  llama-7b       the same at LLaMA-2-7B's shape (32 layers, hidden 4096, 32 heads, SwiGLU 11008), 27 GB of
                 external data.
The external data files are SPARSE (os.truncate: no byte is written, none is on disk): the importer never reads
them, which is what the measurement shows (reading 27 GB would take minutes and the memory it maps).
Each import runs --repeat times; reported: the best wall and CPU (user + system) time, and the peak resident
set (ru_maxrss of the import process, from os.wait4 in a fresh helper process) against the size of the model's
files, split into its anonymous part (the importer's own heap) and its file-backed part (shared libraries and
mapped model pages), peaks of RssAnon and RssFile polled from /proc/PID/status.

Usage: .venv/bin/python bench/import/import_bench.py --bin build/bin [--baseline OTHER/bin] [--check]
  --check   exit 1 unless gpt2-124m imports in < 2 s and every peak RSS is < 20% of its files' size
The generated files are deleted afterwards (--keep keeps them in --out).
"""
import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from onnx import TensorProto, helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64

GPT2 = dict(layers=12, hidden=768, heads=12, ffn=3072, vocab=50257, positions=1024, batch=1, seq=64)
LLAMA_1B = dict(layers=22, hidden=2048, heads=32, kv_heads=4, ffn=5632, vocab=32000, batch=1, seq=64)
LLAMA_7B = dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000, batch=1, seq=64)


class Graph:
    """Nodes and initializers; weights either embedded (random float32 raw_data) or external."""

    def __init__(self, rng, external=None):
        self.rng, self.external, self.nodes, self.inits, self.offset = rng, external, [], [], 0

    def weight(self, name, shape, scale=0.02):
        t = TensorProto(name=name, data_type=F, dims=list(shape))
        n = math.prod(shape)
        if self.external is None:
            t.raw_data = (scale * self.rng.standard_normal(n, dtype=np.float32)).tobytes()
        else:
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", self.external), ("offset", self.offset), ("length", 4 * n)):
                t.external_data.add(key=key, value=str(value))
            self.offset += (4 * n + 4095) // 4096 * 4096
        self.inits.append(t)
        return name

    def const(self, name, array):
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def model(self, name, inputs, outputs, opset):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ptrain-bench")
        m.ir_version = 10 if opset >= 21 else 8
        return m


def gpt2(g, c):
    """GPT-2 (Radford et al., 2019) as torch.onnx.export writes it at opset 17: LayerNormalization, fused
    c_attn, causal Where mask, Erf GELU, LM head tied to the token embedding."""
    h, nh, s, b = c["hidden"], c["heads"], c["seq"], c["batch"]
    hd = h // nh
    g.const("pos_ids", np.arange(s, dtype=np.int64).reshape(1, s))
    g.const("causal", np.tril(np.ones((s, s), dtype=bool)))
    g.const("neg_inf", np.array(-np.inf, np.float32))
    g.const("scale", np.array(math.sqrt(hd), np.float32))
    g.const("half", np.array(0.5, np.float32))
    g.const("one", np.array(1.0, np.float32))
    g.const("sqrt2", np.array(math.sqrt(2.0), np.float32))
    g.const("split3", np.array([h, h, h], np.int64))
    g.const("heads_shape", np.array([b, s, nh, hd], np.int64))
    g.const("hidden_shape", np.array([b, s, h], np.int64))
    wte = g.weight("wte.weight", (c["vocab"], h))
    x = g.node("Add", [g.node("Gather", [wte, "input_ids"], "tok"),
                       g.node("Gather", [g.weight("wpe.weight", (c["positions"], h)), "pos_ids"], "pos")], "embed")

    def ln(x, name):
        return g.node("LayerNormalization", [x, g.weight(name + ".weight", (h,)), g.weight(name + ".bias", (h,))],
                      name, axis=-1, epsilon=1e-5)

    def linear(x, name, fan_in, fan_out):
        mm = g.node("MatMul", [x, g.weight(name + ".weight", (fan_in, fan_out))], name + ".mm")
        return g.node("Add", [mm, g.weight(name + ".bias", (fan_out,))], name)

    for i in range(c["layers"]):
        p = f"h.{i}."
        qkv = linear(ln(x, p + "ln_1"), p + "attn.c_attn", h, 3 * h)
        g.nodes.append(helper.make_node("Split", [qkv, "split3"], [p + "q", p + "k", p + "v"], name=p + "split",
                                        axis=-1))
        heads = {n: g.node("Reshape", [p + n, "heads_shape"], p + n + ".heads") for n in "qkv"}
        q = g.node("Transpose", [heads["q"]], p + "qt", perm=[0, 2, 1, 3])
        k = g.node("Transpose", [heads["k"]], p + "kt", perm=[0, 2, 3, 1])
        v = g.node("Transpose", [heads["v"]], p + "vt", perm=[0, 2, 1, 3])
        scores = g.node("Div", [g.node("MatMul", [q, k], p + "qk"), "scale"], p + "scores")
        masked = g.node("Where", ["causal", scores, "neg_inf"], p + "masked")
        a = g.node("MatMul", [g.node("Softmax", [masked], p + "probs", axis=-1), v], p + "av")
        a = g.node("Reshape", [g.node("Transpose", [a], p + "at", perm=[0, 2, 1, 3]), "hidden_shape"], p + "merged")
        x = g.node("Add", [x, linear(a, p + "attn.c_proj", h, h)], p + "attn_residual")
        f = linear(ln(x, p + "ln_2"), p + "mlp.c_fc", h, c["ffn"])
        erf = g.node("Erf", [g.node("Div", [f, "sqrt2"], p + "gelu.div")], p + "gelu.erf")
        gelu = g.node("Mul", [g.node("Mul", [f, "half"], p + "gelu.half"),
                              g.node("Add", [erf, "one"], p + "gelu.add")], p + "gelu")
        x = g.node("Add", [x, linear(gelu, p + "mlp.c_proj", c["ffn"], h)], p + "mlp_residual")
    head = g.node("Transpose", [wte], "lm_head.weight_t", perm=[1, 0])
    g.node("MatMul", [ln(x, "ln_f"), head], "logits")
    return g.model("gpt2_124m", [helper.make_tensor_value_info("input_ids", I64, [b, s])],
                   [helper.make_tensor_value_info("logits", F, [b, s, c["vocab"]])], 17)


def llama(g, c):
    """A LLaMA-style decoder as the newest exporters write it at opset 23 (python/ptrain_fixtures/export_newest.py's
    llama_tiny at a real model's shape)."""
    h, nh, kvh, s, b = c["hidden"], c["heads"], c["kv_heads"], c["seq"], c["batch"]
    hd = h // nh
    g.const("position_ids", np.arange(s, dtype=np.int64).reshape(1, s))
    cos, sin = g.weight("rope.cos", (s, hd // 2), 1.0), g.weight("rope.sin", (s, hd // 2), 1.0)
    x = g.node("Gather", [g.weight("embed_tokens.weight", (c["vocab"], h)), "input_ids"], "embed")
    for i in range(c["layers"]):
        p = f"layers.{i}."
        n = g.node("RMSNormalization", [x, g.weight(p + "input_layernorm.weight", (h,))], p + "attn_norm",
                   epsilon=1e-5)
        q = g.node("MatMul", [n, g.weight(p + "q_proj.weight", (h, h))], p + "q")
        k = g.node("MatMul", [n, g.weight(p + "k_proj.weight", (h, kvh * hd))], p + "k")
        v = g.node("MatMul", [n, g.weight(p + "v_proj.weight", (h, kvh * hd))], p + "v")
        q = g.node("RotaryEmbedding", [q, cos, sin, "position_ids"], p + "q_rope", num_heads=nh)
        k = g.node("RotaryEmbedding", [k, cos, sin, "position_ids"], p + "k_rope", num_heads=kvh)
        a = g.node("Attention", [q, k, v], p + "attn", q_num_heads=nh, kv_num_heads=kvh, is_causal=1)
        x = g.node("Add", [x, g.node("MatMul", [a, g.weight(p + "o_proj.weight", (h, h))], p + "o")], p + "attn_res")
        n = g.node("RMSNormalization", [x, g.weight(p + "post_attention_layernorm.weight", (h,))], p + "mlp_norm",
                   epsilon=1e-5)
        gate = g.node("MatMul", [n, g.weight(p + "gate_proj.weight", (h, c["ffn"]))], p + "gate")
        silu = g.node("Mul", [gate, g.node("Sigmoid", [gate], p + "gate_sigmoid")], p + "silu")
        up = g.node("MatMul", [n, g.weight(p + "up_proj.weight", (h, c["ffn"]))], p + "up")
        down = g.node("MatMul", [g.node("Mul", [silu, up], p + "swiglu"),
                                 g.weight(p + "down_proj.weight", (c["ffn"], h))], p + "down")
        x = g.node("Add", [x, down], p + "mlp_res")
    n = g.node("RMSNormalization", [x, g.weight("norm.weight", (h,))], "final_norm", epsilon=1e-5)
    g.node("MatMul", [n, g.weight("lm_head.weight", (h, c["vocab"]))], "logits")
    return g.model("llama", [helper.make_tensor_value_info("input_ids", I64, [b, s])],
                   [helper.make_tensor_value_info("logits", F, [b, s, c["vocab"]])], 23)


def generate(name, out):
    """Writes model `name` into `out`; returns (model path, [its files], parameter count)."""
    rng = np.random.default_rng(0)
    path = os.path.join(out, name + ".onnx")
    if name == "gpt2-124m":
        m = gpt2(Graph(rng), GPT2)
        files = [path]
    else:
        data = name + ".onnx.data"
        g = Graph(rng, external=data)
        m = llama(g, LLAMA_1B if name == "llama-1b" else LLAMA_7B)
        with open(os.path.join(out, data), "wb") as f:
            f.truncate(g.offset)  # sparse: nothing written
        files = [path, os.path.join(out, data)]
    params = sum(math.prod(t.dims) for t in m.graph.initializer if t.data_type == F)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path, files, params


# Runs in a fresh, small Python process: a child forked from this one (which held the generated model)
# would count this process's pages in its ru_maxrss until it execs. Besides ru_maxrss it polls
# /proc/PID/status every millisecond for the peaks of RssAnon (the importer's own heap: context, module,
# protobuf) and RssFile (mapped files: the MLIR/LLVM shared libraries and the pages of the model file the scan
# faulted in, whole large folios on a freshly written file).
MEASURE = """
import os, subprocess, sys, threading, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE)
err = []
reader = threading.Thread(target=lambda: err.append(proc.stderr.read()))
reader.start()
peak = {"RssAnon": 0, "RssFile": 0}
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    try:
        for line in open("/proc/%d/status" % proc.pid):
            key = line.split(":")[0]
            if key in peak:
                peak[key] = max(peak[key], int(line.split()[1]) * 1024)
    except OSError:
        pass
    time.sleep(0.001)
reader.join()
print(time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024,
      os.waitstatus_to_exitcode(status), peak["RssAnon"], peak["RssFile"])
sys.stderr.write(err[0].decode())
"""


def run_import(binary, path, output):
    """Wall seconds, CPU seconds, peak RSS, peak anonymous and peak file-backed RSS (bytes) of one import."""
    result = subprocess.run([sys.executable, "-c", MEASURE, binary, "--import-onnx", path, "-o", output],
                            capture_output=True, text=True)
    fields = result.stdout.split()
    if result.returncode != 0 or len(fields) != 6 or fields[3] != "0":
        sys.exit(f"{binary} --import-onnx {path} failed:\n{result.stdout}{result.stderr}")
    return float(fields[0]), float(fields[1]), int(fields[2]), int(fields[4]), int(fields[5])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="folder with ptrain-translate")
    parser.add_argument("--baseline", help="another ptrain-translate folder to compare with (e.g. main's build)")
    parser.add_argument("--models", default="gpt2-124m,llama-1b,llama-7b")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="folder for the generated files (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the targets are met")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="ptrain-import-bench-")
    os.makedirs(out, exist_ok=True)
    binaries = [("ptrain", os.path.join(args.bin, "ptrain-translate"))]
    if args.baseline:
        binaries.append(("baseline", os.path.join(args.baseline, "ptrain-translate")))
    failures = []
    print("| model | parameters | file(s) | on disk | build | import wall (best of %d) | CPU | peak RSS | RSS / files "
          "| anon (heap) | file-backed |" % args.repeat)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for name in args.models.split(","):
            t0 = time.perf_counter()
            path, files, params = generate(name, out)
            gen = time.perf_counter() - t0
            size = sum(os.path.getsize(f) for f in files)
            disk = sum(os.stat(f).st_blocks * 512 for f in files)
            mlir = os.path.join(out, name + ".mlir")
            for label, binary in binaries:
                runs = [run_import(binary, path, mlir) for _ in range(args.repeat)]
                seconds = min(r[0] for r in runs)
                cpu = min(r[1] for r in runs)
                rss = max(r[2] for r in runs)
                anon, mapped = max(r[3] for r in runs), max(r[4] for r in runs)
                states = open(mlir).read().count("ptrain.state @")
                print(f"| {name} | {params / 1e6:.1f} M ({states} states) | {size / 1e9:.2f} GB | "
                      f"{disk / 1e9:.2f} GB | {label} | {seconds:.2f} s | {cpu:.2f} s | {rss / 1e6:.0f} MB | "
                      f"{100 * rss / size:.1f}% | {anon / 1e6:.0f} MB ({100 * anon / size:.1f}%) | "
                      f"{mapped / 1e6:.0f} MB |", flush=True)
                if label == "ptrain":
                    if name == "gpt2-124m" and seconds >= 2.0:
                        failures.append(f"{name}: import {seconds:.2f} s >= 2 s")
                    if rss >= 0.2 * size:
                        failures.append(f"{name}: peak RSS {rss / 1e6:.0f} MB >= 20% of {size / 1e6:.0f} MB")
            print(f"<!-- {name}: generated in {gen:.1f} s -->", flush=True)
            if not args.keep:
                for f in files + [mlir]:
                    os.remove(f)
    finally:
        if not args.keep and not args.out:
            shutil.rmtree(out, ignore_errors=True)
    for f in failures:
        print("FAILED:", f)
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
