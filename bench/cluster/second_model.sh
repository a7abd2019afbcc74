#!/usr/bin/env bash
# The benchmark's second model (issue 25, "Models"; bench/README.md "cluster: the second model"): a GPT-2-architecture
# model (python/ptrain_fixtures/models/gpt.py: pre-LayerNorm blocks, GELU MLP, learned positions, the LM head tied
# to the token embedding) exported at a BPE tokenizer's vocabulary, and that tokenizer's training data from real
# text, for bench/cluster/run.sh --model OUT/model/gpt.onnx --data OUT/tok.
#
#   bash bench/cluster/second_model.sh [--out out/second-model] [--vocab 8192] [--layers 4] [--width 128]
#                                      [--heads 4] [--seq 64] [--batch 4] [--text /usr/lib/python3.11]
#
# 1. ptrain-data (docs/Data.md): a byte-level BPE of --vocab ids trained on the .py files under --text (Python's
#    standard library, which ships with the machine: offline, real text), Megatron files split by document;
# 2. bench/scale/export_gpt.py (Debian's python3-torch): the model at that vocabulary, opset 17, static shapes.
# Both are skipped when their output exists. Needs a build (ptrain-data in build/bin, under .venv: scripts/
# setup-python.sh) and /usr/bin/python3 with torch and onnx (scripts/setup.sh). Argument errors: exit 2.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$ROOT/out/second-model" VOCAB=8192 LAYERS=4 WIDTH=128 HEADS=4 SEQ=64 BATCH=4 TEXT=/usr/lib/python3.11
BUILD="$ROOT/build"
usage() { sed -n '7,8p' "$0" | sed 's/^# *//'; }
die() { echo "bench/cluster/second_model.sh: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out|--vocab|--layers|--width|--heads|--seq|--batch|--text|--build)
      [ $# -ge 2 ] || die "$1: needs a value"
      case "$1" in
        --out) OUT=$2 ;; --vocab) VOCAB=$2 ;; --layers) LAYERS=$2 ;; --width) WIDTH=$2 ;; --heads) HEADS=$2 ;;
        --seq) SEQ=$2 ;; --batch) BATCH=$2 ;; --text) TEXT=$2 ;; --build) BUILD=$2 ;;
      esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
for v in VOCAB LAYERS WIDTH HEADS SEQ BATCH; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v,,} ${!v}: must be a positive integer"
done
[ "$VOCAB" -ge 257 ] && [ "$VOCAB" -le 65536 ] || die "--vocab $VOCAB: between 257 (bytes + merges) and 65536 (uint16 ids)"
[ $((WIDTH % HEADS)) -eq 0 ] || die "--width $WIDTH: not divisible by --heads $HEADS"
[ -d "$TEXT" ] || die "--text $TEXT: no such folder"
[ -x "$BUILD/bin/ptrain-data" ] || die "--build $BUILD: no bin/ptrain-data (build with bash scripts/build.sh $BUILD)"

mkdir -p "$OUT"
if [ ! -f "$OUT/tok/data.json" ]; then
  "$BUILD/bin/ptrain-data" "$TEXT" --ext .py --vocab-size "$VOCAB" -o "$OUT/tok"
fi
if [ ! -f "$OUT/model/gpt.onnx" ]; then
  PYTHONPATH="$ROOT/python" /usr/bin/python3 "$ROOT/bench/scale/export_gpt.py" --out "$OUT/model" --layers "$LAYERS" \
    --width "$WIDTH" --heads "$HEADS" --seq "$SEQ" --vocab "$VOCAB" --batch "$BATCH"
fi
echo "sudo bash bench/cluster/run.sh --model $OUT/model/gpt.onnx --data $OUT/tok [--out out/bench-cluster-gpt2] ..."
