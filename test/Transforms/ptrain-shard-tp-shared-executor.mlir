// Two steps of tp = 2 plans on the multi-rank executor give the one-rank losses (step 2 depends on step 1's
// update, so on every gradient) for exports whose parameters are read in several places: hf/bert-folded.onnx
// (the dynamo exporter's optimizer merged the zero biases into the embeddings' LayerNorm bias: it stays whole,
// the column-parallel biases take the rank's part with ptrain.tp_split, whose gradient all-gathers) and
// gpt-opset14.onnx (TorchScript's constant folding merged the two layers' equal Q|K|V biases: both readers
// slice it alike, so the one state is sliced in 3 groups).
// RUN: %PYTHON -c "import random, struct; random.seed(3); open('%t.gpt.bin', 'wb').write(struct.pack('<128q', *[random.randrange(256) for _ in range(128)])); random.seed(5); open('%t.bert.bin', 'wb').write(struct.pack('<64q', *[random.randrange(128) for _ in range(64)]))"
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/opset18+/hf/bert-folded.onnx --signature auto -o %t.bert.mlir 2>/dev/null
// RUN: ptrain-opt %t.bert.mlir --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=2 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime -o %t.bert.ref.mlir
// RUN: ptrain-interpret %t.bert.ref.mlir --multi-rank --tokens-file %t.bert.bin --steps 2 --weights %S/../Import/ONNX/opset18+/hf/bert-folded.onnx > %t.bert.txt
// RUN: ptrain-opt %t.bert.mlir --ptrain-raise --ptrain-shard-tp="tp=2" -o %t.bert.tp2.fwd.mlir 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --check-prefix=BERT-IR < %t.bert.tp2.fwd.mlir
// RUN: ptrain-opt %t.bert.tp2.fwd.mlir --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=2 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o %t.bert.tp2.mlir
// RUN: ptrain-interpret %t.bert.tp2.mlir --multi-rank --tokens-file %t.bert.bin --steps 2 --weights %S/../Import/ONNX/opset18+/hf/bert-folded.onnx >> %t.bert.txt
// RUN: FileCheck %s --check-prefix=BERT < %t.bert.txt
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/Inputs/exports/gpt-opset14.onnx --signature auto -o %t.gpt.mlir 2>/dev/null
// RUN: ptrain-opt %t.gpt.mlir --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=2 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime -o %t.gpt.ref.mlir
// RUN: ptrain-interpret %t.gpt.ref.mlir --multi-rank --tokens-file %t.gpt.bin --steps 2 --weights %S/../Import/ONNX/Inputs/exports/gpt-opset14.onnx > %t.gpt.txt
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=2" -o %t.gpt.tp2.fwd.mlir
// RUN: FileCheck %s --check-prefix=GPT-IR < %t.gpt.tp2.fwd.mlir
// RUN: ptrain-opt %t.gpt.tp2.fwd.mlir --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=2 lr=0.001 warmup-steps=1" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o %t.gpt.tp2.mlir
// RUN: ptrain-interpret %t.gpt.tp2.mlir --multi-rank --tokens-file %t.gpt.bin --steps 2 --weights %S/../Import/ONNX/Inputs/exports/gpt-opset14.onnx >> %t.gpt.txt
// RUN: FileCheck %s --check-prefix=GPT < %t.gpt.txt

// REMARK: remark: --ptrain-shard-tp: parameter 'model.bert.embeddings.LayerNorm.bias' is read whole elsewhere too
// BERT-IR: ptrain.state @model.bert.embeddings.LayerNorm.bias key "model.bert.embeddings.LayerNorm.bias" kind parameter : tensor<32xf32>
// BERT-IR-COUNT-6: ptrain.tp_split %{{.*}} on @grid axis tp dim 0 : tensor<32xf32> -> tensor<16xf32>
// BERT-IR-NOT: ptrain.tp_split

// GPT-IR: ptrain.state @blocks.0.attn.qkv.bias key "blocks.0.attn.qkv.bias" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 3, shape = [96]>} : tensor<48xf32>
// GPT-IR-NOT: ptrain.tp_split
// GPT-IR-COUNT-2: ptrain.state_read @blocks.0.attn.qkv.bias : tensor<48xf32>
// GPT-IR-NOT: ptrain.tp_split

// BERT: step 1: loss [[B1:[0-9.]+]] on all 1 rank(s)
// BERT: step 2: loss [[B2:[0-9.]+]] on all 1 rank(s)
// BERT: step 1: loss [[B1]] on all 2 rank(s)
// BERT: step 2: loss [[B2]] on all 2 rank(s)

// GPT: step 1: loss [[G1:[0-9.]+]] on all 1 rank(s)
// GPT: step 2: loss [[G2:[0-9.]+]] on all 1 rank(s)
// GPT: step 1: loss [[G1]] on all 2 rank(s)
// GPT: step 2: loss [[G2]] on all 2 rank(s)
