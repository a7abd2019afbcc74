"""Tests for python/ptrain/megatron_sampler.py (ptrain-run --sample-index megatron): the document, sample and
shuffle indices equal megatron-core's own (python/tests/fixtures/megatron/sample_index.npz, written by
make_sample_index.py with megatron-core 0.16.1's GPTDataset code and its compiled build_sample_idx), and the
samples it reads are Megatron's: seq tokens from the sample index, consecutive samples sharing one token."""

import os

import numpy as np
import pytest

from ptrain import megatron_sampler

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "megatron", "sample_index.npz")
CASES = ("fixture-1epoch", "fixture-epochs", "random-separate", "random-long")


@pytest.mark.parametrize("name", CASES)
def test_indices_equal_megatron_core(name):
    ref = np.load(FIXTURE)
    seq_length, samples, seed = (int(x) for x in ref[f"{name}/args"])
    docs, rows, shuffle = megatron_sampler.build(ref[f"{name}/lengths"], seq_length, samples, seed)
    assert np.array_equal(docs, ref[f"{name}/document_index"])
    assert np.array_equal(rows, ref[f"{name}/sample_index"])
    assert np.array_equal(shuffle, ref[f"{name}/shuffle_index"])
    assert shuffle.dtype == ref[f"{name}/shuffle_index"].dtype


def test_cases_cover_both_final_epoch_rules():
    ref = np.load(FIXTURE)
    separate = []
    for name in CASES:
        lengths = ref[f"{name}/lengths"].astype(np.int64)
        seq_length, samples, _ = (int(x) for x in ref[f"{name}/args"])
        tokens = int(lengths.sum())
        epochs = megatron_sampler.num_epochs(tokens, samples, seq_length)
        assert len(ref[f"{name}/document_index"]) == epochs * len(lengths)
        if epochs > 1:
            separate.append(samples - ((epochs - 1) * tokens - 1) // seq_length < int(0.8 * ((tokens - 1) //
                                                                                             seq_length)))
    assert True in separate and False in separate


def test_samples_are_megatron_token_windows():
    rng = np.random.RandomState(5)
    lengths = rng.randint(1, 30, size=40)
    stream = np.arange(int(lengths.sum()), dtype=np.int64)  # token i is i: a sample shows where it came from
    seq = 9
    s = megatron_sampler.MegatronSampler(lengths, seq, samples=100, seed=11)
    starts = np.concatenate(([0], np.cumsum(lengths)))
    for k in range(s.count):
        got = s.tokens(stream, k)
        assert len(got) == seq
        # Along the document index: sample k is the seq tokens from row k, whose last is sample k+1's first.
        (p0, o0), (p1, o1) = s.rows[k], s.rows[k + 1]
        assert got[0] == starts[s.docs[p0]] + o0 and got[-1] == starts[s.docs[p1]] + o1
        if k + 1 < s.count:
            assert s.tokens(stream, k + 1)[0] == got[-1]
    assert sorted(s.sample(p) for p in range(s.count)) == list(range(s.count))
    with pytest.raises(megatron_sampler.MegatronSamplerError, match="past Megatron's sample index"):
        s.sample(s.count)
