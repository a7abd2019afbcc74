// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2" --ptrain-schedule --test-ptrain-timing="cluster=%S/../../clusters/h200-node.json" | FileCheck %s
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=2 virtual-stages=2" --ptrain-build-training-step="micro-batches=2" --ptrain-schedule="schedule=interleaved" --test-ptrain-timing="cluster=%S/../../clusters/h200-node.json" | FileCheck %s --check-prefix=INTER

// pp = 2, 1F1B, 2 micro-batches: every step of the plan with its ranks, start, end and slack (us). Stage 1
// posts its receive of micro-batch 1 only after FB0, so "send F1" starts when FB0 ends; the gradient of
// micro-batch 0 goes back at the same time on the other link direction; the tied-embedding all-reduce
// joins both ranks before the optimizer steps; the loss all-reduce (2 latencies of 3 us) after them ends
// the iteration.
// CHECK: iteration [[T:[0-9.]+]] us, bubble
// CHECK-NEXT: * F0 ranks 0 start 0.000 end [[F0:[0-9.]+]] slack 0.000
// CHECK-NEXT:   F1 ranks 0 start [[F0]] end {{[0-9.]+}} slack {{[1-9][0-9.]*}}
// CHECK-NEXT:   B0 ranks 0 start [[SB0:[0-9.]+]] end
// CHECK-NEXT: * B1 ranks 0 start [[SB1:[0-9.]+]] end [[EB1:[0-9.]+]] slack 0.000
// CHECK-NEXT: * O ranks 0 start [[SO:[0-9.]+]] end [[EO:[0-9.]+]] slack 0.000
// CHECK-NEXT: * FB0 ranks 1 start [[SFB0:[0-9.]+]] end [[EFB0:[0-9.]+]] slack 0.000
// CHECK-NEXT: * FB1 ranks 1 start [[SFB1:[0-9.]+]] end [[EFB1:[0-9.]+]] slack 0.000
// CHECK-NEXT:   O ranks 1 start [[SO]] end
// CHECK-NEXT: * send F0 0->1 ranks 0 1 start [[F0]] end [[SFB0]] slack 0.000
// CHECK-NEXT: * send F1 0->1 ranks 0 1 start [[EFB0]] end [[SFB1]] slack 0.000
// CHECK-NEXT:   send B0 1->0 ranks 1 0 start [[EFB0]] end [[SB0]] slack
// CHECK-NEXT: * send B1 1->0 ranks 1 0 start [[EFB1]] end [[SB1]] slack 0.000
// CHECK-NEXT: * tied all-reduce ranks 0 1 start [[EB1]] end [[SO]] slack 0.000
// CHECK-NEXT: * loss all-reduce ranks 0 1 start [[EO]] end [[T]] slack 0.000 duration 6.000
// CHECK: module attributes {{{.*}}ptrain.test.iteration_time = {{.*}} : f64

// Interleaved 1F1B, pp = 2 with 2 chunks per stage: the steps name their chunk; virtual stage 1 (rank 1,
// chunk 0) sends its activation to virtual stage 2 (rank 0, chunk 1) on the link 1 -> 0, which F0.1 waits
// for; the gradient goes back from B0.1 on rank 0 to rank 1 (once rank 1 has posted its receive, after
// FB1.1), where B0 waits for it.
// INTER: iteration {{[0-9.]+}} us, bubble
// INTER-NEXT: * F0 ranks 0 start 0.000
// INTER: F0.1 ranks 0 start [[SF01:[0-9.]+]] end
// INTER: B0.1 ranks 0 start
// INTER: FB1.1 ranks 1 start {{[0-9.]+}} end [[SEND:[0-9.]+]] slack
// INTER: B0 ranks 1 start [[SB0R1:[0-9.]+]] end
// INTER: send F0 1->0 ranks 1 0 start {{[0-9.]+}} end [[SF01]] slack
// INTER: send B0.1 0->1 ranks 0 1 start [[SEND]] end [[SB0R1]] slack
// INTER: tied all-reduce ranks 0 1
