#!/usr/bin/env bash
# The second worked example (issue 22, docs/Data.md): tokenize Python's documentation and standard library with an
# 8k byte-level BPE trained by ptrain-data, train a Hugging Face GPT-2 (transformers GPT2Config of that vocabulary,
# exported to ONNX) at dp 2 x pp 2 with --policy optimus-cc on the Megatron dataset, validate, and draw the
# TensorBoard scalars as a PNG.
# Usage: bash examples/tokenized-gpt/run.sh [OUT (default out/tokenized-gpt)] [STEPS (default 200)]
# Needs: a build (bash scripts/build.sh build), the .venv (bash scripts/setup-python.sh: tokenizers, tensorboard),
# Debian's python3.11-doc (the documentation's reST sources; installed here if missing) and the export venv
# .venv-export (bash scripts/setup-export.sh: PyPI torch, transformers, onnxscript; multi-GB, not part of CI).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$ROOT/out/tokenized-gpt}"
STEPS="${2:-200}"
BIN="$ROOT/build/bin"
DOCS=/usr/share/doc/python3.11/html/_sources
mkdir -p "$OUT"
EXPORT_PY="$ROOT/.venv-export/bin/python"
if [ ! -x "$EXPORT_PY" ]; then
  echo "run.sh: $EXPORT_PY missing: make it with bash scripts/setup-export.sh (PyPI torch + transformers)" >&2
  exit 1
fi
if [ ! -d "$DOCS" ]; then
  apt-get install -y -q python3.11-doc
fi

# 1. 8,192-id BPE on the documentation (.rst.txt) and the standard library (.py); Megatron files split by document.
[ -f "$OUT/tok/data.json" ] || "$BIN/ptrain-data" "$DOCS" /usr/lib/python3.11 --ext .txt,.py --vocab-size 8192 -o "$OUT/tok"
# 2. transformers.GPT2LMHeadModel(GPT2Config(vocab_size=8192, n_positions=64, n_embd=128, n_layer=4, n_head=4)),
#    random weights, exported by torch.onnx.export(dynamo=True) at opset 18 (python/ptrain_fixtures/export_hf_gpt2.py).
if [ ! -f "$OUT/model/gpt2.onnx" ]; then
  PYTHONPATH="$ROOT/python" "$EXPORT_PY" -m ptrain_fixtures.export_hf_gpt2 --out "$OUT/model" --vocab-size 8192 \
    --n-layer 4 --n-embd 128 --n-head 4 --seq 64 --batch 4
fi
# 3. dp 2 x pp 2, 2 micro-batches, Optimus-CC's compressed backpropagation and fused embedding sync.
"$BIN/ptrain-compile" "$OUT/model/gpt2.onnx" --import-options "--signature auto" --dp 2 --pp 2 --micro-batches 2 \
  --policy optimus-cc --lr 1e-3 --warmup-steps 10 --total-steps "$STEPS" --target cpu -o "$OUT/plan"
# 4. Train and validate; the TensorBoard event file is written beside the run log.
"$BIN/ptrain-run" "$OUT/plan" --data "$OUT/tok" --steps "$STEPS" --val-every 50 --checkpoint "$OUT/plan/ckpt"
# 5. The scalars as a PNG (tensorboard's reader in .venv, matplotlib in Debian's python3).
/usr/bin/python3 "$ROOT/examples/tokenized-gpt/plot_tensorboard.py" "$OUT/plan/tensorboard" "$OUT/scalars.png"
echo "tensorboard --logdir $OUT/plan/tensorboard   (.venv/bin/tensorboard)"
