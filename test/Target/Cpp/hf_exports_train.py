"""Exports ptrain did not write train (CTest `codegen-cpu-hf-exports-train`, issue 21).

The dynamo exporter's GPT-2 with the exporter's default optimization (test/Import/ONNX/opset18+/hf/gpt2-folded.onnx)
and its LLaMA exports, unoptimized and optimized (llama.onnx, llama-folded.onnx), hold their constants (GELU's
0.5 and 0.044715, the exponent 2, RMSNorm's epsilon, the attention mask, the rotary tables) as initializers.
The TorchScript exporter of Debian's torch 1.13 at opset 14 (test/Import/ONNX/Inputs/exports/gpt-opset14.onnx,
python/ptrain_fixtures/export_gpt_opset14.py: the bundled GPT, vocabulary 256) decomposes LayerNorm and GELU;
at opset 11 (gpt2-opset11.onnx, bert-opset11-folded.onnx: python/ptrain_fixtures/export_import_fixtures.py,
vocabulary 64) it also writes Unsqueeze's axes and Split's sizes as attributes; its LLaMA-style exports
(llama-opset11.onnx, llama-opset14-folded.onnx, llama-opset17.onnx, vocabulary 128) decompose RMSNorm with
rsqrt as Div(1, Sqrt) between float32 casts and keep the rotary tables and causal mask in Constant nodes.
For each:
1. ptrain-compile at pp=2 with 2 micro-batches and `--signature auto` succeeds; every initializer the importer
   reports as held constant (`remark: initializer 'X' is held constant: ...`) has no state in plan.json (no
   parameter, gradient or optimizer moment), and, for the dynamo exports, at least one float initializer is
   reported (the TorchScript exports keep their scalars in Constant nodes);
2. the recognizers fired: the forward graph has ptrain.gelu / ptrain.layer_norm (GPT-2, BERT) or
   ptrain.rms_norm (LLaMA) and no ptrain.binary pow;
3. ptrain-run trains 20 AdamW steps (lr 3e-3, no warm-up) on 2 ranks over byte-level text (data.py's corpus
   of the Python standard library; for a vocabulary under 256 its bytes >= 128 dropped, and under 128 the rest
   taken modulo the vocabulary: corpus_for): the mean training loss of the last 5 steps is below that of the
   first 5, and the final validation loss is below the first.
4. for the exports in TP2, ptrain-compile --tp 2 (through --ptrain-raise and --ptrain-shard-tp) and 20 steps of
   it on 2 ranks lower the training loss likewise.
The dynamo exporter's BERT with its optimization (hf/bert-folded.onnx, vocabulary 128) is checked the same way, and
so is tf2onnx's Keras GPT (test/Import/ONNX/Inputs/tf2onnx/gpt-tf2onnx-opset13.onnx, vocabulary 64: its int64 guard
of negative token ids, its tanh GELU and TensorFlow's LayerNorm algebra recognized, its einsum attention raised
at tp=2).
Usage: hf_exports_train.py <build-dir> <source-dir> <scratch-dir>
"""

import json
import os
import re
import sys

import e2e

HF = ("Import", "ONNX", "opset18+", "hf")
TS = ("Import", "ONNX", "Inputs", "exports")
TF = ("Import", "ONNX", "Inputs", "tf2onnx")
# name -> (folder under test/, ops the recognizers must have made)
FIXTURES = {"gpt2-folded": (HF, ("ptrain.gelu", "ptrain.layer_norm")),
            "llama": (HF, ("ptrain.rms_norm",)),
            "llama-folded": (HF, ("ptrain.rms_norm",)),
            "gpt-opset14": (TS, ("ptrain.gelu", "ptrain.layer_norm")),
            "bert-folded": (HF, ("ptrain.layer_norm",)),
            "gpt2-opset11": (TS, ("ptrain.gelu", "ptrain.layer_norm")),
            "bert-opset11-folded": (TS, ("ptrain.gelu", "ptrain.layer_norm")),
            "llama-opset11": (TS, ("ptrain.rms_norm",)),
            "llama-opset14-folded": (TS, ("ptrain.rms_norm",)),
            "llama-opset17": (TS, ("ptrain.rms_norm",)),
            "gpt-tf2onnx-opset13": (TF, ("ptrain.gelu", "ptrain.layer_norm"))}
# Exports whose parameters are read in several places (the exporter merged equal values into one initializer:
# bert-folded's zero biases into a LayerNorm bias, gpt-opset14's two layers' Q|K|V biases), and the TorchScript
# exporter's opset-11 GPT-2 and BERT and its LLaMA (grouped-query attention, repeat_kv): also at tp=2.
# tf2onnx's Keras GPT merges the batch and the heads for its einsums ([B * heads, S, head_dim]).
TP2 = ("gpt-opset14", "bert-folded", "gpt2-opset11", "bert-opset11-folded", "llama-opset11", "llama-opset17",
       "gpt-tf2onnx-opset13")
STEPS = 20


def ascii_corpus(data, out):
    """`data`'s train.bin and val.bin without their bytes >= 128, in `out`."""
    os.makedirs(out, exist_ok=True)
    for name in ("train.bin", "val.bin"):
        with open(os.path.join(data, name), "rb") as f:
            kept = bytes(b for b in f.read() if b < 128)
        with open(os.path.join(out, name), "wb") as f:
            f.write(kept)
    with open(os.path.join(out, "data.json"), "w") as f:
        json.dump({"format": "bytes"}, f)  # raw bytes, declared (docs/Data.md)
    return out


def corpus_for(vocab, full, ascii, work):
    """The byte-level corpus for a vocabulary of `vocab`: all bytes, bytes < 128, or those modulo `vocab`."""
    if vocab >= 256:
        return full
    if vocab >= 128:
        return ascii
    out = os.path.join(work, f"mod{vocab}")
    if not os.path.exists(os.path.join(out, "data.json")):
        os.makedirs(out, exist_ok=True)
        for name in ("train.bin", "val.bin"):
            with open(os.path.join(ascii, name), "rb") as f:
                data = bytes(b % vocab for b in f.read())
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
        with open(os.path.join(out, "data.json"), "w") as f:
            json.dump({"format": "bytes"}, f)
    return out


def main():
    build, source, work, bin_dir, _ = e2e.setup(sys.argv)
    full = e2e.corpus(source, work, max_bytes=200000)
    ascii = ascii_corpus(full, os.path.join(work, "ascii"))

    def compile_plan(name, model, out, what, grid):
        """ptrain-compile `model` on `grid` into `out`; whether it succeeded (checked, named `what`)."""
        rc, log = e2e.run([os.path.join(bin_dir, "ptrain-compile"), model, *grid, "--lr", "3e-3",
                           "--warmup-steps", "0", "--import-options", "--signature auto", "-o", out])
        e2e.check(rc == 0, f"{name}: ptrain-compile {what}" + ("" if rc == 0 else ":\n" + log[-3000:]))
        return rc == 0

    def run_steps(name, out, data, what, tag):
        """STEPS ptrain-run steps of the plan in `out`; the run log (checked, named `what`), or None."""
        losses = os.path.join(work, name + tag + "-losses.json")
        rc, log = e2e.run([os.path.join(bin_dir, "ptrain-run"), out, "--data", data, "--steps", str(STEPS),
                           "--val-every", str(STEPS), "--no-plots", "--log", losses], timeout=300)
        e2e.check(rc == 0, f"{name}: ptrain-run {what}--steps {STEPS}" + ("" if rc == 0 else ":\n" + log[-3000:]))
        if rc != 0:
            return None
        with open(losses) as f:
            return json.load(f)

    for name, (folder, ops) in FIXTURES.items():
        model = os.path.join(source, "test", *folder, name + ".onnx")
        out = os.path.join(work, name)
        if not compile_plan(name, model, out, "--pp 2", ["--pp", "2", "--micro-batches", "2"]):
            continue
        rc, remarks = e2e.run([os.path.join(bin_dir, "ptrain-translate"), "--import-onnx", model, "--signature", "auto",
                               "-o", os.devnull])
        constants = set(re.findall(r"remark: initializer '([^']+)' is held constant", remarks))
        with open(os.path.join(out, "plan.json")) as f:
            plan = json.load(f)
        keys = {s["key"].split("/")[0] for s in plan["states"]}
        data = corpus_for(plan["vocab"], full, ascii, work)
        floats = constants - set(re.findall(
            r"initializer '([^']+)' is held constant: (?:an integer|a boolean) tensor", remarks))
        e2e.check((floats or folder != HF) and not constants & keys,
                  f"{name}: {len(constants)} initializers held constant ({len(floats)} floats), none a state in plan.json"
                  + ("" if not constants & keys else f" (but {sorted(constants & keys)})"))
        with open(os.path.join(out, "forward.mlir")) as f:
            forward = f.read()
        for op in ops:
            e2e.check(op + " " in forward, f"{name}: the forward graph has {op}")
        e2e.check("ptrain.binary pow" not in forward, f"{name}: no ptrain.binary pow left")
        result = run_steps(name, out, data, "", "")
        if result is None:
            continue
        train, val = result["train_loss"], result["val_loss"]
        first, last = sum(train[:5]) / 5, sum(train[-5:]) / 5
        e2e.check(last < first, f"{name}: mean train loss of steps 1-5 {first:.4f} -> 16-20 {last:.4f}")
        e2e.check(val[-1][1] < val[0][1], f"{name}: val loss {val[0][1]:.4f} -> {val[-1][1]:.4f}")
        if name in TP2:
            tp_out = os.path.join(work, name + "-tp2")
            if not compile_plan(name, model, tp_out, "--tp 2", ["--tp", "2"]):
                continue
            result = run_steps(name, tp_out, data, "tp=2 ", "-tp2")
            if result is None:
                continue
            first, last = sum(result["train_loss"][:5]) / 5, sum(result["train_loss"][-5:]) / 5
            e2e.check(last < first, f"{name}: tp=2 mean train loss of steps 1-5 {first:.4f} -> 16-20 {last:.4f}")
    e2e.finish()


if __name__ == "__main__":
    main()
