"""Tests for ptrain-data (<build>/bin/ptrain-data, python/ptrain/data_tool.py): the tokenizer it trains or loads, the
round trip (the files it writes decode back to the documents, exactly), the seeded split by document, the
formats it writes (read back by python/ptrain/token_data.py), reproducibility, and its errors. The tool runs under
the project's .venv (Hugging Face tokenizers; scripts/setup-python.sh): skipped without it outside CI."""

import json
import os
import subprocess

import numpy as np
import pytest

from ptrain import data_tool, token_data

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
# Under CTest (python-tests sets PTRAIN_BUILD_DIR) the build's wrapper, which Debian's python3 runs and which runs
# the tool under .venv (tokenizers; tools/python-tool.in); by hand, without a build, the module under .venv.
BUILD_TOOL = os.path.join(os.environ.get("PTRAIN_BUILD_DIR", ""), "bin", "ptrain-data")

DOCS = {
    "a.py": "def f(x):\n    return x * 2  # doubles\n\n\tprint(f(3))\n",
    "b.txt": "Grüße aus Zürich: naïve café, 東京, emoji 🚀 and a tab\there.\n",
    "sub/c.md": "# Title\n\nSome *markdown* text with `code` and trailing spaces   \n",
    "sub/d.rst": "Section\n=======\n\n.. note:: restructured text\n",
    "e.py": "import os\nfor name in sorted(os.listdir('.')):\n    print(name)\n" * 3,
    "f.txt": "no newline at the end",
    "g.py": "x = {'k': [1, 2, 3]}\n" * 10,
    "h.txt": "   leading spaces and \r\n windows line ends\r\n",
}


@pytest.fixture
def venv():
    if not os.path.exists(VENV_PYTHON):
        if os.environ.get("CI") == "true":
            pytest.fail(".venv is missing under CI: scripts/setup.sh must create it (scripts/setup-python.sh)")
        pytest.skip(".venv is missing: run scripts/setup-python.sh to test ptrain-data")
    return VENV_PYTHON


@pytest.fixture
def texts(tmp_path):
    root = tmp_path / "corpus"
    for name, text in DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())
    (root / "binary.txt").write_bytes(b"\xff\xfe\x00 not text")
    return root


def tool(*args):
    if os.environ.get("PTRAIN_BUILD_DIR"):
        return subprocess.run([BUILD_TOOL, *map(str, args)], capture_output=True, text=True)
    return subprocess.run([VENV_PYTHON, "-m", "ptrain.data_tool", *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))


DECODE = """
import json, sys
from tokenizers import Tokenizer
from ptrain import token_data
tok = Tokenizer.from_file(sys.argv[1] + "/tokenizer.json")
corpus = token_data.open_corpus(sys.argv[1])
eod = json.load(open(sys.argv[1] + "/data.json"))["eod"]
out = {}
for split in (corpus.train, corpus.val):
    ids = split.tokens.tolist()
    docs, cur = [], []
    for t in ids:
        if t == eod:
            docs.append(tok.decode(cur, skip_special_tokens=False)); cur = []
        else:
            cur.append(t)
    assert not cur, "a document without its end-of-document id"
    out[split.name] = docs
print(json.dumps(out))
"""


def decoded(venv, out):
    p = subprocess.run([venv, "-c", DECODE, str(out)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def expected_split(seed, fraction=0.25):
    names = sorted("corpus/" + n for n in DOCS)
    train, val = data_tool.split(names, fraction, seed)
    return [DOCS[names[i][len("corpus/"):]] for i in train], [DOCS[names[i][len("corpus/"):]] for i in val]


@pytest.mark.parametrize("fmt,model", [("megatron", "bpe"), ("nanogpt", "bpe"), ("megatron", "unigram")])
def test_round_trip(venv, texts, tmp_path, fmt, model):
    out = tmp_path / "out"
    p = tool(texts, "-o", out, "--format", fmt, "--model", model, "--vocab-size", 300, "--val-fraction", 0.25,
             "--seed", 7)
    assert p.returncode == 0, p.stderr
    assert "skipped 1 file(s) that are not UTF-8 text: corpus/binary.txt" in p.stdout
    decl = json.loads((out / "data.json").read_text())
    assert decl["format"] == fmt and decl["eod"] == 0 and decl["vocab_size"] <= 300
    assert decl["documents"] == {"train": 6, "val": 2}
    if fmt == "nanogpt":
        assert decl["dtype"] == "uint16"
    corpus = token_data.open_corpus(str(out))
    assert corpus.format == fmt and corpus.vocab_size == decl["vocab_size"]
    token_data.check(corpus, decl["vocab_size"], 4)
    assert len(corpus.train) == decl["tokens"]["train"]
    train, val = expected_split(7)
    assert decoded(venv, out) == {"train": train, "val": val}  # encode, then decode: the text back, exactly


def test_reproducible_and_loadable(venv, texts, tmp_path):
    runs = [tmp_path / "one", tmp_path / "two"]
    for out in runs:
        assert tool(texts, "-o", out, "--vocab-size", 320, "--val-fraction", 0.25).returncode == 0
    for name in ("train.bin", "train.idx", "val.bin", "val.idx", "tokenizer.json", "data.json"):
        assert (runs[0] / name).read_bytes() == (runs[1] / name).read_bytes(), name
    # --tokenizer: the trained tokenizer.json loaded gives the same token files.
    p = tool(texts, "-o", tmp_path / "loaded", "--tokenizer", runs[0] / "tokenizer.json", "--val-fraction", 0.25)
    assert p.returncode == 0, p.stderr
    for name in ("train.bin", "train.idx", "val.bin", "val.idx"):
        assert (runs[0] / name).read_bytes() == (tmp_path / "loaded" / name).read_bytes(), name
    # Another seed: another split by document.
    assert tool(texts, "-o", tmp_path / "s1", "--vocab-size", 320, "--val-fraction", 0.25, "--seed", 1).returncode == 0
    train0, _ = expected_split(0)
    train1, _ = expected_split(1)
    assert train0 != train1
    assert decoded(venv, tmp_path / "s1")["train"] == train1


@pytest.mark.parametrize("args,message", [
    (["--vocab-size", "100"], "a byte-level BPE needs at least 257 ids"),
    ([], "give either --vocab-size N"),
    (["--vocab-size", "300", "--val-fraction", "1.5"], r"--val-fraction 1.5: must be in \(0, 1\)"),
    (["--vocab-size", "300", "--ext", ".nothing"], "no documents in"),
])
def test_errors(venv, texts, tmp_path, args, message):
    p = tool(texts, "-o", tmp_path / "out", *args)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert message in p.stderr or __import__("re").search(message, p.stderr), p.stderr


def test_input_errors(venv, texts, tmp_path):
    p = tool(tmp_path / "missing", "-o", tmp_path / "out", "--vocab-size", 300)
    assert p.returncode == 1 and "missing: no such file or folder" in p.stderr
    p = tool(texts / "a.py", "-o", tmp_path / "out", "--vocab-size", 300)
    assert p.returncode == 1 and "1 document(s): at least 2 are needed" in p.stderr
    (tmp_path / "bad.json").write_text("{}")
    p = tool(texts, "-o", tmp_path / "out", "--tokenizer", tmp_path / "bad.json")
    assert p.returncode == 1 and "not a tokenizers tokenizer.json" in p.stderr and "Traceback" not in p.stderr


def test_output_folder_is_all_or_nothing(venv, texts, tmp_path):
    # A failed run makes no folder and leaves an existing one as it was; a run in another format leaves none of
    # the earlier format's files beside its own.
    p = tool(texts, "-o", tmp_path / "new", "--tokenizer", tmp_path / "nonexistent.json")
    assert p.returncode == 1 and not (tmp_path / "new").exists(), p.stderr
    out = tmp_path / "out"
    assert tool(texts, "-o", out, "--vocab-size", 300, "--val-fraction", 0.25).returncode == 0
    before = {n: (out / n).read_bytes() for n in os.listdir(out)}
    p = tool(texts, "-o", out, "--tokenizer", tmp_path / "nonexistent.json")
    assert p.returncode == 1 and {n: (out / n).read_bytes() for n in os.listdir(out)} == before
    p = tool(texts, "-o", out, "--vocab-size", 300, "--val-fraction", 0.25, "--format", "nanogpt")
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == ["data.json", "tokenizer.json", "train.bin", "val.bin"]
    assert token_data.open_corpus(str(out)).format == "nanogpt"


def test_split_is_by_document_and_seeded():
    names = [f"d{i}" for i in range(40)]
    train, val = data_tool.split(names, 0.05, 0)
    assert len(val) == 2 and sorted(train + val) == list(range(40))
    assert data_tool.split(names, 0.05, 0) == (train, val) and data_tool.split(names, 0.05, 1) != (train, val)
    assert data_tool.split(["a", "b"], 0.9, 0)[0]  # at least one document stays for training
    assert np.all(np.diff(train) > 0)
