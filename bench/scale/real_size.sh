#!/usr/bin/env bash
# Real-size benchmarks of issues 21 and 23 (bench/README.md, "scale"): export, ptrain-compile (its phases from
# out/phases.json), the generated code's size and, with STEPS > 0, a CPU training run with per-rank RSS sampled
# every second from ps.
#
# Usage (repository root, after scripts/build.sh build):
#   bash bench/scale/real_size.sh NAME "EXPORT ARGS" "COMPILE ARGS" [STEPS]
# e.g.
#   bash bench/scale/real_size.sh gpt2s-pp2 "--layers 12 --width 768 --heads 12 --seq 1024 --vocab 50257 --batch 4" \
#        "--pp 2 --micro-batches 4" 3
# Everything goes to ${SCALE_DIR:-/tmp/rs}/NAME* ; the model export is reused when ${SCALE_DIR}/MODEL/gpt.onnx exists,
# MODEL being the export arguments with blanks and dashes squeezed. Times are wall times on whatever machine
# this runs on: the script records `lscpu` model name and the load average before and after each phase.
set -euo pipefail
name=$1 export_args=$2 compile_args=$3 steps=${4:-0}
dir=${SCALE_DIR:-/tmp/rs}
model=$dir/model$(echo "$export_args" | tr -d ' -')
out=$dir/$name
log=$dir/$name${RUN_ONLY:+.run}.summary.txt
mkdir -p "$dir"
load() { cut -d' ' -f1-3 /proc/loadavg; }
{
  echo "== $name $(date -u +%FT%TZ) $(lscpu | grep 'Model name' | sed 's/  */ /g')"
  echo "export: $export_args"
  echo "compile: $compile_args"
} > "$log"
if [ ! -f "$model/gpt.onnx" ]; then
  echo "load before export: $(load)" >> "$log"
  PYTHONPATH=python /usr/bin/time -v -o "$model.export.time" /usr/bin/python3 bench/scale/export_gpt.py \
    --out "$model" $export_args >> "$log"
  grep -E 'Elapsed|Maximum resident' "$model.export.time" | sed 's/^\s*/export /' >> "$log"
  echo "load after export: $(load)" >> "$log"
fi
ls -l "$model" | sed 's/^/model file: /' >> "$log"
if [ -z "${RUN_ONLY:-}" ]; then  # RUN_ONLY=1: train the existing $out, compiled by an earlier call
echo "load before compile: $(load)" >> "$log"
/usr/bin/time -v -o "$out.compile.time" build/bin/ptrain-compile "$model/gpt.onnx" $compile_args --target cpu \
  -o "$out" > "$out.compile.log" 2>&1 || { echo "ptrain-compile FAILED (see $out.compile.log)" >> "$log"; tail -20 "$out.compile.log" >> "$log"; exit 1; }
echo "load after compile: $(load)" >> "$log"
grep -E 'Elapsed|Maximum resident|User time|System time' "$out.compile.time" | sed 's/^\s*/ptrain-compile /' >> "$log"
echo "phases.json: $(cat "$out/phases.json")" >> "$log"
echo "step.cpp: $(wc -l < "$out/step.cpp") lines, $(stat -c %s "$out/step.cpp") bytes" >> "$log"
echo "libstep.so: $(stat -c %s "$out/libstep.so") bytes; $(size -A "$out/libstep.so" | awk '$1==".text"{print ".text " $2 " bytes"}')" >> "$log"
ls -l "$out" | sed 's/^/out: /' >> "$log"
fi
if [ "$steps" -gt 0 ]; then
  data=$dir/data
  [ -f "$data/data.json" ] || /usr/bin/python3 python/ptrain/data.py --out "$data" --max-bytes 2000000 > /dev/null
  echo "load before run: $(load)" >> "$log"
  ( while sleep 1; do ps -C python3,ptrain-run -o pid=,rss=,args= 2>/dev/null | grep -- "--worker $out " || true; done ) > "$out.rss.txt" &
  sampler=$!
  /usr/bin/time -v -o "$out.run.time" build/bin/ptrain-run "$out" --data "$data" --steps "$steps" --val-batches 1 \
    --timeout 3600 --log "$out.run.json" --memory-log "$out.mem" --no-plots --no-tensorboard > "$out.run.log" 2>&1 \
    || echo "ptrain-run FAILED (see $out.run.log)" >> "$log"
  kill "$sampler" 2>/dev/null || true
  echo "load after run: $(load)" >> "$log"
  grep -E 'Elapsed|Maximum resident|User time|System time' "$out.run.time" | sed 's/^\s*/ptrain-run /' >> "$log"
  awk '{if ($2 > m[$1]) m[$1] = $2} END {for (p in m) printf "peak RSS of worker pid %s: %d KiB\n", p, m[p]}' \
    "$out.rss.txt" >> "$log"
  tail -30 "$out.run.log" | sed 's/^/run: /' >> "$log"
fi
cat "$log"
