// ptrain-interpret on a hand-written linear layer whose two parameters come from Inputs/linear.onnx (`w` as
// float_data, `b` as raw_data); inputs and reference outputs are TensorProto files written by
// Inputs/make_inputs.py.
// RUN: split-file %s %t

// The result matches the numpy reference; weights default to the module's ptrain.onnx_file (relative to the
// current directory).
// RUN: cd %S && ptrain-interpret %t/linear.mlir --input Inputs/linear_input.pb \
// RUN:   --expect Inputs/linear_output.pb --atol 1e-6 --print-summary | FileCheck %s --check-prefix=LINEAR
// y = [[-2.375, 6.75], [-6.625, 13.375]] (x @ w + b by hand).
// LINEAR: @forward: 1 result(s)
// LINEAR-NEXT: result 0: tensor<2x2xf32> max|x| = 1.337500e+01
// LINEAR-NEXT: max|x - expected| = 0.000000e+00 (atol 1.0e-06): ok
// LINEAR: summary: ops evaluated
// LINEAR-DAG: ptrain.matmul 1
// LINEAR-DAG: ptrain.state_read 2
// LINEAR: summary: states loaded from Inputs/linear.onnx
// LINEAR-NEXT: 'w' tensor<3x2xf32>
// LINEAR-NEXT: 'b' tensor<2xf32>

// Without --expect only the shapes and magnitudes are printed; --weights overrides the attribute.
// RUN: ptrain-interpret %t/linear.mlir --weights %S/Inputs/linear.onnx --input %S/Inputs/linear_input.pb \
// RUN:   | FileCheck %s --check-prefix=NOEXPECT
// NOEXPECT: result 0: tensor<2x2xf32> max|x| = 1.337500e+01
// NOEXPECT-NOT: expected

// A reference that differs by more than --atol fails with exit code 1 (@shifted adds 1).
// RUN: not ptrain-interpret %t/linear.mlir --weights %S/Inputs/linear.onnx --input %S/Inputs/linear_input.pb \
// RUN:   --expect %S/Inputs/linear_input.pb 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: result 0 is tensor<2x2xf32> but '{{.*}}linear_input.pb' holds tensor<2x3xf32>
// RUN: not ptrain-interpret %t/linear.mlir --weights %S/Inputs/linear.onnx --input %S/Inputs/linear_input.pb \
// RUN:   --expect %S/Inputs/linear_output.pb --atol 0 --entry shifted 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: max|x - expected| = 1.000000e+00 (atol 0.0e+00): MISMATCH
// MISMATCH: error: a result differs from its expectation by more than --atol 0{{$}}

// Bad inputs: a wrongly shaped argument, a missing argument, a missing file.
// RUN: not ptrain-interpret %t/linear.mlir --weights %S/Inputs/linear.onnx --input %S/Inputs/linear_bad_input.pb \
// RUN:   2>&1 | FileCheck %s --check-prefix=BADSHAPE
// BADSHAPE: error: argument 0 of @forward is tensor<2x3xf32>, got tensor<3x3xf32>
// RUN: not ptrain-interpret %t/linear.mlir --weights %S/Inputs/linear.onnx 2>&1 | FileCheck %s --check-prefix=NOARG
// NOARG: error: @forward takes 1 arguments, got 0
// RUN: not ptrain-interpret %t/linear.mlir --weights %S/Inputs/linear.onnx --input %t/nonexistent.pb 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOFILE
// NOFILE: error: {{.*}}nonexistent.pb: cannot read:
// RUN: not ptrain-interpret %t/linear.mlir --weights %t/nonexistent.onnx 2>&1 | FileCheck %s --check-prefix=NOMODEL
// NOMODEL: error: {{.*}}nonexistent.onnx: cannot read:
// A file that is not protobuf.
// RUN: not ptrain-interpret %t/linear.mlir --weights %t/linear.mlir 2>&1 | FileCheck %s --check-prefix=NOTONNX
// NOTONNX: error: {{.*}}linear.mlir: not a valid ONNX model: the ModelProto at byte {{[0-9]+}} has

// A state whose key is not an initializer: the error names the op, its location, the model and the key.
// RUN: not ptrain-interpret %t/missing-key.mlir --input %S/Inputs/linear_input.pb 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING
// MISSING: error: {{.*}}missing-key.mlir:{{[0-9]+}}:10: 'ptrain.state_read': state @w (key 'lin.w'): Inputs/linear.onnx: no initializer named 'lin.w'

// An op the interpreter does not know.
// RUN: not ptrain-interpret %t/unknown-op.mlir --weights %S/Inputs/linear.onnx --input %S/Inputs/linear_input.pb \
// RUN:   2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: {{.*}}unknown-op.mlir:{{[0-9]+}}:8: 'math.absf': the reference interpreter has no rule for this op

// A step that writes its states (an optimizer's) is the multi-rank executor's: the error says so.
// RUN: not ptrain-interpret %t/state-write.mlir --weights %S/Inputs/linear.onnx --input %S/Inputs/linear_input.pb 2>&1 | FileCheck %s --check-prefix=WRITE
// WRITE: error: {{.*}}state-write.mlir:{{[0-9]+}}:5: 'ptrain.state_write': a training step writes its states (the optimizer's updates): run it with ptrain-interpret --multi-rank

// A tolerance that is negative or NaN, and --steps below 1, are errors naming the option: a negative --atol was
// a MISMATCH of correct results, a negative --expect-rtol one blamed on --atol, --steps 0 ran nothing with status 0.
// RUN: not ptrain-interpret %t/linear.mlir --weights %S/Inputs/linear.onnx --input %S/Inputs/linear_input.pb \
// RUN:   --expect %S/Inputs/linear_output.pb --atol -1 2>&1 | FileCheck %s --check-prefix=ATOL
// RUN: not ptrain-interpret %t/linear.mlir --weights %S/Inputs/linear.onnx --input %S/Inputs/linear_input.pb \
// RUN:   --expect %S/Inputs/linear_output.pb --expect-rtol nan 2>&1 | FileCheck %s --check-prefix=RTOL
// RUN: not ptrain-interpret %t/linear.mlir --multi-rank --random-tokens 1 --steps 0 2>&1 | FileCheck %s --check-prefix=STEPS
// ATOL: ptrain-interpret: error: --atol -1: a tolerance must be a finite number >= 0
// ATOL-NOT: MISMATCH
// RTOL: ptrain-interpret: error: --expect-rtol nan: a tolerance must be a finite number >= 0
// STEPS: ptrain-interpret: error: --steps 0: must be at least 1

// --help lists the tool's options, not LLVM's code generator flags (it printed 398 lines, --input among
// --amdgpu-* and --x86-*); those are still accepted.
// RUN: ptrain-interpret --help | FileCheck %s --check-prefix=HELP
// HELP-NOT: amdgpu
// HELP: ptrain-interpret options:
// HELP-DAG: --input=<file.pb>
// HELP-DAG: --expect-grads=<reference_grads.onnx>
// HELP-DAG: --multi-rank
// HELP-NOT: amdgpu

//--- linear.mlir
module attributes {ptrain.onnx_file = "Inputs/linear.onnx"} {
  ptrain.state @w key "w" kind parameter : tensor<3x2xf32>
  ptrain.state @b key "b" kind parameter : tensor<2xf32>
  func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
    %w = ptrain.state_read @w : tensor<3x2xf32>
    %b = ptrain.state_read @b : tensor<2xf32>
    %xw = ptrain.matmul %x, %w : tensor<2x3xf32>, tensor<3x2xf32>
    %y = ptrain.binary add %xw, %b : tensor<2x2xf32>, tensor<2xf32>
    return %y : tensor<2x2xf32>
  }
  func.func @shifted(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
    %w = ptrain.state_read @w : tensor<3x2xf32>
    %b = ptrain.state_read @b : tensor<2xf32>
    %xw = ptrain.matmul %x, %w : tensor<2x3xf32>, tensor<3x2xf32>
    %y = ptrain.binary add %xw, %b : tensor<2x2xf32>, tensor<2xf32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %s = ptrain.binary add %y, %one : tensor<2x2xf32>, tensor<f32>
    return %s : tensor<2x2xf32>
  }
}

//--- missing-key.mlir
module attributes {ptrain.onnx_file = "Inputs/linear.onnx"} {
  ptrain.state @w key "lin.w" kind parameter : tensor<3x2xf32>
  func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %w = ptrain.state_read @w : tensor<3x2xf32>
    return %x : tensor<2x3xf32>
  }
}

//--- state-write.mlir
module {
  ptrain.state @acc key "acc" kind optimizer_moment : tensor<2x3xf32>
  func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    ptrain.state_write %x to @acc : tensor<2x3xf32>
    return %x : tensor<2x3xf32>
  }
}

//--- unknown-op.mlir
func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = math.absf %x : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
