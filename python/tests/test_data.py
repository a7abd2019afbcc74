"""Tests for python/ptrain/data.py (standard library only; numpy optional)."""

import math

import pytest

from ptrain import data


def test_entropy_of_known_strings():
    assert data.unigram_entropy(b"") == (0.0, 0.0)
    assert data.unigram_entropy(b"aaaa") == (0.0, 0.0)
    bits, nats = data.unigram_entropy(b"abab")
    assert bits == pytest.approx(1.0)
    assert nats == pytest.approx(math.log(2))
    # p = (1/2, 1/4, 1/4): H = 1.5 bits
    bits, nats = data.unigram_entropy(b"aabc")
    assert bits == pytest.approx(1.5)
    assert nats == pytest.approx(1.5 * math.log(2))
    # all 256 byte values equally often: 8 bits
    bits, _ = data.unigram_entropy(bytes(range(256)) * 3)
    assert bits == pytest.approx(8.0)


def test_byte_counts_without_numpy(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_numpy(name, *a, **k):
        if name == "numpy":
            raise ImportError("no numpy")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_numpy)
    counts = data.byte_counts(b"aabc\x00")
    assert counts[ord("a")] == 2 and counts[ord("b")] == 1 and counts[0] == 1
    assert sum(counts) == 5
    assert data.unigram_entropy(b"aabc")[0] == pytest.approx(1.5)
    x, y = data.get_batch(bytes(range(100)), batch_size=3, seq_len=8, seed=1)
    offs = data.batch_offsets(100, 3, 8, 1)
    assert x == [list(range(o, o + 8)) for o in offs]
    assert y == [list(range(o + 1, o + 9)) for o in offs]


def test_read_bin_roundtrip(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(bytes(range(256)) * 2)
    d = data.read_bin(str(p))
    assert len(d) == 512 and bytes(d[250:260]) == bytes([250, 251, 252, 253, 254, 255, 0, 1, 2, 3])
    x, y = data.get_batch(d, batch_size=2, seq_len=10, seed=3)
    for o, xi, yi in zip(data.batch_offsets(512, 2, 10, 3), x, y):
        assert [int(v) for v in xi] == [(o + i) % 256 for i in range(10)]
        assert [int(v) for v in yi] == [(o + 1 + i) % 256 for i in range(10)]


def _make_tree(root):
    files = {
        "a.py": b"print('a')\n",
        "b.py": b"x = 1",  # no trailing newline
        "pkg/__init__.py": b"",
        "pkg/mod.py": b"def f():\n    return 2\n",
        "pkg/notes.txt": b"not python\n",
        "test/test_a.py": b"excluded\n",
        "pkg/tests/test_b.py": b"excluded\n",
        "site-packages/foo.py": b"excluded\n",
        "dist-packages/bar.py": b"excluded\n",
        "config-3.11-x86_64-linux-gnu/python-config.py": b"excluded\n",
        "_sysconfigdata__linux.py": b"excluded\n",
    }
    for i in range(60):
        files[f"gen/m{i:02d}.py"] = (f"# module {i}\n" * (i + 1)).encode()
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)
    return files


def test_list_sources_excludes(tmp_path):
    _make_tree(tmp_path)
    rels = data.list_sources(str(tmp_path))
    assert rels == sorted(rels)
    assert "a.py" in rels and "b.py" in rels and "pkg/mod.py" in rels
    assert not any("excluded" in (tmp_path / r).read_text() for r in rels)
    assert not any(r.endswith(".txt") for r in rels)
    assert len(rels) == 4 + 60


def test_split_is_deterministic_and_disjoint(tmp_path):
    _make_tree(tmp_path)
    rels = data.list_sources(str(tmp_path))
    train, val = data.split_files(rels)
    assert set(train).isdisjoint(val) and set(train) | set(val) == set(rels)
    # Independent of the input order and of PYTHONHASHSEED (crc32-based).
    assert data.split_files(list(reversed(rels))) == (train, val)
    assert all(data.is_val(r) for r in val) and not any(data.is_val(r) for r in train)
    assert val == [r for r in val if (data.file_key(r) % 20) == 0]
    import zlib

    assert data.file_key("os.py") == zlib.crc32(b"os.py")


def test_build_corpus_deterministic_and_capped(tmp_path):
    files = _make_tree(tmp_path)
    t1, v1, info = data.build_corpus(str(tmp_path), max_bytes=10**9)
    t2, v2, _ = data.build_corpus(str(tmp_path), max_bytes=10**9)
    assert (t1, v1) == (t2, v2)
    assert info["files"] == 64
    # Uncapped: every included file appears once, newline-terminated.
    included = {r: c for r, c in files.items() if r in data.list_sources(str(tmp_path))}
    expected_len = sum(len(c) + (0 if c.endswith(b"\n") else 1) for c in included.values())
    assert len(t1) + len(v1) == expected_len
    assert b"x = 1\n" in t1 + v1
    # Capped: 95/5 of the cap, and a prefix of the uncapped corpus.
    cap = 2000
    t3, v3, _ = data.build_corpus(str(tmp_path), max_bytes=cap)
    assert len(v3) <= round(cap * 0.05) and len(t3) <= cap - round(cap * 0.05)
    assert t1.startswith(t3) and v1.startswith(v3)


def test_main_writes_files(tmp_path, capsys):
    _make_tree(tmp_path / "src")
    out = tmp_path / "out"
    assert data.main(["--out", str(out), "--stdlib", str(tmp_path / "src")]) == 0
    train = (out / "train.bin").read_bytes()
    val = (out / "val.bin").read_bytes()
    t, v, _ = data.build_corpus(str(tmp_path / "src"))
    assert (train, val) == (t, v)
    printed = capsys.readouterr().out
    bits, nats = data.unigram_entropy(val)
    assert f"{bits:.6f} bits" in printed and f"{nats:.6f} nats" in printed


def test_get_batch_windows():
    corpus = bytes(range(200))
    x, y = data.get_batch(corpus, batch_size=5, seq_len=16, seed=7)
    x2, y2 = data.get_batch(corpus, batch_size=5, seq_len=16, seed=7)
    x, y, x2, y2 = (list(map(list, a)) for a in (x, y, x2, y2))
    assert (x, y) == (x2, y2)
    offs = data.batch_offsets(len(corpus), 5, 16, 7)
    assert len(x) == 5 and all(len(r) == 16 for r in x + y)
    for o, xi, yi in zip(offs, x, y):
        assert xi == list(corpus[o : o + 16])
        assert yi == list(corpus[o + 1 : o + 17])
    x3, _ = data.get_batch(corpus, batch_size=5, seq_len=16, seed=8)
    assert list(map(list, x3)) != x
    # Every window fits, including at the edge.
    assert max(data.batch_offsets(17, 100, 16, 0)) == 0
    with pytest.raises(ValueError):
        data.batch_offsets(16, 1, 16, 0)
