"""Megatron-LM's indexed dataset, PREFIX.idx + PREFIX.bin: a reader that checks every field, and a writer of the same
bytes (ptrain-data; the test fixture is written by megatron-core's own IndexedDatasetBuilder).

The layout (megatron/core/datasets/indexed_dataset.py, _IndexWriter and _IndexReader, NVIDIA/Megatron-LM at
d98e8a6, 2026-08; unchanged since megatron-core 0.5), all little-endian:

    PREFIX.idx   offset  size      field
                 0       9         magic b"MMIDIDX\\x00\\x00"
                 9       8         version, uint64 = 1
                 17      1         dtype code, uint8 (DTYPES: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
                                   6 float64, 7 float32, 8 uint16)
                 18      8         sequence count S, uint64
                 26      8         document count D, uint64 (document index entries: documents + 1)
                 34      4 S       sequence lengths, int32, in tokens
                 34+4S   8 S       sequence pointers, int64, byte offsets into PREFIX.bin
                 34+12S  8 D       document index, int64: sequence numbers, document k = sequences
                                   [doc[k], doc[k + 1]); doc[0] = 0 and doc[D - 1] = S
                 34+12S+8D  S      (multimodal datasets only) sequence modes, int8
    PREFIX.bin   the tokens of every sequence, back to back, in the dtype of the code.

Megatron's builder writes the pointers as the running sum of lengths x item size, and a document index that
starts at 0 and ends at S. preprocess_data.py writes one sequence per document (or one per sentence with
--split-sentences) and ends each document with the tokenizer's end-of-document id when given --append-eod.

Only integer token dtypes are token ids: a float code is an error. Errors (MegatronError) name the file and
what is wrong: the magic, the version, the dtype code, an .idx shorter or longer than its counts say, pointers
that are not the running sum of the lengths (not one contiguous token stream), a document index that does not
run from 0 to S in order, a .bin shorter than the index says.
"""

import os
import struct

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER_BYTES = 34  # magic 9 + version 8 + dtype code 1 + sequence count 8 + document count 8
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32,
          8: np.uint16}
CODES = {np.dtype(t): c for c, t in DTYPES.items()}


class MegatronError(Exception):
    pass


def optimal_dtype(vocab_size):
    """Megatron's DType.optimal_dtype: uint16 below 65,500 ids, else int32."""
    return np.uint16 if vocab_size < 65500 else np.int32


class IndexedDataset:
    """PREFIX.idx and PREFIX.bin, memory-mapped and checked (module docstring).

    Attributes: dtype (numpy dtype of the tokens), lengths (int32 [S]), pointers (int64 [S]), documents (int64
    [D], the document index), tokens (a read-only memmap of the whole token stream, sum(lengths) entries)."""

    def __init__(self, prefix):
        self.prefix = prefix
        idx, bin_ = prefix + ".idx", prefix + ".bin"
        for path in (idx, bin_):
            if not os.path.isfile(path):
                raise MegatronError(f"{path}: no such file (a Megatron indexed dataset is PREFIX.idx + PREFIX.bin)")
        size = os.path.getsize(idx)
        with open(idx, "rb") as f:
            head = f.read(HEADER_BYTES)
        if len(head) < len(MAGIC) or head[:len(MAGIC)] != MAGIC:
            raise MegatronError(f"{idx}: not a Megatron index (the first 9 bytes are {head[:9]!r}, not {MAGIC!r})")
        if len(head) < HEADER_BYTES:
            raise MegatronError(f"{idx}: truncated: {size} bytes, shorter than the {HEADER_BYTES}-byte header")
        version, code, count, docs = struct.unpack_from("<QBQQ", head, len(MAGIC))
        if version != VERSION:
            raise MegatronError(f"{idx}: index version {version}; only version {VERSION} exists")
        if code not in DTYPES:
            known = ", ".join(f"{c} {np.dtype(t)}" for c, t in DTYPES.items())
            raise MegatronError(f"{idx}: dtype code {code} is none of Megatron's ({known})")
        self.dtype = np.dtype(DTYPES[code])
        if self.dtype.kind != "i" and self.dtype.kind != "u":
            raise MegatronError(f"{idx}: dtype code {code} is {self.dtype}: token ids must be integers")
        need = HEADER_BYTES + 12 * count + 8 * docs
        if size < need:
            raise MegatronError(f"{idx}: truncated: {size} bytes, but its {count} sequences and {docs} document "
                                f"index entries need {need}")
        if size not in (need, need + count):  # + count: the int8 sequence modes of a multimodal dataset
            raise MegatronError(f"{idx}: {size} bytes, but its {count} sequences and {docs} document index entries "
                                f"need {need} (or {need + count} with sequence modes): not a Megatron index")
        raw = np.memmap(idx, dtype=np.uint8, mode="r")
        self.lengths = np.frombuffer(raw, dtype=np.int32, count=count, offset=HEADER_BYTES)
        self.pointers = np.frombuffer(raw, dtype=np.int64, count=count, offset=HEADER_BYTES + 4 * count)
        self.documents = np.frombuffer(raw, dtype=np.int64, count=docs, offset=HEADER_BYTES + 12 * count)
        if count and int(self.lengths.min()) < 0:
            i = int(np.argmax(self.lengths < 0))
            raise MegatronError(f"{idx}: sequence {i} has the length {int(self.lengths[i])}")
        ends = np.cumsum(self.lengths, dtype=np.int64) * self.dtype.itemsize
        starts = np.concatenate([np.zeros(1, np.int64), ends[:-1]]) if count else ends
        if not np.array_equal(starts, self.pointers):
            i = int(np.argmax(starts != self.pointers))
            raise MegatronError(f"{idx}: sequence {i} starts at byte {int(self.pointers[i])} of {bin_}, but the "
                                f"lengths before it put it at {int(starts[i])} (the sequences must be one contiguous "
                                "token stream, as Megatron's builder writes them)")
        if docs < 1 or self.documents[0] != 0 or self.documents[-1] != count or \
                (docs > 1 and int(np.diff(self.documents).min()) < 0):
            raise MegatronError(f"{idx}: the document index must run from 0 to the sequence count {count} in "
                                f"order; it is {self.documents[:4].tolist()}{' ...' if docs > 4 else ''} "
                                f"({docs} entries)")
        total = int(ends[-1]) if count else 0
        have = os.path.getsize(bin_)
        if have < total:
            raise MegatronError(f"{bin_}: {have} bytes, shorter than the {total} bytes ({total // self.dtype.itemsize}"
                                f" {self.dtype} tokens) that {idx} says it holds")
        self.tokens = (np.memmap(bin_, dtype=self.dtype, mode="r", shape=(total // self.dtype.itemsize,))
                       if total else np.zeros(0, self.dtype))

    @property
    def document_count(self):
        return len(self.documents) - 1

    def document_tokens(self, first, last):
        """[token start, token end) of documents [first, last) in the stream."""
        seqs = self.documents[first], self.documents[last]
        starts = np.concatenate([np.zeros(1, np.int64), np.cumsum(self.lengths, dtype=np.int64)])
        return int(starts[seqs[0]]), int(starts[seqs[1]])


def write(prefix, documents, dtype):
    """Writes PREFIX.bin and PREFIX.idx as Megatron's IndexedDatasetBuilder does with one add_document per
    document (one sequence each) and finalize: `documents` is an iterable of 1-D integer arrays."""
    dtype = np.dtype(dtype)
    if dtype not in CODES:
        raise MegatronError(f"{prefix}: {dtype} is no Megatron dtype")
    lengths = []
    with open(prefix + ".bin", "wb") as f:
        for doc in documents:
            arr = np.asarray(doc, dtype=dtype)
            f.write(arr.tobytes(order="C"))
            lengths.append(arr.size)
    lengths = np.asarray(lengths, dtype=np.int32)
    pointers = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths, dtype=np.int64)[:-1]]) * dtype.itemsize \
        if len(lengths) else np.zeros(0, np.int64)
    doc_index = np.arange(len(lengths) + 1, dtype=np.int64)
    with open(prefix + ".idx", "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<Q", VERSION))
        f.write(struct.pack("<B", CODES[dtype]))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(struct.pack("<Q", len(doc_index)))
        f.write(lengths.tobytes(order="C"))
        f.write(pointers.astype(np.int64).tobytes(order="C"))
        f.write(doc_index.tobytes(order="C"))
