"""Tests for python/ptrain/loader.py: the seeded epoch order, each data-parallel replica's rows, and the data
position that makes a resumed run (at the same or another dp) draw the uninterrupted run's batches."""

import ctypes

import numpy as np

from ptrain import loader, token_data

SEQ = 8


def corpus(train_tokens=1000, val_tokens=100):
    train = np.arange(train_tokens, dtype=np.uint16)
    val = np.arange(val_tokens, dtype=np.uint16) + 5000
    return token_data.Corpus("nanogpt", token_data.Split("train", train, "train.bin"),
                             token_data.Split("val", val, "val.bin"), "data.json", 6000)


def rows(buf, seq=SEQ):
    return np.ctypeslib.as_array(buf).reshape(-1, seq).tolist()


def test_epochs_are_seeded_permutations():
    s = loader.Sampler(1000, SEQ, seed=3)
    assert s.count == 125
    first = [s.sample(i) for i in range(125)]
    second = [s.sample(125 + i) for i in range(125)]
    assert sorted(first) == list(range(125)) and sorted(second) == list(range(125)) and first != second
    assert [loader.Sampler(1000, SEQ, seed=3).sample(i) for i in range(125)] == first
    assert [loader.Sampler(1000, SEQ, seed=4).sample(i) for i in range(125)] != first
    # The legacy generator's stream: fixed for this numpy and every later one.
    assert first[:4] == np.random.RandomState([3, 0]).permutation(125)[:4].tolist()


def test_samples_are_the_stream_cut_into_sequences():
    c = corpus()
    feed = loader.Loader(c, 4, SEQ, seed=0)
    for row in rows(feed.train(0)):
        assert row[0] % SEQ == 0 and row == list(range(row[0], row[0] + SEQ))


def test_replicas_split_the_global_batch():
    c = corpus()
    whole = loader.Loader(c, 8, SEQ, seed=1)  # dp = 1, 8 rows
    halves = [loader.Loader(c, 4, SEQ, seed=1, replica=d, replicas=2) for d in (0, 1)]
    for i in range(40):  # past the first epoch (125 samples / 8 per step)
        assert rows(halves[0].train(i)) + rows(halves[1].train(i)) == rows(whole.train(i))
    assert rows(halves[0].val(0)) + rows(halves[1].val(0)) == rows(whole.val(0))
    assert whole.position(40)["consumed_samples"] == 320


def test_resume_continues_on_the_next_batch_at_any_dp():
    c = corpus()
    straight = loader.Loader(c, 4, SEQ, seed=2, replica=1, replicas=2)
    # Resumed after 5 steps at dp 2: the position is 5 x 8 samples.
    consumed = straight.position(5)["consumed_samples"]
    resumed = loader.Loader(c, 4, SEQ, seed=2, replica=1, replicas=2, start=5, consumed=consumed)
    assert all(rows(resumed.train(i)) == rows(straight.train(i)) for i in range(5, 30))
    # Resumed at dp 1 with 8 rows: the same samples, now all on one replica.
    one = loader.Loader(c, 8, SEQ, seed=2, start=5, consumed=consumed)
    a, b = (loader.Loader(c, 4, SEQ, seed=2, replica=d, replicas=2) for d in (0, 1))
    assert rows(one.train(5)) == rows(a.train(5)) + rows(b.train(5))
    assert one.position(6)["consumed_samples"] == consumed + 8


def test_bytes_keep_the_window_sampler():
    data = bytes(range(256)) * 4
    c = token_data.Corpus("bytes", token_data.Split("train", np.frombuffer(data, np.uint8), "t"),
                          token_data.Split("val", np.frombuffer(data, np.uint8), "v"), "data.json", 256)
    feed = loader.Loader(c, 3, 16, seed=5)
    got = list(feed.train(2))
    want = []
    for o in loader.window_starts(len(data), 3, 16, 5 * 1000003 + 2):
        want += list(data[o:o + 16])
    assert got == want and isinstance(feed.train(0), ctypes.Array)
    assert feed.position(3) == {"format": "bytes", "sampler": "windows", "seq": 16, "train_tokens": 1024,
                                "val_tokens": 1024, "vocab_size": 256}
