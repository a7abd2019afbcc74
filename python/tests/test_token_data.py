"""Tests for python/ptrain/token_data.py and megatron_index.py: the formats of ptrain-run --data, detected from the
files, and every error they name. The Megatron fixture (fixtures/megatron/gpt_text_document.{bin,idx}) was written
by megatron-core 0.16.1's own IndexedDatasetBuilder (fixtures/megatron/make_fixture.py, which also checks that
megatron_index.write gives megatron-core's bytes)."""

import importlib.util
import json
import os
import pickle
import shutil
import struct

import numpy as np
import pytest

from ptrain import megatron_index, token_data

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "megatron", "gpt_text_document")


def fixture_script():
    """fixtures/megatron/make_fixture.py, loaded from its file (it is a script, not on the import path)."""
    spec = importlib.util.spec_from_file_location("make_fixture", os.path.join(HERE, "fixtures", "megatron",
                                                                                "make_fixture.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MAKE_FIXTURE = fixture_script()
SPLIT_DOC, TEXTS = _MAKE_FIXTURE.SPLIT_DOC, _MAKE_FIXTURE.TEXTS  # the fixture's documents

DOCS = [list(t.encode()) + [0] for t in TEXTS]


def copy_fixture(tmp_path):
    prefix = str(tmp_path / "ds")
    for ext in (".bin", ".idx"):
        shutil.copy(FIXTURE + ext, prefix + ext)
    return prefix


def test_megatron_fixture_fields():
    ds = megatron_index.IndexedDataset(FIXTURE)
    assert ds.dtype == np.uint16
    assert ds.document_count == len(TEXTS)
    # Document SPLIT_DOC holds two sequences (add_document with two lengths).
    assert ds.documents.tolist() == [0, 1, 2, 4, 5, 6, 7]
    assert len(ds.lengths) == len(TEXTS) + 1
    assert ds.tokens.tolist() == [t for d in DOCS for t in d]
    assert ds.document_tokens(SPLIT_DOC, SPLIT_DOC + 1) == (sum(map(len, DOCS[:SPLIT_DOC])),
                                                           sum(map(len, DOCS[:SPLIT_DOC + 1])))


def test_megatron_prefix_holds_out_the_last_documents():
    corpus = token_data.open_corpus(FIXTURE)
    assert corpus.format == "megatron" and corpus.declared_by == FIXTURE + ".idx"
    # 6 documents: max(1, 6 // 20) = 1 held out.
    assert corpus.train.tokens.tolist() == [t for d in DOCS[:5] for t in d]
    assert corpus.val.tokens.tolist() == DOCS[5]
    token_data.check(corpus, 256, 8)
    with pytest.raises(token_data.DataError, match=r"token id 1\d\d at position \d+ is outside the model's vocabulary "
                                                   r"of 100 \(format megatron"):
        token_data.check(corpus, 100, 8)


def test_megatron_folder_with_declaration(tmp_path):
    for name, docs in (("train", DOCS[:4]), ("val", DOCS[4:])):
        megatron_index.write(str(tmp_path / name), [np.asarray(d) for d in docs], np.int32)
    (tmp_path / "data.json").write_text(json.dumps({"format": "megatron", "vocab_size": 128, "eod": 0}))
    corpus = token_data.open_corpus(str(tmp_path))
    assert corpus.vocab_size == 128 and corpus.eod == 0 and corpus.train.tokens.dtype == np.int32
    assert corpus.val.tokens.tolist() == DOCS[4] + DOCS[5]
    with pytest.raises(token_data.DataError, match="declares a vocabulary of 128 ids, more than the model's 100"):
        token_data.check(corpus, 100, 4)
    # Without data.json the folder's train.idx declares it.
    (tmp_path / "data.json").unlink()
    assert token_data.open_corpus(str(tmp_path)).format == "megatron"


def rewrite(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


@pytest.mark.parametrize("damage,message", [
    (lambda p: rewrite(p + ".idx", 0, b"XXXXXXX"), r"not a Megatron index \(the first 9 bytes are"),
    (lambda p: rewrite(p + ".idx", 9, struct.pack("<Q", 2)), "index version 2; only version 1 exists"),
    (lambda p: rewrite(p + ".idx", 17, b"\x09"), "dtype code 9 is none of Megatron's"),
    (lambda p: rewrite(p + ".idx", 17, b"\x07"), "dtype code 7 is float32: token ids must be integers"),
    (lambda p: os.truncate(p + ".idx", 20), "truncated: 20 bytes, shorter than the 34-byte header"),
    (lambda p: os.truncate(p + ".idx", os.path.getsize(p + ".idx") - 8),
     r"truncated: 166 bytes, but its 7 sequences and 7 document index entries need 174"),
    (lambda p: open(p + ".idx", "ab").write(b"\x00" * 3), r"177 bytes, but .* need 174 \(or 181 with sequence modes\)"),
    (lambda p: os.truncate(p + ".bin", 100), r"ds.bin: 100 bytes, shorter than the 422 bytes \(211 uint16 tokens\)"),
    (lambda p: rewrite(p + ".idx", 34 + 4 * 7 + 8, struct.pack("<q", 3)), "sequence 1 starts at byte 3 of"),
    (lambda p: rewrite(p + ".idx", 34 + 12 * 7 + 8 * 6, struct.pack("<q", 6)),
     "the document index must run from 0 to the sequence count 7"),
    (lambda p: os.remove(p + ".bin"), r"ds.bin: no such file"),
])
def test_megatron_errors(tmp_path, damage, message):
    prefix = copy_fixture(tmp_path)
    damage(prefix)
    with pytest.raises(token_data.DataError, match=message):
        token_data.open_corpus(prefix)


def test_megatron_one_document_cannot_be_split(tmp_path):
    megatron_index.write(str(tmp_path / "one"), [np.arange(10)], np.uint16)
    with pytest.raises(token_data.DataError, match=r"1 document\(s\): too few to hold one out"):
        token_data.open_corpus(str(tmp_path / "one"))


def nanogpt(tmp_path, dtype="uint16", vocab=300, train=None, val=None, **extra):
    train = np.arange(1000) % vocab if train is None else train
    val = np.arange(200) % vocab if val is None else val
    np.asarray(train, dtype=dtype).astype(np.dtype(dtype).newbyteorder("<")).tofile(tmp_path / "train.bin")
    np.asarray(val, dtype=dtype).astype(np.dtype(dtype).newbyteorder("<")).tofile(tmp_path / "val.bin")
    (tmp_path / "data.json").write_text(json.dumps({"format": "nanogpt", "dtype": dtype, "vocab_size": vocab,
                                                    **extra}))
    return str(tmp_path)


@pytest.mark.parametrize("dtype,vocab", [("uint16", 300), ("uint32", 70000)])
def test_nanogpt_declared(tmp_path, dtype, vocab):
    corpus = token_data.open_corpus(nanogpt(tmp_path, dtype, vocab, train=np.arange(1000) * 61 % vocab, eod=0))
    assert corpus.format == "nanogpt" and corpus.vocab_size == vocab and corpus.eod == 0
    assert corpus.train.tokens.dtype == np.dtype(dtype) and len(corpus.train) == 1000
    assert corpus.train.tokens[7] == 7 * 61 % vocab
    token_data.check(corpus, vocab, 64)


def test_nanogpt_meta_pkl(tmp_path):
    np.arange(500, dtype="<u2").tofile(tmp_path / "train.bin")
    (np.arange(100, dtype="<u2") % 65).tofile(tmp_path / "val.bin")
    chars = [chr(32 + i) for i in range(65)]
    with open(tmp_path / "meta.pkl", "wb") as f:  # what nanoGPT's data/shakespeare_char/prepare.py writes
        pickle.dump({"vocab_size": 65, "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}, f)
    corpus = token_data.open_corpus(str(tmp_path))
    assert corpus.format == "nanogpt" and corpus.vocab_size == 65 and corpus.declared_by.endswith("meta.pkl")
    with pytest.raises(token_data.DataError,
                       match="token id 65 at position 65 is outside the model's vocabulary of 65"):
        token_data.check(corpus, 65, 16)
    (tmp_path / "data.json").write_text(json.dumps({"format": "nanogpt", "dtype": "uint16", "vocab_size": 600}))
    with pytest.raises(token_data.DataError, match="declares a vocabulary of 600, but .*meta.pkl says 65"):
        token_data.open_corpus(str(tmp_path))


def test_meta_pkl_runs_no_code(tmp_path):
    np.arange(100, dtype="<u2").tofile(tmp_path / "train.bin")
    np.arange(100, dtype="<u2").tofile(tmp_path / "val.bin")

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with open(tmp_path / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": Evil()}, f)
    with pytest.raises(token_data.DataError, match="not a nanoGPT meta.pkl .*refusing to load"):
        token_data.open_corpus(str(tmp_path))


@pytest.mark.parametrize("change,message", [
    ({"dtype": "int8"}, r"'dtype' must be uint16 or uint32 .*not 'int8'"),
    ({"vocab_size": 70000}, "a vocabulary of 70000 ids does not fit uint16 \\(at most 65536\\): use uint32"),
    ({"vocab_size": "many"}, "'vocab_size' must be a positive integer"),
    ({"eod": 300}, "'eod' must be a token id below the vocabulary of 300"),
    ({"format": "arrow"}, "'format' must be one of megatron, nanogpt, bytes, not 'arrow'"),
])
def test_nanogpt_bad_declaration(tmp_path, change, message):
    nanogpt(tmp_path)
    decl = json.loads((tmp_path / "data.json").read_text())
    (tmp_path / "data.json").write_text(json.dumps(dict(decl, **change)))
    with pytest.raises(token_data.DataError, match=message):
        token_data.open_corpus(str(tmp_path))


def test_wrong_dtype_is_not_a_whole_number_of_ids(tmp_path):
    nanogpt(tmp_path)
    with open(tmp_path / "val.bin", "ab") as f:
        f.write(b"\x01")  # 401 bytes: not uint16
    with pytest.raises(token_data.DataError, match=r"val.bin: 401 bytes, not a whole number of uint16 ids"):
        token_data.open_corpus(str(tmp_path))
    nanogpt(tmp_path, train=np.arange(999) % 300)  # 999 uint16 ids read as uint32
    decl = json.loads((tmp_path / "data.json").read_text())
    (tmp_path / "data.json").write_text(json.dumps(dict(decl, dtype="uint32")))
    with pytest.raises(token_data.DataError, match=r"train.bin: 1998 bytes, not a whole number of uint32 ids "
                                                   r"\(4 bytes each\): the wrong dtype"):
        token_data.open_corpus(str(tmp_path))


def test_empty_split(tmp_path):
    corpus = token_data.open_corpus(nanogpt(tmp_path, val=[]))
    with pytest.raises(token_data.DataError, match=r"the validation data \(.*val.bin\) has 0 tokens, fewer than one "
                                                   r"sequence of 64 \(an empty split\)"):
        token_data.check(corpus, 300, 64)


def test_first_offending_id_is_named(tmp_path):
    train = np.arange(1000) % 256
    train[[700, 500]] = [299, 280]
    corpus = token_data.open_corpus(nanogpt(tmp_path, vocab=256, train=train))
    with pytest.raises(token_data.DataError, match="train.bin: token id 280 at position 500 is outside the model's "
                                                   "vocabulary of 256"):
        token_data.check(corpus, 256, 64)
    assert token_data.first_at_or_above(corpus.train.tokens, 256, chunk=7) == (500, 280)
    assert token_data.first_at_or_above(np.array([3, -1, 2], dtype=np.int32), 10) == (1, -1)


def test_id_beyond_the_declared_vocabulary(tmp_path):
    # ids up to 255 under a declaration of 200 ids, for a model of 256: the declaration is not this data's.
    corpus = token_data.open_corpus(nanogpt(tmp_path, vocab=200, train=np.arange(1000) % 256))
    with pytest.raises(token_data.DataError, match=r"train.bin: token id 200 at position 200 is outside the vocabulary "
                                                   r"of 200 ids that .*data.json declares \(format nanogpt\)"):
        token_data.check(corpus, 256, 64)


def test_undeclared_and_mismatched_formats(tmp_path):
    (tmp_path / "train.bin").write_bytes(bytes(100))
    (tmp_path / "val.bin").write_bytes(bytes(100))
    with pytest.raises(token_data.DataError, match="its format is not declared"):
        token_data.open_corpus(str(tmp_path))
    corpus = token_data.open_corpus(str(tmp_path), "bytes")
    assert corpus.format == "bytes" and corpus.declared_by == "--data-format bytes"
    with pytest.raises(token_data.DataError, match="its format is not declared"):
        token_data.open_corpus(str(tmp_path / "train.bin"))
    single = token_data.open_corpus(str(tmp_path / "train.bin"), "bytes")
    assert single.val.where == str(tmp_path / "val.bin")
    with pytest.raises(token_data.DataError, match="--data-format nanogpt: .*ds.idx declares the format megatron"):
        token_data.open_corpus(copy_fixture(tmp_path), "nanogpt")
    with pytest.raises(token_data.DataError, match="no such file, folder or Megatron prefix"):
        token_data.open_corpus(str(tmp_path / "nothing"))


def test_data_py_declares_bytes(tmp_path):
    from ptrain import data
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.py").write_text("x = 1\n" * 200)
    (tmp_path / "lib" / "b.py").write_text("y = 2\n" * 200)
    assert data.main(["--out", str(tmp_path / "out"), "--stdlib", str(tmp_path / "lib")]) == 0
    assert json.loads((tmp_path / "out" / "data.json").read_text()) == {"format": "bytes"}
    corpus = token_data.open_corpus(str(tmp_path / "out"))
    assert corpus.format == "bytes" and corpus.train.tokens.dtype == np.uint8


def test_val_data_prefix_trains_on_every_document(tmp_path):
    docs = [np.arange(10 + i, dtype=np.int64) % 50 for i in range(30)]
    megatron_index.write(str(tmp_path / "a"), docs, np.uint16)
    megatron_index.write(str(tmp_path / "b"), docs[:4], np.uint16)
    held = token_data.open_corpus(str(tmp_path / "a"))
    assert len(held.train) < sum(len(d) for d in docs)  # Without --val-data: the last documents are held out.
    c = token_data.open_corpus(str(tmp_path / "a"), val_data=str(tmp_path / "b"))
    assert len(c.train) == sum(len(d) for d in docs) and list(c.train.lengths) == [len(d) for d in docs]
    assert np.array_equal(c.val.tokens, np.concatenate(docs[:4])) and c.val.where.startswith("--val-data ")
    assert list(c.val.lengths) == [len(d) for d in docs[:4]]


def test_val_data_folder_and_bytes_file(tmp_path):
    for name, n in (("train", 400), ("val", 100)):
        (np.arange(n, dtype="<u2") % 7).tofile(tmp_path / f"{name}.bin")
    (tmp_path / "data.json").write_text(json.dumps({"format": "nanogpt", "dtype": "uint16", "vocab_size": 8}))
    other = tmp_path / "other"
    other.mkdir()
    (np.arange(60, dtype="<u2") % 5).tofile(other / "val.bin")
    (np.arange(60, dtype="<u2") % 5).tofile(other / "train.bin")
    (other / "data.json").write_text(json.dumps({"format": "nanogpt", "dtype": "uint16", "vocab_size": 8}))
    c = token_data.open_corpus(str(tmp_path), val_data=str(other))
    assert len(c.train) == 400 and len(c.val) == 60  # A folder: its val split.
    (other / "data.json").write_text(json.dumps({"format": "nanogpt", "dtype": "uint16", "vocab_size": 6}))
    with pytest.raises(token_data.DataError, match="declares the vocabulary 6"):
        token_data.open_corpus(str(tmp_path), val_data=str(other))
    (tmp_path / "all.txt").write_bytes(b"x" * 1000)
    (tmp_path / "v.txt").write_bytes(b"y" * 300)
    c = token_data.open_corpus(str(tmp_path / "all.txt"), "bytes", val_data=str(tmp_path / "v.txt"))
    assert len(c.train) == 1000 and len(c.val) == 300  # Bytes files: all of each.
