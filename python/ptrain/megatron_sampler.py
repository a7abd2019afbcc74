"""Megatron-LM's GPTDataset sample order (ptrain-run --sample-index megatron, docs/Data.md), reimplemented from
megatron/core/datasets/gpt_dataset.py (_build_document_sample_shuffle_indices, _get_num_epochs,
_build_document_index, _build_shuffle_index) and megatron/core/datasets/helpers.cpp (build_sample_idx) of
NVIDIA/Megatron-LM d98e8a6, with add_extra_token_to_sequence = 1 and drop_last_partial_sequence = True (a
training split). python/tests/test_megatron_sampler.py compares the three indices with megatron-core's own.

Inputs: the split's sequence lengths L[0..n) (one sequence per document, as preprocess_data.py writes without
--split-sentences; Megatron's `indices` are the split's sequence numbers, here 0..n-1 of the split), Megatron's
sequence length S (ptrain's compiled seq - 1: a Megatron sample is S + 1 tokens, the step scores its S shifted
predictions, as ptrain's step scores seq - 1), the number of samples the run asks for (Megatron's
train_samples = steps x global batch) and the seed (Megatron's --seed, the config's random_seed).

  tokens per epoch T = sum L; epochs E = the least E >= 1 with E T >= samples S + 1.
  With E > 1 the last epoch is shuffled apart when it supplies fewer than 80% of an epoch's samples:
  sans = ((E - 1) T - 1) // S, per_epoch = (T - 1) // S, separate = samples - sans < int(0.8 per_epoch).
  One numpy.random.RandomState(seed) draws, in order: the document index (E copies of 0..n-1, shuffled
  together; with `separate`, the first E - 1 copies shuffled together, then the last copy alone), then the
  shuffle index (arange(K) shuffled, K the sample index's rows - 1; with `separate`, arange(sans) and
  arange(sans, K) shuffled one after the other).
  The sample index: K + 1 rows (document-index position, offset) with K = (E T - 1) // S; row 0 is (0, 0) and
  row k + 1 starts where sample k's S + 1 tokens, taken along the document index from row k, end minus one
  token (consecutive samples share one token: sample k's last is sample k + 1's first).
Training sample position p is sample shuffle[p], the tokens from row shuffle[p] to row shuffle[p] + 1 (plus the
shared token). A position at or past K is an error (Megatron's index holds only what the run asked for).
"""

import numpy as np

LAST_EPOCH_THRESHOLD = 0.80  # gpt_dataset.py: the last epoch is shuffled apart below 80% of an epoch's samples


class MegatronSamplerError(Exception):
    pass


def num_epochs(tokens_per_epoch, samples, seq_length):
    """Megatron's _get_num_epochs with add_extra_token_to_sequence = 1."""
    epochs, have, need = 1, tokens_per_epoch, samples * seq_length + 1
    while have < need:
        epochs += 1
        have += tokens_per_epoch
    return epochs


def document_index(documents, epochs, rng, separate):
    """_build_document_index: `epochs` copies of `documents` (int32), shuffled by `rng` (in place, one shuffle of
    all copies; with `separate`, the first epochs - 1 copies, then the last)."""
    if not separate or epochs == 1:
        index = np.tile(np.asarray(documents, dtype=np.int32), epochs)
        rng.shuffle(index)
        return index
    return np.concatenate((document_index(documents, epochs - 1, rng, False), document_index(documents, 1, rng,
                                                                                             False)))


def sample_index(lengths, doc_index, seq_length, epochs, tokens_per_epoch):
    """build_sample_idx (drop_last_partial_sequence, one extra token): int64 [K + 1, 2] rows of (position in
    doc_index, token offset in that document), K = (epochs tokens_per_epoch - 1) // seq_length."""
    count = (epochs * tokens_per_epoch - 1) // seq_length
    out = np.empty((count + 1, 2), dtype=np.int64)
    pos, offset = 0, 0
    out[0] = (0, 0)
    last = len(doc_index) - 1
    for k in range(1, count + 1):
        remaining = seq_length + 1
        while remaining:
            length = int(lengths[doc_index[pos]]) - offset
            remaining -= length
            if remaining <= 0:  # This document holds the sample's end; the next sample starts at its last token.
                offset += remaining + length - 1
                remaining = 0
            elif pos == last:  # The index ran out (only for the final sample, as Megatron asserts).
                offset = int(lengths[doc_index[pos]]) - 1
                break
            else:
                pos, offset = pos + 1, 0
        out[k] = (pos, offset)
    return out


def shuffle_index(first, total, rng):
    """_build_shuffle_index: arange(first) shuffled, then (if total > first) arange(first, total) shuffled."""
    dtype = np.uint32 if total < np.iinfo(np.uint32).max - 1 else np.int64
    head = np.arange(first, dtype=dtype)
    rng.shuffle(head)
    if first == total:
        return head
    tail = np.arange(first, total, dtype=dtype)
    rng.shuffle(tail)
    return np.concatenate((head, tail))


def build(lengths, seq_length, samples, seed):
    """(document index, sample index, shuffle index) of Megatron's GPTDataset for a split of sequence `lengths`
    (module docstring)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if seq_length < 2:
        raise MegatronSamplerError(f"Megatron's sample index needs a sequence length of at least 2 (ptrain's seq >= "
                                   f"3), got {seq_length}")
    tokens = int(lengths.sum())
    if tokens < seq_length + 1:
        raise MegatronSamplerError(f"the split's {tokens} tokens are fewer than one Megatron sample of {seq_length + 1}")
    epochs = num_epochs(tokens, samples, seq_length)
    separate, sans = False, None
    if epochs > 1:
        sans = ((epochs - 1) * tokens - 1) // seq_length
        separate = samples - sans < int(LAST_EPOCH_THRESHOLD * ((tokens - 1) // seq_length))
    rng = np.random.RandomState(seed)
    docs = document_index(np.arange(len(lengths)), epochs, rng, separate)
    rows = sample_index(lengths, docs, seq_length, epochs, tokens)
    count = rows.shape[0] - 1
    shuffle = shuffle_index(sans if separate else count, count, rng)
    return docs, rows, shuffle


class MegatronSampler:
    """The training order of Megatron's GPTDataset over a split (module docstring). lengths: the split's sequence
    lengths; tokens: its token stream (their concatenation); seq: ptrain's compiled sequence length; samples: the
    samples the run asks for (steps x global batch); seed: --seed."""

    def __init__(self, lengths, seq, samples, seed):
        self.seq, self.samples, self.seed = seq, samples, seed
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.starts = np.concatenate(([0], np.cumsum(self.lengths)))
        self.docs, self.rows, self.shuffle = build(self.lengths, seq - 1, samples, seed % (1 << 32))
        self.count = self.rows.shape[0] - 1

    def sample(self, position):
        """The sample (a row of the sample index) at training position `position` (0-based)."""
        if not 0 <= position < self.count:
            raise MegatronSamplerError(f"training position {position} is past Megatron's sample index of {self.count} "
                                       f"samples (built for {self.samples}: --steps times the global batch)")
        return int(self.shuffle[position])

    def tokens(self, stream, k):
        """The seq tokens of sample k (a sample-index row) from the split's token `stream`."""
        (p0, o0), (p1, o1) = self.rows[k], self.rows[k + 1]
        parts = []
        for p in range(p0, p1 + 1):
            start = self.starts[self.docs[p]]
            lo = o0 if p == p0 else 0
            hi = o1 + 1 if p == p1 else self.lengths[self.docs[p]]
            parts.append(stream[start + lo:start + hi])
        out = np.concatenate(parts)
        assert len(out) == self.seq, (k, len(out))
        return out
