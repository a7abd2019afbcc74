#!/usr/bin/env bash
# The second worked example (issue 22, docs/Data.md): tokenize Python's documentation and standard library with an
# 8k byte-level BPE trained by ptrain-data, train a GPT-2-architecture model of that vocabulary at dp 2 x pp 2 with
# --policy optimus-cc on the Megatron dataset, validate, and draw the TensorBoard scalars as a PNG.
# Usage: bash examples/tokenized-gpt/run.sh [OUT (default out/tokenized-gpt)] [STEPS (default 200)]
# Needs: a build (bash scripts/build.sh build), the .venv (bash scripts/setup-python.sh: tokenizers, tensorboard),
# Debian's python3.11-doc (the documentation's reST sources; installed here if missing) and python3-torch 1.13
# (scripts/setup.sh) for the export.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$ROOT/out/tokenized-gpt}"
STEPS="${2:-200}"
BIN="$ROOT/build/bin"
DOCS=/usr/share/doc/python3.11/html/_sources
mkdir -p "$OUT"
if [ ! -d "$DOCS" ]; then
  apt-get install -y -q python3.11-doc
fi

# 1. 8,192-id BPE on the documentation (.rst.txt) and the standard library (.py); Megatron files split by document.
"$BIN/ptrain-data" "$DOCS" /usr/lib/python3.11 --ext .txt,.py --vocab-size 8192 -o "$OUT/tok"
# 2. The bundled GPT's architecture (GPT-2: pre-LayerNorm, learned positions, tied embedding; 4 layers, hidden 128,
#    sequence 64) with a vocabulary of 8,192, exported by PyTorch to ONNX.
/usr/bin/python3 "$ROOT/python/ptrain/export_bundled_gpt.py" --out "$OUT/model" --vocab-size 8192
# 3. dp 2 x pp 2, 2 micro-batches, Optimus-CC's compressed backpropagation and fused embedding sync.
"$BIN/ptrain-compile" "$OUT/model/gpt.onnx" --dp 2 --pp 2 --micro-batches 2 --policy optimus-cc --lr 1e-3 \
  --warmup-steps 10 --total-steps "$STEPS" --target cpu -o "$OUT/plan"
# 4. Train and validate; the TensorBoard event file is written beside the run log.
"$BIN/ptrain-run" "$OUT/plan" --data "$OUT/tok" --steps "$STEPS" --val-every 50 --checkpoint "$OUT/plan/ckpt"
# 5. The scalars as a PNG (tensorboard's reader in .venv, matplotlib in Debian's python3).
/usr/bin/python3 "$ROOT/examples/tokenized-gpt/plot_tensorboard.py" "$OUT/plan/tensorboard" "$OUT/scalars.png"
echo "tensorboard --logdir $OUT/plan/tensorboard   (.venv/bin/tensorboard)"
