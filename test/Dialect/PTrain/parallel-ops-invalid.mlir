// RUN: ptrain-opt %s --split-input-file --verify-diagnostics

// Grid (C1): at least one axis.
// expected-error@+1 {{needs at least one axis}}
ptrain.grid @grid()

// -----

// Grid (C2): sizes are >= 1.
// expected-error@+1 {{axis 'tp' has size 0; sizes must be >= 1}}
ptrain.grid @grid(dp = 2, tp = 0)

// -----

// Grid (C3): no axis name twice.
// expected-error@+1 {{names axis 'dp' twice}}
ptrain.grid @grid(dp = 2, dp = 4)

// -----

// Grid: as many names as sizes (only reachable in generic form).
// expected-error@+1 {{has 2 axis names but 1 sizes}}
"ptrain.grid"() <{sym_name = "grid", axis_names = ["dp", "tp"], shape = array<i64: 2>}> : () -> ()

// -----

// Distribute (C1): at most one split entry per dimension.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @distribute_c1(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{has 3 split entries but the input 'tensor<8x8xf32>' has only 2 dimensions}}
  %0 = ptrain.distribute %x on @grid split [[], [tp], [dp]] : tensor<8x8xf32> -> tensor<8x2xf32>
  return
}

// -----

// Distribute (C2): split axes are axes of the grid.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @distribute_c2(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{split axes name axis 'pp', but grid @grid has axes ["dp", "tp"]}}
  %0 = ptrain.distribute %x on @grid split [[pp]] : tensor<8x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Distribute (C2): the grid symbol names a ptrain.grid.
func.func @distribute_c2_grid(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{@nogrid does not name a ptrain.grid}}
  %0 = ptrain.distribute %x on @nogrid split [[tp]] : tensor<8x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// Distribute (C3): an axis splits at most one dimension, once.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @distribute_c3(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{splits over grid axis 'tp' twice}}
  %0 = ptrain.distribute %x on @grid split [[tp], [tp]] : tensor<8x8xf32> -> tensor<2x2xf32>
  return
}

// -----

// Distribute (C4): without pad, the group size divides the dimension.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @distribute_c4(%x: tensor<10x8xf32>) {
  // expected-error@+1 {{splits dimension 0 of size 10 over 4 ranks ["tp"], which does not divide it; add 'pad' to pad it with zeros}}
  %0 = ptrain.distribute %x on @grid split [[tp]] : tensor<10x8xf32> -> tensor<3x8xf32>
  return
}

// -----

// Distribute (C5): the result is the local block.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @distribute_c5(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{result type must be the local block 'tensor<8x2xf32>', got 'tensor<8x4xf32>'}}
  %0 = ptrain.distribute %x on @grid split [[], [tp]] : tensor<8x8xf32> -> tensor<8x4xf32>
  return
}

// -----

// Send (C1): the axis exists.
ptrain.grid @grid(dp = 2, pp = 4)
func.func @send_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{names axis 'tp', but grid @grid has axes ["dp", "pp"]}}
  %s = ptrain.send_start %x to @grid axis tp offset 1 : tensor<4xf32>
  ptrain.wait %s : !ptrain.request
  return
}

// -----

// Send (C2): offset is not 0.
ptrain.grid @grid(dp = 2, pp = 4)
func.func @send_c2_zero(%x: tensor<4xf32>) {
  // expected-error@+1 {{peer offset must not be 0 (a rank cannot send to itself)}}
  %s = ptrain.send_start %x to @grid axis pp offset 0 : tensor<4xf32>
  ptrain.wait %s : !ptrain.request
  return
}

// -----

// Send (C2): |offset| < axis size.
ptrain.grid @grid(dp = 2, pp = 4)
func.func @send_c2_range(%x: tensor<4xf32>) {
  // expected-error@+1 {{peer offset 4 is out of range for axis 'pp' of size 4}}
  %s = ptrain.send_start %x to @grid axis pp offset 4 : tensor<4xf32>
  ptrain.wait %s : !ptrain.request
  return
}

// -----

// Recv (C1): the grid exists.
func.func @recv_c1() {
  // expected-error@+1 {{@grid does not name a ptrain.grid}}
  %r = ptrain.recv_start from @grid axis pp offset -1 : !ptrain.request<tensor<4xf32>>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// Recv (C2): offset is not 0.
ptrain.grid @grid(pp = 4)
func.func @recv_c2() {
  // expected-error@+1 {{peer offset must not be 0 (a rank cannot receive from itself)}}
  %r = ptrain.recv_start from @grid axis pp offset 0 : !ptrain.request<tensor<4xf32>>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// Recv (C2): |offset| < axis size.
ptrain.grid @grid(pp = 4)
func.func @recv_c2_range() {
  // expected-error@+1 {{peer offset -5 is out of range for axis 'pp' of size 4}}
  %r = ptrain.recv_start from @grid axis pp offset -5 : !ptrain.request<tensor<4xf32>>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// Recv (C3): the request yields a tensor.
ptrain.grid @grid(pp = 4)
func.func @recv_c3() {
  // expected-error@+1 {{result #0 must be request yielding a ranked tensor}}
  %r = ptrain.recv_start from @grid axis pp offset -1 : !ptrain.request
  return
}

// -----

// Collective (C1): the grid symbol names a ptrain.grid, not another symbol.
ptrain.state @w key "w" kind parameter : tensor<4xf32>
func.func @collective_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{@w does not name a ptrain.grid}}
  %r = ptrain.all_reduce_start %x on @w axes [dp] reduction = sum : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// Collective (C2): every axis is an axis of the grid.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @collective_c2(%x: tensor<4xf32>) {
  // expected-error@+1 {{collective axes name axis 'pp', but grid @grid has axes ["dp", "tp"]}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp, pp] reduction = sum : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// Collective (C3): no axis twice.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @collective_c3(%x: tensor<4xf32>) {
  // expected-error@+1 {{collective axes name grid axis 'dp' twice}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp, dp] reduction = sum : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// All-reduce (C4): the subgroup is a dictionary with one entry, an axis -> array<i64>.
ptrain.grid @grid(dp = 2, pp = 4)
func.func @all_reduce_c4(%x: tensor<4xf32>) {
  // expected-error@+1 {{ptrain.subgroup must be a dictionary with one entry, a grid axis -> array<i64> of coordinates, got {pp = [0, 3]}}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = [0, 3]}} : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// All-reduce (C5): the subgroup's axis is one of the collective's axes.
ptrain.grid @grid(dp = 2, pp = 4)
func.func @all_reduce_c5(%x: tensor<4xf32>) {
  // expected-error@+1 {{subgroup axis 'pp' is not one of the collective axes ["dp"]}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// All-reduce (C6): an empty group.
ptrain.grid @grid(dp = 2, pp = 4)
func.func @all_reduce_c6_empty(%x: tensor<4xf32>) {
  // expected-error@+1 {{subgroup of axis 'pp' has no members}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64>}} : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// All-reduce (C6): members strictly increasing (no coordinate twice).
ptrain.grid @grid(dp = 2, pp = 4)
func.func @all_reduce_c6_twice(%x: tensor<4xf32>) {
  // expected-error@+1 {{subgroup members of axis 'pp' must be strictly increasing, got 3 before 3}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3, 3>}} : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// All-reduce (C6): members are non-negative.
ptrain.grid @grid(dp = 2, pp = 4)
func.func @all_reduce_c6_negative(%x: tensor<4xf32>) {
  // expected-error@+1 {{subgroup member -1 of axis 'pp' is negative}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64: -1, 3>}} : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// All-reduce (C7): a member outside the grid (pp has coordinates 0..3).
ptrain.grid @grid(dp = 2, pp = 4)
func.func @all_reduce_c7(%x: tensor<4xf32>) {
  // expected-error@+1 {{subgroup member 4 is not a coordinate of axis 'pp' of grid @grid (size 4)}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 4>}} : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// All-reduce (C8): a middle stage (1) must not post the {first, last} collective.
ptrain.grid @grid(dp = 2, pp = 4)
func.func @all_reduce_c8(%x: tensor<4xf32>) attributes {ptrain.stage = #ptrain.stage<1>} {
  // expected-error@+1 {{in @all_reduce_c8 of stage 1, which is not a member of its subgroup pp = [0, 3]}}
  %r = ptrain.all_reduce_start %x on @grid axes [dp, pp] reduction = sum {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// Collective (C3): at least one axis.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @collective_c3_empty(%x: tensor<4xf32>) {
  // expected-error@+1 {{collective axes must name at least one grid axis}}
  %r = ptrain.broadcast_start %x on @grid axes [] root = 0 : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// All-gather (C4): gather_dim is a dimension of the input.
ptrain.grid @grid(tp = 4)
func.func @all_gather_c4(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{gather_dim 2 is out of range for 'tensor<4x8xf32>'}}
  %r = ptrain.all_gather_start %x on @grid axes [tp] gather_dim = 2 : tensor<4x8xf32> -> !ptrain.request<tensor<4x8xf32>>
  return
}

// -----

// All-gather (C5): the gathered dimension grows by the group size.
ptrain.grid @grid(tp = 4)
func.func @all_gather_c5(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{request type must be '!ptrain.request<tensor<16x8xf32>>', got '!ptrain.request<tensor<8x8xf32>>'}}
  %r = ptrain.all_gather_start %x on @grid axes [tp] gather_dim = 0 : tensor<4x8xf32> -> !ptrain.request<tensor<8x8xf32>>
  return
}

// -----

// Reduce-scatter (C4): scatter_dim is a dimension of the input.
ptrain.grid @grid(dp = 2)
func.func @reduce_scatter_c4(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{scatter_dim -1 is out of range for 'tensor<4x8xf32>'}}
  %r = ptrain.reduce_scatter_start %x on @grid axes [dp] scatter_dim = -1 reduction = sum : tensor<4x8xf32> -> !ptrain.request<tensor<4x8xf32>>
  return
}

// -----

// Reduce-scatter (C5): the group size divides the scattered dimension.
ptrain.grid @grid(dp = 2, tp = 3)
func.func @reduce_scatter_c5(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{scatters dimension 1 of size 8 over 3 ranks ["tp"], which does not divide it}}
  %r = ptrain.reduce_scatter_start %x on @grid axes [tp] scatter_dim = 1 reduction = sum : tensor<4x8xf32> -> !ptrain.request<tensor<4x2xf32>>
  return
}

// -----

// Reduce-scatter (C6): the scattered dimension shrinks by the group size.
ptrain.grid @grid(dp = 2)
func.func @reduce_scatter_c6(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{request type must be '!ptrain.request<tensor<2x8xf32>>', got '!ptrain.request<tensor<4x8xf32>>'}}
  %r = ptrain.reduce_scatter_start %x on @grid axes [dp] scatter_dim = 0 reduction = sum : tensor<4x8xf32> -> !ptrain.request<tensor<4x8xf32>>
  return
}

// -----

// Broadcast (C4): the root is a rank of the group.
ptrain.grid @grid(dp = 2, tp = 4)
func.func @broadcast_c4(%x: tensor<4xf32>) {
  // expected-error@+1 {{root 8 is not a rank of the group of size 8}}
  %r = ptrain.broadcast_start %x on @grid axes [dp, tp] root = 8 : tensor<4xf32>
  return
}

// -----

// Wait (C1): a request that was never started cannot be waited on.
func.func @wait_c1(%r: !ptrain.request<tensor<4xf32>>) -> tensor<4xf32> {
  // expected-error@+1 {{waits on a request that was never started: it is not the result of a *_start op}}
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return %v : tensor<4xf32>
}

// -----

// Wait (C2): a request is waited on exactly once.
ptrain.grid @grid(dp = 2)
func.func @wait_c2(%x: tensor<4xf32>) {
  %r = ptrain.all_reduce_start %x on @grid axes [dp] reduction = sum : tensor<4xf32>
  %v = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  // expected-error@+1 {{waits on a request that is waited on 2 times; each request is waited on exactly once}}
  %w = ptrain.wait %r : !ptrain.request<tensor<4xf32>>
  return
}

// -----

// Wait (C3): the result is the request's value type (only reachable in generic form).
ptrain.grid @grid(dp = 2)
func.func @wait_c3(%x: tensor<4xf32>) {
  %r = ptrain.all_reduce_start %x on @grid axes [dp] reduction = sum : tensor<4xf32>
  // expected-error@+1 {{result must be of the request's value type for '!ptrain.request<tensor<4xf32>>'}}
  %v = "ptrain.wait"(%r) : (!ptrain.request<tensor<4xf32>>) -> tensor<8xf32>
  return
}

// -----

// Wait (C3): a send's request yields nothing.
ptrain.grid @grid(pp = 2)
func.func @wait_c3_send(%x: tensor<4xf32>) {
  %s = ptrain.send_start %x to @grid axis pp offset 1 : tensor<4xf32>
  // expected-error@+1 {{result must be absent for '!ptrain.request'}}
  %v = "ptrain.wait"(%s) : (!ptrain.request) -> tensor<4xf32>
  return
}
