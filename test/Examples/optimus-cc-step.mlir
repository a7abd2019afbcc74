// RUN: ptrain-opt %S/../../examples/optimus-cc-step.mlir --canonicalize --cse | FileCheck %s

// The README's main-job example stays valid, and the canonicalizer keeps every send, receive, collective
// and state update of the compressed step.

// CHECK-LABEL: func.func @last_stage_backward_send
// CHECK: ptrain.compress {{.*}}#ptrain.powersgd<rank = 16>, error_feedback
// CHECK-COUNT-2: ptrain.state_write
// CHECK-COUNT-2: ptrain.send_start {{.*}} axis pp offset -1
// CHECK-LABEL: func.func @first_stage_backward_recv
// CHECK-COUNT-2: ptrain.recv_start from @grid axis pp offset 1
// CHECK: ptrain.decompress
// CHECK-LABEL: func.func @gradient_sync
// CHECK: ptrain.all_reduce_start {{.*}} axes [pp, dp] reduction = sum
// CHECK: ptrain.compressed_all_reduce_start {{.*}} axes [dp] reduction = avg {codec = #ptrain.powersgd<rank = 64>, error_feedback}
