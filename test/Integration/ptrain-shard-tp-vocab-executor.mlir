// Two steps of the vocabulary-parallel plans on the multi-rank executor give the one-rank losses (step 2
// depends on step 1's update, so on every gradient): the bundled GPT (vocabulary 256, tied) at tp = 2 and
// pp = 2 x tp = 4, and gpt2_megatron (vocabulary 10, untied head) at tp = 2 padded to 16. The token ids cover
// the whole vocabulary, so every rank owns some tokens and labels.
// RUN: %PYTHON -c "import random, struct; random.seed(3); open('%t.gpt.bin', 'wb').write(struct.pack('<2048q', *[random.randrange(256) for _ in range(2048)])); random.seed(5); open('%t.meg.bin', 'wb').write(struct.pack('<64q', *[random.randrange(10) for _ in range(64)]))"
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.gpt.mlir
// RUN: ptrain-opt %t.gpt.mlir --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=4 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime -o %t.ref.mlir
// RUN: ptrain-interpret %t.ref.mlir --multi-rank --tokens-file %t.gpt.bin --steps 2 --weights %S/../../models/gpt/gpt.onnx > %t.gpt.txt
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=2 vocab-parallel=true" --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=4 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o %t.tp2.mlir
// RUN: ptrain-interpret %t.tp2.mlir --multi-rank --tokens-file %t.gpt.bin --steps 2 --weights %S/../../models/gpt/gpt.onnx >> %t.gpt.txt
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=4 vocab-parallel=true" --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=4 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o %t.pp2tp4.mlir
// RUN: ptrain-interpret %t.pp2tp4.mlir --multi-rank --tokens-file %t.gpt.bin --steps 2 --weights %S/../../models/gpt/gpt.onnx >> %t.gpt.txt
// RUN: FileCheck %s --check-prefix=GPT < %t.gpt.txt
// RUN: ptrain-translate --import-onnx %shared/data/onnx/gpt2_megatron.onnx --bind batch_size=2,seq_len=8,past_seq_len=0 --signature auto -o %t.meg.mlir
// RUN: ptrain-opt %t.meg.mlir --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=2 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime -o %t.mref.mlir
// RUN: ptrain-interpret %t.mref.mlir --multi-rank --tokens-file %t.meg.bin --steps 2 --weights %shared/data/onnx/gpt2_megatron.onnx > %t.meg.txt
// RUN: ptrain-opt %t.meg.mlir --ptrain-raise --ptrain-shard-tp="tp=2 vocab-parallel=true vocab-multiple=4" --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=2 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o %t.mtp2.mlir
// RUN: ptrain-interpret %t.mtp2.mlir --multi-rank --tokens-file %t.meg.bin --steps 2 --weights %shared/data/onnx/gpt2_megatron.onnx >> %t.meg.txt
// RUN: FileCheck %s --check-prefix=MEG < %t.meg.txt

// GPT: step 1: loss [[L1:[0-9.]+]] on all 1 rank(s)
// GPT: step 2: loss [[L2:[0-9.]+]] on all 1 rank(s)
// GPT: step 1: loss [[L1]] on all 2 rank(s)
// GPT: step 2: loss [[L2]] on all 2 rank(s)
// GPT: step 1: loss [[L1]] on all 8 rank(s)
// GPT: step 2: loss [[L2]] on all 8 rank(s)

// MEG: step 1: loss [[M1:[0-9.]+]] on all 1 rank(s)
// MEG: step 2: loss [[M2:[0-9.]+]] on all 1 rank(s)
// MEG: step 1: loss [[M1]] on all 2 rank(s)
// MEG: step 2: loss [[M2]] on all 2 rank(s)
