"""ptrain-export's shard gathering (python/ptrain/export.py, gather_shards) inverts the layout ptrain_step_init
and the multi-rank executor cut (MultiRankExecutor.h's tensorParallelSlice: dimension `dim` viewed as
groups x parts x chunk, part t = [:, t, :]; padTensorParallel's zero rows for a padded vocabulary). The slicer
here follows that C++ definition index by index; the end-to-end proof on real runs is CTest
codegen-cpu-export-tp."""

import os

import pytest

np = pytest.importorskip("numpy")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
from ptrain import export


def executor_slice(full, dim, groups, parts, index):
    """tensorParallelSlice: for g in groups, the chunk at offset (g * parts + index) * chunk along dim."""
    chunk = full.shape[dim] // (groups * parts)
    pieces = [np.take(full, range((g * parts + index) * chunk, (g * parts + index + 1) * chunk), axis=dim)
              for g in range(groups)]
    return np.concatenate(pieces, axis=dim)


@pytest.mark.parametrize("shape,dim,groups,tp", [
    ([384, 128], 0, 3, 2),   # fused Q|K|V weight, per-head column split
    ([384], 0, 3, 4),        # its bias at tp = 4
    ([512, 128], 0, 1, 2),   # column-parallel MLP up projection
    ([128, 512], 1, 1, 2),   # row-parallel down projection
    ([6, 4, 10], 1, 2, 2),   # a middle dimension, two groups
])
def test_gather_inverts_the_executor_slice(shape, dim, groups, tp):
    full = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    parts = [executor_slice(full, dim, groups, tp, t) for t in range(tp)]
    sl = {"axis": "tp", "dim": dim, "groups": groups, "global_shape": shape}
    got = export.gather_shards("w", parts, sl, [f"ck.tp{t}" for t in range(tp)])
    assert got.shape == full.shape and np.array_equal(got, full)
    if groups > 1 or tp > 2:  # another order of the parts is another tensor: the layout matters
        assert not np.array_equal(export.gather_shards("w", parts[::-1], sl, ["a", "b"]), full)


def test_padded_vocabulary_is_cut_back_and_its_padding_checked():
    full = np.random.default_rng(1).standard_normal([256, 8]).astype(np.float32)
    padded = np.concatenate([full, np.zeros([2, 8], np.float32)])  # Vp = 258, a multiple of tp x 3
    parts = [executor_slice(padded, 0, 1, 2, t) for t in range(2)]
    sl = {"axis": "tp", "dim": 0, "groups": 1, "global_shape": [256, 8], "padded": 258}
    assert np.array_equal(export.gather_shards("wte.weight", parts, sl, ["a", "b"]), full)
    parts[1][-1, 3] = 0.5  # a nonzero padding row: not this plan's layout
    with pytest.raises(export.ExportError, match=r"vocabulary padding \(entries 256..257 of dimension 0\) is not zero"):
        export.gather_shards("wte.weight", parts, sl, ["a", "b"])


def test_parts_that_do_not_make_the_full_shape_are_an_error():
    sl = {"axis": "tp", "dim": 0, "groups": 3, "global_shape": [384, 128]}
    parts = [np.zeros([128, 128], np.float32)] * 2  # 2 x 128 != 384
    with pytest.raises(export.ExportError, match=r"parameter 'qkv' has the local shape \[128, 128\]"):
        export.gather_shards("qkv", parts, sl, ["ck.tp0", "ck.tp1"])
