// RUN: ptrain-opt %s --split-input-file | FileCheck %s
// RUN: ptrain-opt %s --split-input-file | ptrain-opt --split-input-file | FileCheck %s

// The typed plan attributes round-trip (PTrainAttrs.td, PTrainPlanAttrs.h).

// A fused Q|K|V weight sliced by columns in 3 groups: the default padded is not printed.
// CHECK-LABEL: ptrain.state @qkv
// CHECK-SAME: {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [8, 24]>} : tensor<8x12xf32>
ptrain.state @qkv key "h.0.attn.c_attn.weight" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [8, 24]>} : tensor<8x12xf32>

// -----

// A vocabulary of 9 padded to 10 rows, 5 per rank.
// CHECK-LABEL: ptrain.state @wte
// CHECK-SAME: {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [9, 4], padded = 10>} : tensor<5x4xf32>
ptrain.state @wte key "wte" kind parameter
    {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [9, 4], padded = 10>} : tensor<5x4xf32>
