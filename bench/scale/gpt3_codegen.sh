#!/usr/bin/env bash
# Code generation and the C++ compile of the training step of a GPT shape too big to export (issue 23,
# "Benchmarks": the GPT-3-175B shape, 96 x 12288, dp8 tp8 pp16, 64 micro-batches), without weights: the L0
# model comes from python/ptrain_fixtures/gen_gpt_mlir.py (parameter declarations only, no ONNX file and no
# weight file), then the same three tools ptrain-compile runs after its import (python/ptrain/compile.py):
# ptrain-opt --ptrain-pipeline, ptrain-translate --emit-cpp, c++ -O2 -shared. Each phase under /usr/bin/time -v.
#
# Usage (repository root, after scripts/build.sh build):
#   bash bench/scale/gpt3_codegen.sh OUT LAYERS HIDDEN HEADS SEQ VOCAB BATCH DP TP PP MICRO_BATCHES
#   bash bench/scale/gpt3_codegen.sh /tmp/rs/gpt3 96 12288 96 2048 51200 64 8 8 16 64   # GPT-3 175B shape
# BATCH is the batch dimension of @forward (the micro-batches split it). Summary in OUT.summary.txt.
set -euo pipefail
out=$1 layers=$2 hidden=$3 heads=$4 seq=$5 vocab=$6 batch=$7 dp=$8 tp=$9 pp=${10} mb=${11}
mkdir -p "$out"
log=$out.summary.txt
load() { cut -d' ' -f1-3 /proc/loadavg; }
phase() {  # phase NAME COMMAND...
  local name=$1; shift
  echo "load before $name: $(load)" >> "$log"
  /usr/bin/time -v -o "$out/$name.time" "$@" > "$out/$name.log" 2>&1 \
    || { echo "$name FAILED:"; tail -20 "$out/$name.log"; } >> "$log"
  grep -E 'Elapsed|Maximum resident|User time|Exit status' "$out/$name.time" | sed "s/^\s*/$name /" >> "$log"
}
echo "== $out $(date -u +%FT%TZ) $(lscpu | grep 'Model name' | sed 's/  */ /g'): $layers x $hidden, $heads heads," \
     "seq $seq, vocab $vocab, batch $batch; dp $dp tp $tp pp $pp, $mb micro-batches" > "$log"
phase generate /usr/bin/python3 python/ptrain_fixtures/gen_gpt_mlir.py --layers "$layers" --hidden "$hidden" \
  --heads "$heads" --seq "$seq" --vocab "$vocab" --micro-batch "$batch" --grid "dp=$dp,pp=$pp,tp=$tp" \
  -o "$out/forward.mlir"
opts="optimizer=adamw dp=$dp tp=$tp pp=$pp micro-batches=$mb schedule=1f1b memory-plan=$out/memory_plan.json"
phase pipeline build/bin/ptrain-opt "$out/forward.mlir" "--ptrain-pipeline=$opts" -o "$out/step.mlir"
phase emit-cpp build/bin/ptrain-translate --emit-cpp "$out/step.mlir" -o "$out/step.cpp" \
  "--emit-cpp-constants=$out/step.consts.bin"
phase cxx c++ -std=c++17 -O2 -shared -fPIC -Wall -Werror -Iinclude "$out/step.cpp" -o "$out/libstep.so" \
  -Lbuild/lib/Runtime -lptrain_runtime -Wl,-rpath,"$PWD/build/lib/Runtime" -Wl,--no-undefined
for f in forward.mlir step.mlir step.cpp step.consts.bin libstep.so; do
  [ -f "$out/$f" ] && echo "$f: $(stat -c %s "$out/$f") bytes$(case $f in *.cpp|*.mlir) echo ", $(wc -l < "$out/$f") lines";; esac)" >> "$log"
done
[ -f "$out/libstep.so" ] && size -A "$out/libstep.so" | awk '$1==".text"||$1==".data"||$1==".bss"{print "libstep.so " $1 " " $2 " bytes"}' >> "$log"
cat "$log"
