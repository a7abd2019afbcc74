// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-opt %t.mlir --ptrain-split-stages="pp=4" --ptrain-build-training-step="micro-batches=8" --ptrain-schedule --ptrain-report="cluster=%S/../../clusters/h200-node.json json=%t.json trace=%t.trace.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
// RUN: %PYTHON -c "import json,sys; t=json.load(open(sys.argv[1])); ev=[e for e in t['traceEvents'] if e['ph']=='X']; assert len(ev)==3*17+9+2*3*8+4+4, len(ev); print('events', len(ev))" %t.trace.json | FileCheck %s --check-prefix=COUNT
// RUN: not ptrain-opt %t.mlir --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2" --ptrain-schedule --ptrain-report="cluster=%S/../../clusters/h200-node.json json=%t.nodir/r.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOWRITE

// The readable report on stderr: configuration, iteration time and bubble, time split, traffic per link
// kind, critical path, memory per device.
// CHECK: === ptrain plan report ===
// CHECK-NEXT: cluster h200-node: 1 nodes x 8 H200-SXM-141GB
// CHECK-NEXT: grid dp=1 tp=1 pp=4, schedule 1f1b, 8 micro-batches
// CHECK-NEXT: iteration time {{[0-9.]+}} ms, bubble {{[0-9.]+}} (bubble time / ideal time; (p-1)/m = 0.3750)
// CHECK: time split per stage (ms)
// CHECK-NEXT: stage    compute  exposed-comm   bubble/idle   F step     B step
// CHECK-COUNT-4: {{^ +[0-3] +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$}}
// CHECK: bytes sent per iteration by one GPU of each stage
// CHECK: total {{.*}}MiB {{.*}}0.00 B
// CHECK: critical path ({{[0-9]+}} steps): F0@0 send F0 0->1 F0@1
// CHECK-SAME: B7@0 tied all-reduce O@0
// CHECK-NEXT: critical backward sends: {{.*}}[send B7 1->0]
// CHECK-NEXT: critical dp all-reduces (stages): none
// CHECK: memory per device (capacity 131.32 GiB)
// CHECK-COUNT-4: {{^ +[0-3] +[0-9.]+ [KMG]?i?B}}

// JSON: "bubble":
// JSON: "critical_backward_sends": [
// JSON: "critical_dp_all_reduces": []
// JSON: "critical_path": [
// JSON-NEXT: "F0@0",
// JSON: "grid": {
// JSON-NEXT: "dp": 1,
// JSON-NEXT: "pp": 4,
// JSON-NEXT: "tp": 1
// JSON: "iteration_time_s":
// JSON: "micro_batches": 8,
// JSON: "schedule": "1f1b",
// JSON: "stages": [
// JSON: "memory": {
// JSON: "fits": true,

// One process per stage, four named threads, complete events with slack and critical flag.
// TRACE: "traceEvents": [
// TRACE: "name": "stage 0 (one of 1 dp x tp ranks)"
// TRACE: "name": "compute stream"
// TRACE: "bytes": 0,
// TRACE-NEXT: "critical": true,
// TRACE-NEXT: "slack_us": 0
// TRACE-NEXT: },
// TRACE-NEXT: "cat": "compute",
// TRACE-NEXT: "dur":
// TRACE-NEXT: "name": "F0",
// TRACE-NEXT: "ph": "X",
// TRACE-NEXT: "pid": 0,
// TRACE-NEXT: "tid": 0,
// TRACE-NEXT: "ts": 0

// 17 compute steps on stages 0-2 (8 F, 8 B, O), 9 on stage 3 (8 FB, O), 8 transfers each way on 3 links,
// and the tied-embedding and loss all-reduces on each of the 4 ranks' communication streams.
// COUNT: events 116

// NOWRITE: error: --ptrain-report: cannot write the report to '{{.*}}r.json'
