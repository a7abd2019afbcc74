// RUN: ptrain-translate --mlir-to-cpp %s | FileCheck %s

// ptrain-translate carries upstream's EmitC-to-C++ emitter, the base of the CPU target's --emit-cpp.

// CHECK: int32_t add(int32_t [[A:.*]], int32_t [[B:.*]]) {
emitc.func @add(%a: i32, %b: i32) -> i32 {
  // CHECK: int32_t [[S:.*]] = [[A]] + [[B]];
  %s = emitc.add %a, %b : (i32, i32) -> i32
  // CHECK: return [[S]];
  emitc.return %s : i32
}
