// --ptrain-pipeline runs exactly the pass chain ptrain-compile ran as flag strings (issue 28, item 1): the same
// step.mlir, byte for byte, from one option set in which micro-batches, dp and tp appear once.
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx --mlir-print-debuginfo -o %t.forward.mlir

// A pipeline with 1F1B: split, step, schedule, lowering, verification.
// RUN: ptrain-opt %t.forward.mlir --ptrain-split-stages="pp=2 virtual-stages=1" --ptrain-build-training-step="optimizer=adamw lr=0.001 micro-batches=4 dp=1" --ptrain-schedule="micro-batches=4 schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan --mlir-print-debuginfo -o %t.pp.flags.mlir
// RUN: ptrain-opt %t.forward.mlir --ptrain-pipeline="pp=2 micro-batches=4 lr=0.001" --mlir-print-debuginfo -o %t.pp.pipeline.mlir
// RUN: diff %t.pp.flags.mlir %t.pp.pipeline.mlir

// 3D parallelism with Optimus-CC: raise and shard first, the critical path before compression, extra compress
// options in the pass's own syntax.
// RUN: ptrain-opt %t.forward.mlir --ptrain-raise --ptrain-shard-tp="tp=2" --ptrain-split-stages="pp=2 virtual-stages=1" --ptrain-build-training-step="micro-batches=2 dp=2" --ptrain-schedule="micro-batches=2 schedule=1f1b" --ptrain-critical-path="cluster=%S/../../clusters/h200-node.json" --ptrain-compress="policy=optimus-cc cb-rank=8" --ptrain-lower-to-runtime --ptrain-verify-plan --mlir-print-debuginfo -o %t.3d.flags.mlir
// RUN: ptrain-opt %t.forward.mlir --ptrain-pipeline="dp=2 tp=2 pp=2 micro-batches=2 policy=optimus-cc compress-options={cb-rank=8} cluster=%S/../../clusters/h200-node.json" --mlir-print-debuginfo -o %t.3d.pipeline.mlir
// RUN: diff %t.3d.flags.mlir %t.3d.pipeline.mlir

// A single-rank step is --ptrain-build-training-step alone.
// RUN: ptrain-opt %t.forward.mlir --ptrain-build-training-step="lr=0.001" --mlir-print-debuginfo -o %t.one.flags.mlir
// RUN: ptrain-opt %t.forward.mlir --ptrain-pipeline="lr=0.001" --mlir-print-debuginfo -o %t.one.pipeline.mlir
// RUN: diff %t.one.flags.mlir %t.one.pipeline.mlir

// ptrain-compile runs the pipeline: its step.mlir is --ptrain-pipeline's with the same options (ptrain-compile
// always writes the memory plan, which also annotates the train steps).
// RUN: rm -rf %t.out && %ptrain_build/bin/ptrain-compile %S/../../models/gpt/gpt.onnx --pp 2 --micro-batches 4 --lr 0.001 -o %t.out > /dev/null
// RUN: ptrain-opt %t.out/forward.mlir --ptrain-pipeline="pp=2 micro-batches=4 lr=0.001 warmup-steps=100 total-steps=2000 min-lr-ratio=0.1 weight-decay=0.1 memory-plan=%t.memory_plan.json" --mlir-print-debuginfo -o %t.compile.pipeline.mlir
// RUN: diff %t.out/step.mlir %t.compile.pipeline.mlir

// Combinations no single pass sees are the pipeline's errors.
// RUN: not ptrain-opt %t.forward.mlir --ptrain-pipeline="vocab-parallel=true" 2>&1 | FileCheck %s --check-prefix=VOCAB
// VOCAB: --ptrain-pipeline: vocab-parallel needs tp > 1 (got tp = 1)
// RUN: not ptrain-opt %t.forward.mlir --ptrain-pipeline="micro-batches=4 policy=optimus-cc" 2>&1 | FileCheck %s --check-prefix=NOTRAFFIC
// NOTRAFFIC: --ptrain-pipeline: policy = optimus-cc: compression needs traffic between ranks (pp, dp or tp > 1)
// RUN: not ptrain-opt %t.forward.mlir --ptrain-pipeline="pp=0" 2>&1 | FileCheck %s --check-prefix=DEGREE
// DEGREE: --ptrain-pipeline: dp = 1, tp = 1, pp = 0, micro-batches = 1: each must be at least 1
// A compress option the pass does not know is the pass's parse error, named as the pipeline's.
// RUN: not ptrain-opt %t.forward.mlir --ptrain-pipeline="pp=2 policy=optimus-cc compress-options={cb-rnk=8}" 2>&1 | FileCheck %s --check-prefix=COMPRESS
// COMPRESS: --ptrain-pipeline: compress-options: {{.+}}
// A value that does not parse: llvm::cl names the option on its own line, the pipeline says which options.
// RUN: not ptrain-opt %t.forward.mlir --ptrain-pipeline="pp=2 policy=optimus-cc compress-options={cb-rank=abc}" 2>&1 | FileCheck %s --check-prefix=VALUE
// VALUE: for the --cb-rank option: 'abc' value invalid
// VALUE: --ptrain-pipeline: compress-options: 'policy=optimus-cc cb-rank=abc' does not parse (the option is named above)
