"""The training data of ptrain-run --data: which format a corpus is in, read from its files (DESIGN.md decision 13:
declared by the files, never guessed from the model), its train and validation token streams memory-mapped, and
the check of its token ids against the model's vocabulary.

Formats (docs/Data.md):

  megatron  Megatron-LM's indexed dataset (python/ptrain/megatron_index.py). --data PREFIX, where PREFIX.idx and
            PREFIX.bin exist: the training data is its documents but the held-out ones, the validation data the
            last max(1, documents // 20) documents (an index of one document is an error: nothing to hold out).
            Or --data DIR holding train.idx/train.bin and val.idx/val.bin (ptrain-data --format megatron, which
            also writes DIR/data.json {"format": "megatron", "vocab_size": N, "eod": ID}).
  nanogpt   nanoGPT's flat token files: DIR/train.bin and DIR/val.bin, little-endian uint16 (uint32 for more than
            65,536 ids), declared by DIR/data.json
                {"format": "nanogpt", "dtype": "uint16", "vocab_size": 8192, "eod": 0}
            ("eod", the end-of-document id that joins documents, and "tokenizer", the tokenizer.json beside it,
            are optional), or by nanoGPT's own DIR/meta.pkl (its "vocab_size"; nanoGPT writes uint16). Both
            present: they must agree.
  bytes     raw bytes, each byte one token id (python/ptrain/data.py's corpus): DIR/data.json {"format": "bytes"}
            beside DIR/train.bin and DIR/val.bin, or --data-format bytes for a folder or a single file (then its
            folder's val.bin is the validation data, else the file's last 10%).

Anything else (a folder of .bin files with no declaration) is an error that says how to declare it.
--data-format FORMAT names the format the files must have: a mismatch is an error.

Errors (DataError) name the file: an undeclared or unknown format, a data.json that is not the schema above
(a dtype other than uint16/uint32, a vocabulary that does not fit the dtype), a file that is not a whole number
of ids of its dtype, the Megatron reader's errors, an empty split (fewer tokens than one sequence), and, from
check_ids, the first id at or above the model's vocabulary (its position and the vocabulary).
"""

import json
import os
import pickle

import numpy as np

from ptrain import megatron_index

FORMATS = ("megatron", "nanogpt", "bytes")
DECLARATION = "data.json"
TOKEN_DTYPES = {"uint16": np.uint16, "uint32": np.uint32}


class DataError(Exception):
    pass


class Split:
    """One split: `tokens`, a read-only 1-D integer array (a memmap) of the split's token stream, `where`, the
    file(s) it comes from, for messages, and `lengths`, its sequences' lengths (int32, summing to len(tokens)) for
    Megatron files (None for the other formats: their files record no sequences)."""

    def __init__(self, name, tokens, where, lengths=None):
        self.name, self.tokens, self.where, self.lengths = name, tokens, where, lengths

    def __len__(self):
        return len(self.tokens)


class Corpus:
    """A corpus: format (one of FORMATS), train and val (Split), vocab_size (the declared vocabulary; None for
    Megatron files, which do not record it, and bytes), eod (the declared end-of-document id or None),
    declared_by (the file or flag that declared the format)."""

    def __init__(self, format, train, val, declared_by, vocab_size=None, eod=None):
        self.format, self.train, self.val = format, train, val
        self.declared_by, self.vocab_size, self.eod = declared_by, vocab_size, eod

    def describe(self):
        """{format, train_tokens, val_tokens, vocab_size}: what a checkpoint's manifest records of its data."""
        return {"format": self.format, "train_tokens": len(self.train), "val_tokens": len(self.val),
                "vocab_size": self.vocab_size}


def _read_json(path):
    try:
        with open(path) as f:
            decl = json.load(f)
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: not a readable JSON declaration of the data format ({e})")
    if not isinstance(decl, dict) or decl.get("format") not in FORMATS:
        raise DataError(f"{path}: 'format' must be one of {', '.join(FORMATS)}, not "
                        f"{(decl.get('format') if isinstance(decl, dict) else decl)!r}")
    return decl


class _MetaUnpickler(pickle.Unpickler):
    """nanoGPT's meta.pkl is a dict of ints, strings and dicts: nothing else is unpickled (no code runs)."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} (meta.pkl holds plain dicts)")


def read_meta_pkl(path):
    """nanoGPT's meta.pkl: its vocab_size (an int >= 1)."""
    try:
        with open(path, "rb") as f:
            meta = _MetaUnpickler(f).load()
    except (OSError, pickle.UnpicklingError, EOFError, ValueError) as e:
        raise DataError(f"{path}: not a nanoGPT meta.pkl ({e})")
    vocab = meta.get("vocab_size") if isinstance(meta, dict) else None
    if not isinstance(vocab, int) or vocab < 1:
        raise DataError(f"{path}: no positive integer 'vocab_size' (nanoGPT's meta.pkl has one)")
    return vocab


def _memmap(path, dtype):
    size = os.path.getsize(path)
    itemsize = np.dtype(dtype).itemsize
    if size % itemsize:
        raise DataError(f"{path}: {size} bytes, not a whole number of {np.dtype(dtype)} ids ({itemsize} bytes each): "
                        "the wrong dtype, or a truncated file")
    if size == 0:
        return np.zeros(0, dtype)
    return np.memmap(path, dtype=dtype, mode="r")


def _nanogpt(folder, decl_path, decl):
    meta = os.path.join(folder, "meta.pkl")
    meta_vocab = read_meta_pkl(meta) if os.path.isfile(meta) else None
    if decl is None:
        dtype, vocab, eod, by = "uint16", meta_vocab, None, meta
    else:
        dtype, vocab, eod, by = decl.get("dtype"), decl.get("vocab_size"), decl.get("eod"), decl_path
        if dtype not in TOKEN_DTYPES:
            raise DataError(f"{decl_path}: 'dtype' must be uint16 or uint32 (nanoGPT's token files), not {dtype!r}")
        if not isinstance(vocab, int) or vocab < 1:
            raise DataError(f"{decl_path}: 'vocab_size' must be a positive integer, not {vocab!r}")
        if meta_vocab is not None and meta_vocab != vocab:
            raise DataError(f"{decl_path} declares a vocabulary of {vocab}, but {meta} says {meta_vocab}")
        if eod is not None and not (isinstance(eod, int) and 0 <= eod < vocab):
            raise DataError(f"{decl_path}: 'eod' must be a token id below the vocabulary of {vocab}, not {eod!r}")
    limit = np.iinfo(TOKEN_DTYPES[dtype]).max + 1
    if vocab > limit:
        raise DataError(f"{by}: a vocabulary of {vocab} ids does not fit {dtype} (at most {limit}): use uint32")
    splits = []
    for name in ("train", "val"):
        path = os.path.join(folder, f"{name}.bin")
        if not os.path.isfile(path):
            raise DataError(f"{path}: no such file ({by} declares nanoGPT token files train.bin and val.bin)")
        splits.append(Split(name, _memmap(path, TOKEN_DTYPES[dtype]), path))
    return Corpus("nanogpt", *splits, by, vocab, eod)


def _megatron(prefix, val_prefix, by, decl=None, whole=False):
    """The Corpus of a Megatron prefix (and a validation prefix); without one, its last documents are held out
    for validation, unless `whole` (--val-data gives the validation data): then train is every document."""
    vocab, eod = (decl or {}).get("vocab_size"), (decl or {}).get("eod")
    if decl is not None and vocab is not None and not (isinstance(vocab, int) and vocab >= 1):
        raise DataError(f"{by}: 'vocab_size' must be a positive integer, not {vocab!r}")
    try:
        data = megatron_index.IndexedDataset(prefix)
        if val_prefix is not None or whole:
            train = Split("train", data.tokens, prefix + ".bin", data.lengths)
            if val_prefix is None:
                return Corpus("megatron", train, None, by, vocab, eod)
            val = megatron_index.IndexedDataset(val_prefix)
            return Corpus("megatron", train, Split("val", val.tokens, val_prefix + ".bin", val.lengths), by, vocab,
                          eod)
    except megatron_index.MegatronError as e:
        raise DataError(str(e))
    docs = data.document_count
    if docs < 2:
        raise DataError(f"{prefix}.idx: {docs} document(s): too few to hold one out for validation (give --data a "
                        "folder with train.idx/.bin and val.idx/.bin, or --val-data)")
    held = max(1, docs // 20)
    a, b = data.document_tokens(0, docs - held)
    c, d = data.document_tokens(docs - held, docs)
    cut = int(data.documents[docs - held])
    return Corpus("megatron", Split("train", data.tokens[a:b], f"{prefix}.bin documents [0, {docs - held})",
                                    data.lengths[:cut]),
                  Split("val", data.tokens[c:d], f"{prefix}.bin documents [{docs - held}, {docs})",
                        data.lengths[cut:]), by, vocab, eod)


def _bytes(data, by):
    if os.path.isdir(data):
        train, val = os.path.join(data, "train.bin"), os.path.join(data, "val.bin")
        for p in (train, val):
            if not os.path.isfile(p):
                raise DataError(f"{p}: no such file (make the corpus with python3 python/ptrain/data.py --out {data})")
        return Corpus("bytes", Split("train", _memmap(train, np.uint8), train), Split("val", _memmap(val, np.uint8),
                                                                                     val), by, 256)
    val = os.path.join(os.path.dirname(os.path.abspath(data)), "val.bin")
    tokens = _memmap(data, np.uint8)
    if os.path.isfile(val) and os.path.abspath(val) != os.path.abspath(data):
        return Corpus("bytes", Split("train", tokens, data), Split("val", _memmap(val, np.uint8), val), by, 256)
    cut = len(tokens) * 9 // 10
    return Corpus("bytes", Split("train", tokens[:cut], f"{data} (its first 90%)"),
                  Split("val", tokens[cut:], f"{data} (its last 10%)"), by, 256)


def detect(data, data_format=None):
    """(format, declared by, declaration dict or None) of --data `data`, read from its files; `data_format` is
    --data-format (None: whatever the files declare)."""
    if data_format is not None and data_format not in FORMATS:
        raise DataError(f"--data-format {data_format}: one of {', '.join(FORMATS)}")
    if os.path.isdir(data):
        decl_path = os.path.join(data, DECLARATION)
        if os.path.isfile(decl_path):
            decl = _read_json(decl_path)
            found = (decl["format"], decl_path, decl)
        elif os.path.isfile(os.path.join(data, "train.idx")):
            found = ("megatron", os.path.join(data, "train.idx"), None)
        elif os.path.isfile(os.path.join(data, "meta.pkl")):
            found = ("nanogpt", os.path.join(data, "meta.pkl"), None)
        else:
            found = None
    elif os.path.isfile(data + ".idx"):
        found = ("megatron", data + ".idx", None)
    elif os.path.isfile(data):
        found = None
    else:
        raise DataError(f"--data {data}: no such file, folder or Megatron prefix (PREFIX.idx)")
    if found is None:
        if data_format == "bytes":
            return "bytes", "--data-format bytes", None
        raise DataError(f"--data {data}: its format is not declared. Declare it: {DECLARATION} beside the files "
                        '({"format": "nanogpt", "dtype": "uint16", "vocab_size": N} for token ids, {"format": "bytes"} '
                        "for raw bytes; ptrain-data and python/ptrain/data.py write it), nanoGPT's meta.pkl, or "
                        "--data-format bytes; a Megatron dataset is given as its PREFIX (PREFIX.idx)")
    if data_format is not None and data_format != found[0]:
        raise DataError(f"--data-format {data_format}: {found[1]} declares the format {found[0]}")
    return found


def _open(data, data_format=None, whole=False):
    fmt, by, decl = detect(data, data_format)
    if fmt == "bytes":
        corpus = _bytes(data, by)
        if whole and not os.path.isdir(data):  # One file: all of it is training data.
            tokens = _memmap(data, np.uint8)
            corpus.train = Split("train", tokens, data)
        return corpus
    if fmt == "nanogpt":
        if not os.path.isdir(data):
            raise DataError(f"--data {data}: nanoGPT token files are a folder (train.bin, val.bin, {DECLARATION})")
        return _nanogpt(data, by if by.endswith(DECLARATION) else None, decl)
    if os.path.isdir(data):
        train, val = os.path.join(data, "train"), os.path.join(data, "val")
        return _megatron(train, val if os.path.isfile(val + ".idx") else None, by, decl)
    return _megatron(data, None, by, whole=whole)


def open_corpus(data, data_format=None, val_data=None):
    """The Corpus of --data `data` (module docstring). Opens memory maps; reads no token. With `val_data`
    (--val-data) the validation split is that source's instead: a Megatron PREFIX (every document; --data's
    PREFIX then trains on every document of its own), a folder's val split (val.idx/.bin or val.bin), or a bytes
    file (all of it; --data's file then trains on all of its own). Both must have one format."""
    corpus = _open(data, data_format, whole=val_data is not None)
    if val_data is None:
        return corpus
    other = _open(val_data, data_format or corpus.format, whole=True)
    if os.path.isdir(val_data) or other.val is None:
        val = other.val if other.val is not None else other.train
    else:  # A PREFIX or a bytes file: all of it.
        val = other.train
    corpus.val = Split("val", val.tokens, f"--val-data {val.where}", val.lengths)
    if other.vocab_size is not None and corpus.vocab_size is not None and other.vocab_size != corpus.vocab_size:
        raise DataError(f"--val-data {val_data}: declares the vocabulary {other.vocab_size}, --data {data} "
                        f"{corpus.vocab_size}")
    return corpus


def first_at_or_above(tokens, limit, chunk=1 << 24):
    """(position, id) of the first entry of `tokens` that is >= limit or negative, else None. Scans in chunks of
    `chunk` entries (the memmap is read once, never copied whole)."""
    for start in range(0, len(tokens), chunk):
        part = np.asarray(tokens[start:start + chunk])
        bad = part >= limit
        if part.dtype.kind == "i":
            bad |= part < 0
        if bad.any():
            i = int(np.argmax(bad))
            return start + i, int(part[i])
    return None


def check(corpus, vocab, seq):
    """Raises DataError unless both splits hold at least one sequence of `seq` tokens (bytes: seq + 1), the
    declared vocabulary fits the model's `vocab`, and every id is in [0, vocab) and below the declared vocabulary
    (reading every token once)."""
    need = seq + 1 if corpus.format == "bytes" else seq  # bytes: windows at random starts in [0, len - seq)
    for split in (corpus.train, corpus.val):
        if len(split) < need:
            what = "training" if split.name == "train" else "validation"
            raise DataError(f"the {what} data ({split.where}) has {len(split)} tokens, fewer than one "
                            f"{'window' if corpus.format == 'bytes' else 'sequence'} of {need}" +
                            (" (an empty split)" if len(split) == 0 else ""))
    if corpus.format != "bytes" and corpus.vocab_size is not None and corpus.vocab_size > vocab:
        raise DataError(f"{corpus.declared_by} declares a vocabulary of {corpus.vocab_size} ids, more than the model's "
                        f"{vocab}: the model cannot embed every token of this tokenizer")
    # The ids must fit the model's vocabulary and the data's own declaration (an id at or above the declared
    # vocabulary is a file that its tokenizer did not write: a declaration of another corpus).
    declared = corpus.vocab_size if corpus.format != "bytes" and corpus.vocab_size is not None else vocab
    for split in (corpus.train, corpus.val):
        bad = first_at_or_above(split.tokens, min(vocab, declared))
        if bad is not None and 0 <= bad[1] < vocab:
            pos, token = bad
            raise DataError(f"{split.where}: token id {token} at position {pos} is outside the vocabulary of {declared} "
                            f"ids that {corpus.declared_by} declares (format {corpus.format}): the declaration is not "
                            "this data's")
        if bad is not None:
            pos, token = bad
            if corpus.format == "bytes":
                raise DataError(f"--data {split.where}: holds the byte {token}, outside the model's vocabulary of "
                                f"{vocab} tokens (first at byte {pos}; format bytes, declared by {corpus.declared_by}: "
                                f"each byte is a token id; the model needs a vocabulary of 256, or data whose bytes "
                                f"are below {vocab})")
            raise DataError(f"{split.where}: token id {token} at position {pos} is outside the model's vocabulary of "
                            f"{vocab} (format {corpus.format}, declared by {corpus.declared_by})")
