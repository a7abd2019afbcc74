// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=1" --ptrain-build-training-step="micro-batches=4 dp=2" --ptrain-schedule --ptrain-critical-path="cluster=%S/../Transforms/Inputs/cpu-1gbit-calibrated.json" -o %t.plan.mlir
// RUN: ptrain-opt %t.plan.mlir --ptrain-compress="policy=mcbench dp-codec=quant:bits=8" --ptrain-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=QUANT
// RUN: ptrain-opt %t.plan.mlir --ptrain-compress="policy=mcbench dp-codec=bf16" --ptrain-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=CAST
// RUN: ptrain-opt %t.plan.mlir --ptrain-compress="policy=optimus-cc" --ptrain-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXACT

// The compressed dp all-reduce of the bundled GPT at dp = 2 on bench/cluster's emulated 1 Gbit/s cluster as
// ptrain-calibrate measured it (codec kernel times, the link by message size, OpenMPI's binomial all-reduce).
// The codec calibration (measured / modelled kernel time) scales the codec kernels only, never the rounds' bytes
// or link time (issue 25, bench/README.md "dp and TP sites"): 8-bit quantization all-gathers its codes,
// 834,304 code bytes plus a scale and zero point per block, whatever the quantization kernel's speed (it
// was 3.18 MiB, the codes scaled by that kernel's calibration factor).
// QUANT: dp all-reduce stage 0: #ptrain.quant<bits = 8> on 52 gradients, 0 exact, 3.18 MiB -> 856.75 KiB, comm 55.775 -> 9.080 ms

// The bf16 cast: an all-to-all of the 2-byte codes, then an all-gather of the fp32 sums (2 N + 2 N bytes of
// data per rank for N elements: as many bytes as fp32, in two rounds of half the buffer each way).
// CAST: dp all-reduce stage 0: #ptrain.cast<bf16> on 52 gradients, 0 exact, 3.18 MiB -> 3.18 MiB, comm 55.775 -> 25.457 ms

// optimus-cc's SC at rank 128 takes PowerSGD's exact path on every matrix of the 128-wide model: 52
// all-reduces of the gradients themselves, each timed as the cluster's binomial all-reduce (two whole-buffer
// messages), as the bucketed one is; before, they were timed as a ring of half-buffer messages and with the
// code bytes scaled by PowerSGD's kernel calibration: 16.766 ms. The 52 are still cheaper than the bucket here
// because the link table prices a small message faster per byte than a large one (tbf's burst).
// EXACT: dp all-reduce stage 0: #ptrain.powersgd<rank = 128> (clamped to min(n, m)) on 0 gradients, 52 exact, 3.18 MiB -> 3.18 MiB, comm 55.775 -> 45.394 ms
