// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// The constraints of the typed plan attributes (PTrainAttrs.td; lib/Dialect/PTrain/IR/PTrainPlanAttrs.cpp).

// TPSlice (C1): a grid axis.
// expected-error@+1 {{tp_slice needs a grid axis}}
func.func private @tp_slice_c1() attributes {s = #ptrain.tp_slice<axis = "", dim = 0, groups = 1, shape = [4]>}

// -----

// TPSlice (C2): sizes >= 1 (an empty shape, which the parser cannot make, is unittests/Dialect/PlanAttrTest.cpp's).
// expected-error@+1 {{tp_slice shape must be a non-empty list of sizes >= 1}}
func.func private @tp_slice_c2_size() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [4, 0]>}

// -----

// TPSlice (C3): dim is a dimension of the shape.
// expected-error@+1 {{tp_slice dim 2 is not a dimension of the rank-2 shape}}
func.func private @tp_slice_c3() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 2, groups = 1, shape = [4, 4]>}

// -----

// TPSlice (C4): groups >= 1.
// expected-error@+1 {{tp_slice groups 0 must be >= 1 and divide shape[0] = 4}}
func.func private @tp_slice_c4_zero() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 0, shape = [4]>}

// -----

// TPSlice (C4): groups divide the sliced size.
// expected-error@+1 {{tp_slice groups 3 must be >= 1 and divide shape[0] = 4}}
func.func private @tp_slice_c4_divide() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 3, shape = [4]>}

// -----

// TPSlice (C5): padded is at least the size.
// expected-error@+1 {{tp_slice padded 8 must be >= shape[0] = 9, with groups 1}}
func.func private @tp_slice_c5_short() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [9], padded = 8>}

// -----

// TPSlice (C5): a padded slice is one group.
// expected-error@+1 {{tp_slice padded 10 must be >= shape[0] = 8, with groups 1}}
func.func private @tp_slice_c5_groups() attributes {s = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 2, shape = [8], padded = 10>}

// -----

// (C6) ptrain.tp_slice is a #ptrain.tp_slice.
// expected-error@+1 {{'ptrain.tp_slice' must be a #ptrain.tp_slice, got {axis = "tp"}}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = {axis = "tp"}} : tensor<4x4xf32>

// -----

// (C7) on a ptrain.state.
// expected-error@+1 {{'ptrain.tp_slice' belongs on a ptrain.state}}
func.func private @f() attributes {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [4]>}

// -----

// (C8) the state has the slice's rank.
// expected-error@+1 {{'ptrain.tp_slice' shape has rank 1, the state 2}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [8]>} : tensor<4x4xf32>

// -----

// (C8) every dimension but dim is the sliced tensor's.
// expected-error@+1 {{'ptrain.tp_slice' dimension 1 of the state (1) differs from the sliced tensor's (2)}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [3, 2]>} : tensor<3x1xf32>

// -----

// (C9) the local size is a multiple of groups.
// expected-error@+1 {{'ptrain.tp_slice' the state's size 3 in dimension 0 must be a multiple of groups (2) and divide 12}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 2, shape = [12, 4]>} : tensor<3x4xf32>

// -----

// (C9) the local size divides the (padded) global size.
// expected-error@+1 {{'ptrain.tp_slice' the state's size 4 in dimension 0 must be a multiple of groups (1) and divide 6}}
ptrain.state @w key "w" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [6, 4]>} : tensor<4x4xf32>
