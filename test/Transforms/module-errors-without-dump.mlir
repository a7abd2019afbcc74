// A pass error about the whole module names the module's location only; it does not attach the module
// ("see current operation" printed all of it, thousands of lines for the bundled GPT's plan).
// RUN: not ptrain-opt %s --ptrain-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=LOWER --implicit-check-not="see current operation"
// RUN: not ptrain-opt %s --ptrain-verify-plan 2>&1 | FileCheck %s --check-prefix=VERIFY --implicit-check-not="see current operation"
// RUN: not ptrain-opt %s --ptrain-print-schedule 2>&1 | FileCheck %s --check-prefix=PRINT --implicit-check-not="see current operation"

// LOWER: error: --ptrain-lower-to-runtime: no ptrain.pipeline attribute
// VERIFY: error: --ptrain-verify-plan: no function with ptrain.entry = "train" or "eval"
// PRINT: error: --ptrain-print-schedule: no ptrain.schedule

ptrain.state @w key "w" kind parameter : tensor<8x8xf32>

func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %w = ptrain.state_read @w : tensor<8x8xf32>
  %y = ptrain.matmul %x, %w : tensor<2x8xf32>, tensor<8x8xf32>
  return %y : tensor<2x8xf32>
}

// A function-level error names the function's location only (--ptrain-shard-tp without --ptrain-raise
// printed all of @forward in generic form).
// RUN: not ptrain-opt %s --ptrain-shard-tp=tp=2 2>&1 | FileCheck %s --check-prefix=SHARD --implicit-check-not="see current operation"
// RUN: not ptrain-opt %s --ptrain-raise 2>&1 | FileCheck %s --check-prefix=RAISE --implicit-check-not="see current operation"
// SHARD: error: --ptrain-shard-tp: @forward has no ptrain.layers: run --ptrain-raise first
// RAISE: error: --ptrain-raise: @forward has no attention (no ptrain.softmax)
