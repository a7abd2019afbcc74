#!/usr/bin/env bash
# Set-up, build, and the main job on the bundled real model (models/gpt: a tied GPT exported from PyTorch at
# opset 17, weights in ONNX external data):
#   1. ptrain-translate --import-onnx: faithful import + legalization into ptrain model ops;
#   2. ptrain-interpret: the reference interpreter's logits against the export's reference logits;
#   3. ptrain-opt --ptrain-build-training-step: next-token loss + reverse-mode gradients, checked against
#      PyTorch autograd's gradients of the same export;
#   4. the AdamW training step the compiler builds from it;
#   5. ptrain-compile: 2 pipeline stages, 4 micro-batches, 1F1B, compressed with optimus-cc (the critical path on
#      clusters/h200-node.json, PowerSGD with a per-link residual on the cool-down backward send), compiled to C++
#      with MPI (out/main/pp2/);
#   6. ptrain-run: trains it under mpirun -np 2 on byte-level Python standard-library source (offline), with
#      validation on held-out files, prints the bytes per link from the runtime's counters, saves a checkpoint;
#   7. the same plan without compression, one step, for its bytes per link: the reduction CB achieves.
# Usage: bash scripts/main.sh [build-dir] [steps]        Outputs go to out/main/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
STEPS=${2:-150}
BIN="$BUILD_DIR/bin"
MODEL=models/gpt/gpt.onnx
OUT=out/main
mkdir -p "$OUT"

bash scripts/build.sh "$BUILD_DIR" > /dev/null

echo "== 1. import $MODEL"
"$BIN/ptrain-translate" --import-onnx "$MODEL" -o "$OUT/gpt.mlir"
echo "   $(grep -c 'ptrain.state @' "$OUT/gpt.mlir") parameter symbols; ops in @forward:"
grep -oE '= ptrain\.[a-z_]+' "$OUT/gpt.mlir" | sed 's/= //' | sort | uniq -c | sort -rn | sed 's/^/   /'

echo "== 2. interpret @forward, compare with the export's reference logits"
"$BIN/ptrain-interpret" "$OUT/gpt.mlir" --input models/gpt/test_data_set_0/input_0.pb \
  --expect models/gpt/test_data_set_0/output_0.pb --atol 1e-5

echo "== 3. training step (optimizer=none): loss and gradients vs PyTorch autograd"
"$BIN/ptrain-opt" "$OUT/gpt.mlir" --ptrain-build-training-step="optimizer=none" -o "$OUT/gpt-grads.mlir"
"$BIN/ptrain-interpret" "$OUT/gpt-grads.mlir" --entry train_step --input models/gpt/test_data_set_0/input_0.pb \
  --expect-grads models/gpt/reference_grads.onnx --rtol 1e-4 > "$OUT/gradients.txt"
echo "   loss: $(grep -m1 'value =' "$OUT/gradients.txt" | sed 's/.*value = //') (PyTorch: $(cat models/gpt/reference_loss.txt))"
echo "   gradients within 1e-4 relative of PyTorch: $(grep -c ': ok' "$OUT/gradients.txt") of $(grep -c 'grad of' "$OUT/gradients.txt")"
grep 'grad of' "$OUT/gradients.txt" | sort -t= -k2 -g | tail -1 | sed 's/^ */   worst: /'

echo "== 4. training step with AdamW (warm-up + cosine schedule)"
"$BIN/ptrain-opt" "$OUT/gpt.mlir" --ptrain-build-training-step -o "$OUT/gpt-train.mlir"
echo "   $OUT/gpt-train.mlir: $(grep -c 'ptrain.adamw' "$OUT/gpt-train.mlir") AdamW updates, $(grep -c 'kind optimizer_moment' "$OUT/gpt-train.mlir") moment states"

echo "== 5. compile: pp=2, 4 micro-batches, 1F1B, policy optimus-cc, CPU target"
COMPILE=("$BIN/ptrain-compile" "$MODEL" --pp 2 --micro-batches 4 --schedule 1f1b --lr 3e-3 --warmup-steps 10
  --total-steps "$STEPS" --target cpu)
"${COMPILE[@]}" --policy optimus-cc -o "$OUT/pp2"
echo "   $OUT/pp2: $(ls "$OUT/pp2" | tr '\n' ' ')"
/usr/bin/python3 - "$OUT/pp2/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
print(f"   policy {plan['policy']}; codec states: " +
      ", ".join(f"{s['key']} {'x'.join(map(str, s['shape']))}" for s in plan["codec_states"]))
PY

echo "== 6. train under mpirun -np 2 on Python standard-library source"
/usr/bin/python3 python/ptrain/data.py --out "$OUT/data" --max-bytes 2000000
"$BIN/ptrain-run" "$OUT/pp2" --data "$OUT/data" --steps "$STEPS" --val-every 50 --checkpoint "$OUT/pp2/checkpoint" \
  --log "$OUT/pp2/train-log.json" --telemetry-every 10

echo "== 7. bytes per link against the same plan without compression (one step)"
"${COMPILE[@]}" -o "$OUT/pp2-none"
"$BIN/ptrain-run" "$OUT/pp2-none" --data "$OUT/data" --steps 1 --val-batches 1 --log "$OUT/pp2-none/log.json" \
  --no-plots > "$OUT/pp2-none/run.txt" 2>&1
/usr/bin/python3 - "$OUT/pp2/train-log.json" "$OUT/pp2-none/log.json" <<'PY'
import json, sys
occ, none = (json.load(open(p)) for p in sys.argv[1:3])
per_step = lambda log, link: log["traffic"][link]["bytes"] / (log["steps"] - log["start_step"])
for link in occ["traffic"]:
    a, b = per_step(occ, link), per_step(none, link)
    print(f"   {link:<18} {b:>10,.0f} B/step uncompressed -> {a:>10,.0f} B/step optimus-cc ({a / b:.3f}x)")
PY

echo "== run log (JSON lines: loss, val loss, bytes per link, codec telemetry per site) and plots"
echo "   $OUT/pp2/run.jsonl"
ls "$OUT"/pp2/run-*.png 2>/dev/null | sed 's/^/   /' || true
