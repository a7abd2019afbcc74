"""What each rank of ptrain-run feeds its step: the rows of its data-parallel replica's share of every global
batch, drawn in an order fixed by the seed, and the data position a checkpoint records (docs/Data.md).

Token formats (megatron, nanogpt; python/ptrain/token_data.py). A split's token stream (its documents back to
back, each ended by its end-of-document id when the files have one: ptrain-data and Megatron's
preprocess_data.py --append-eod write it) is cut into N = len // seq samples of seq tokens, sample k being
tokens [k seq, (k + 1) seq); the step scores each sample's shifted tokens. The training order is an endless
sequence of epochs, epoch e a permutation of the N samples, numpy.random.RandomState([seed, e]).permutation(N)
(the legacy generator, whose stream numpy keeps stable across versions). The global batch of training step i
(0-based) is the G = dp x rows samples at positions [c, c + G) of that sequence, c the samples consumed
before it; data-parallel replica d takes rows [d rows, (d + 1) rows) of it and reads only those samples through
the memory map (its shard). c starts at 0 and is the data position of a checkpoint ("consumed_samples" in
PATH.json, python/ptrain/manifest.py), so a resumed run, at the same or another dp, continues on exactly the
next sample: its batches are the uninterrupted run's. Validation uses V fixed batches of the validation split
in file order: batch j, replica d, row r is sample (j G + d rows + r) mod N_val.

Megatron's own order (--sample-index megatron, Megatron files only; python/ptrain/megatron_sampler.py): the
training samples are Megatron-LM GPTDataset's, built over the split's sequences for the samples the run asks for
(steps x G) with --seed: its document, sample and shuffle indices; a sample is seq tokens along the shuffled
documents, sharing its last token with the next one in the sample index. The position is consumed_samples as above
(it indexes the shuffle index); validation is as above.

Bytes (today's corpus, kept as it was so that earlier results reproduce): every step draws G windows of seq
bytes at random starts, random.Random(seed * 1000003 + i), and validation batch j from
random.Random(7919 (seed + 1) + j) (run_data.py's window_starts); the position is the step.
"""

import ctypes
import random

import numpy as np

from ptrain import megatron_sampler

SAMPLE_INDEXES = ("epochs", "megatron")


class Sampler:
    """The seeded training order over a split of `tokens` entries cut into samples of `seq` tokens."""

    def __init__(self, tokens, seq, seed):
        self.count, self.seq, self.seed = tokens // seq, seq, seed
        self._epoch, self._perm = None, None

    def sample(self, position):
        """The sample at `position` (0-based, over all epochs) of the training order."""
        epoch, j = divmod(position, self.count)
        if epoch != self._epoch:
            self._perm = np.random.RandomState([self.seed % (1 << 32), epoch]).permutation(self.count)
            self._epoch = epoch
        return int(self._perm[j])

    def tokens(self, stream, k):
        """The seq tokens of sample k."""
        return stream[k * self.seq:(k + 1) * self.seq]


class SampleIndexError(Exception):
    pass


def make_sampler(corpus, seq, seed, sample_index="epochs", samples=None):
    """The training order of a token corpus: Sampler ("epochs") or megatron_sampler.MegatronSampler ("megatron",
    built for `samples` samples; the corpus must be Megatron files, which record their sequences)."""
    if sample_index not in SAMPLE_INDEXES:
        raise SampleIndexError(f"--sample-index {sample_index}: one of {', '.join(SAMPLE_INDEXES)}")
    if sample_index == "epochs":
        return Sampler(len(corpus.train), seq, seed)
    if corpus.train.lengths is None:
        raise SampleIndexError(f"--sample-index megatron: needs Megatron files, whose index records the sequences "
                               f"(--data is {corpus.format})")
    try:
        return megatron_sampler.MegatronSampler(corpus.train.lengths, seq, samples, seed)
    except megatron_sampler.MegatronSamplerError as e:
        raise SampleIndexError(f"--sample-index megatron: {e}")


def rows_of(tokens, samples, seq, sampler=None):
    """The samples (numbers) of `tokens` as one C-contiguous int64 ctypes buffer [len(samples), seq]; sample k is
    sampler.tokens(tokens, k) (without a sampler: tokens [k seq, (k + 1) seq))."""
    out = np.empty((len(samples), seq), dtype=np.int64)
    for r, k in enumerate(samples):
        out[r] = tokens[k * seq:(k + 1) * seq] if sampler is None else sampler.tokens(tokens, k)
    return (ctypes.c_int64 * out.size).from_buffer(out)


class Loader:
    """One rank's batches. corpus: token_data.Corpus; rows, seq: the replica's rows per step and the compiled
    sequence length; replica, replicas: its data-parallel coordinate and dp; consumed: the samples consumed before
    training step `start` (0 for a run from scratch; the checkpoint's for --resume); sample_index: "epochs" or
    "megatron" (make_sampler; `samples`: the samples the run asks for, steps x the global batch)."""

    def __init__(self, corpus, rows, seq, seed, replica=0, replicas=1, start=0, consumed=0, sample_index="epochs",
                 samples=None):
        self.corpus, self.rows, self.seq, self.seed = corpus, rows, seq, seed
        self.replica, self.replicas, self.start, self.consumed = replica, replicas, start, consumed
        self.windows = corpus.format == "bytes"
        self.sample_index = "windows" if self.windows else sample_index
        self.sampler = None if self.windows else make_sampler(corpus, seq, seed, sample_index, samples)

    @property
    def global_rows(self):
        return self.rows * self.replicas

    def consumed_after(self, step):
        """The samples consumed after training step `step` (1-based count of steps done)."""
        return self.consumed + (step - self.start) * self.global_rows

    def train(self, i):
        """The tokens of training step i (0-based), this replica's rows."""
        if self.windows:
            return window_batch(self.corpus.train.tokens, self.rows, self.seq, self.seed * 1000003 + i, self.replica,
                                self.replicas)
        return rows_of(self.corpus.train.tokens, self.train_samples(i), self.seq, self.sampler)

    def train_samples(self, i, replica=None):
        """The samples (numbers in the sampler's index) data-parallel replica `replica` (default: this one) reads
        at training step i (0-based): positions [c + d rows, c + (d + 1) rows) of the training order."""
        d = self.replica if replica is None else replica
        first = self.consumed + (i - self.start) * self.global_rows + d * self.rows
        return [self.sampler.sample(first + r) for r in range(self.rows)]

    def val(self, j):
        """Validation batch j, this replica's rows."""
        if self.windows:
            return window_batch(self.corpus.val.tokens, self.rows, self.seq, 7919 * (self.seed + 1) + j, self.replica,
                                self.replicas)
        n = len(self.corpus.val) // self.seq
        first = j * self.global_rows + self.replica * self.rows
        return rows_of(self.corpus.val.tokens, [(first + r) % n for r in range(self.rows)], self.seq)

    def position(self, step):
        """The data position after `step` training steps, for the checkpoint's manifest."""
        pos = {"format": self.corpus.format, "sampler": self.sample_index, "seq": self.seq}
        pos.update(self.corpus.describe())
        if not self.windows:
            pos["consumed_samples"] = self.consumed_after(step)
        if self.sample_index == "epochs":
            pos["samples_per_epoch"] = self.sampler.count
        elif self.sample_index == "megatron":  # The index depends on the samples asked for (Megatron's too).
            pos.update({"index_samples": self.sampler.samples, "index_count": self.sampler.count})
        return pos


def window_starts(length, rows, seq, seed, replica=0, replicas=1):
    """The offsets of data-parallel replica `replica`'s rows of a global batch of replicas * rows windows of seq
    consecutive entries of data of `length` (window starts from random.Random(seed)): rows
    [replica * rows, (replica + 1) * rows) of the global batch."""
    rng = random.Random(seed)
    starts = [rng.randrange(length - seq) for _ in range(replicas * rows)]
    return starts[replica * rows:(replica + 1) * rows]


def window_batch(data, rows, seq, seed, replica=0, replicas=1):
    """The windows of window_starts over `data` (bytes, a uint8 array, or the labels' int64 array of the same
    length) as a ctypes int64 [rows, seq] buffer."""
    tokens = []
    for o in window_starts(len(data), rows, seq, seed, replica, replicas):
        tokens.extend(int(x) for x in data[o:o + seq])
    return (ctypes.c_int64 * len(tokens))(*tokens)
