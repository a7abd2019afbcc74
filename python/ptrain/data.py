#!/usr/bin/env python3
"""Byte-level training corpus for the bundled GPT, built offline from the Python standard library.

    python3 python/ptrain/data.py --out OUT [--max-bytes 8000000] [--stdlib DIR]

Collects every ``*.py`` file under the standard library of the interpreter that runs it
(``sysconfig.get_paths()['stdlib']``, or ``--stdlib``), excluding test directories, site-packages /
dist-packages, the Tk packages that Debian ships apart (tkinter, idlelib, turtledemo) and machine-generated
files, and writes two raw uint8 files:

  OUT/train.bin   about 95% of the bytes
  OUT/val.bin     about 5% of the bytes
  OUT/data.json   {"format": "bytes"}: the declaration ptrain-run reads (python/ptrain/token_data.py; DESIGN.md
                  decision 13: data formats are declared by the files)

The split is by file and deterministic: a file belongs to val when crc32 of its path relative to
the stdlib root is 0 mod 20. Files are taken in a fixed order (by that crc32, then path, so a
capped corpus still samples the whole library) and concatenated, each followed by a newline if it
has none. Each split is capped at its share of ``--max-bytes`` (train 95%, val 5%); the last file
that does not fit is truncated. The same interpreter build gives byte-identical files.

It prints the byte-level unigram entropy of val.bin, H = -sum_b p(b) log p(b), in bits and nats:
the loss a model that ignores context would reach.

Library use: ``read_bin(path)`` and ``get_batch(data, batch_size, seq_len, seed)`` give
(input, target) windows: each window is seq_len+1 consecutive bytes, input = window[:-1],
target = window[1:]. No dependency beyond the standard library; numpy is used when present.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import sysconfig
import zlib
from typing import Iterable, List, Sequence, Tuple

VAL_MODULUS = 20  # 1 file in 20 goes to val: ~95/5
VAL_FRACTION = 1.0 / VAL_MODULUS
DEFAULT_MAX_BYTES = 8_000_000

# tkinter, idlelib and turtledemo come with Debian's optional python3-tk / idle packages (python3-matplotlib
# pulls python3-tk in): excluded so that the corpus does not depend on what else is installed.
EXCLUDED_DIRS = frozenset(
    {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__", "tkinter", "idlelib",
     "turtledemo"}
)


def _excluded_dir(name: str) -> bool:
    return name in EXCLUDED_DIRS or name.startswith("config-")  # config-3.11-x86_64-linux-gnu


def _excluded_file(name: str) -> bool:
    # _sysconfigdata_*.py are generated per build and machine.
    return not name.endswith(".py") or name.startswith("_sysconfigdata")


def stdlib_dir() -> str:
    return sysconfig.get_paths()["stdlib"]


def list_sources(root: str) -> List[str]:
    """Relative paths ('/'-separated) of the corpus files under root, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _excluded_dir(d))
        for f in filenames:
            if not _excluded_file(f):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                out.append(rel.replace(os.sep, "/"))
    return sorted(out)


def file_key(rel: str) -> int:
    return zlib.crc32(rel.encode("utf-8"))


def is_val(rel: str) -> bool:
    return file_key(rel) % VAL_MODULUS == 0


def split_files(rels: Iterable[str]) -> Tuple[List[str], List[str]]:
    """(train, val) relative paths, each in corpus order: by (crc32, path)."""
    ordered = sorted(rels, key=lambda r: (file_key(r), r))
    train = [r for r in ordered if not is_val(r)]
    val = [r for r in ordered if is_val(r)]
    return train, val


def concat(chunks: Iterable[bytes], cap: int) -> bytes:
    """Concatenate chunks (each newline-terminated), truncated to at most cap bytes."""
    parts, n = [], 0
    for c in chunks:
        if n >= cap:
            break
        if not c.endswith(b"\n"):
            c = c + b"\n"
        c = c[: cap - n]
        parts.append(c)
        n += len(c)
    return b"".join(parts)


def build_corpus(root: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Tuple[bytes, bytes, dict]:
    rels = list_sources(root)
    train_files, val_files = split_files(rels)

    def read(rs):
        for r in rs:
            with open(os.path.join(root, r), "rb") as f:
                yield f.read()

    val_cap = int(round(max_bytes * VAL_FRACTION))
    train_cap = max_bytes - val_cap
    train = concat(read(train_files), train_cap)
    val = concat(read(val_files), val_cap)
    info = {"files": len(rels), "train_files": len(train_files), "val_files": len(val_files)}
    return train, val, info


def byte_counts(data: bytes) -> List[int]:
    try:
        import numpy as np

        return np.bincount(np.frombuffer(data, dtype=np.uint8), minlength=256).tolist()
    except ImportError:
        counts = [0] * 256
        for b in range(256):
            counts[b] = data.count(bytes([b]))
        return counts


def unigram_entropy(data: bytes) -> Tuple[float, float]:
    """Byte unigram entropy of data: (bits, nats). Empty data has entropy 0."""
    n = len(data)
    if n == 0:
        return 0.0, 0.0
    nats = 0.0
    for c in byte_counts(data):
        if c:
            p = c / n
            nats -= p * math.log(p)
    return nats / math.log(2), nats


def read_bin(path: str):
    """The bytes of a .bin file (a read-only numpy memmap of uint8 when numpy is present)."""
    try:
        import numpy as np

        return np.memmap(path, dtype=np.uint8, mode="r")
    except ImportError:
        with open(path, "rb") as f:
            return f.read()


def batch_offsets(n: int, batch_size: int, seq_len: int, seed: int) -> List[int]:
    """batch_size window starts in [0, n - seq_len - 1], drawn with random.Random(seed)."""
    if n < seq_len + 1:
        raise ValueError(f"data of {n} bytes is shorter than one window of {seq_len + 1}")
    rng = random.Random(seed)
    return [rng.randrange(n - seq_len) for _ in range(batch_size)]


def get_batch(data: Sequence[int], batch_size: int, seq_len: int, seed: int):
    """One batch of (input, target), each [batch_size, seq_len] of byte values.

    Window i is data[o_i : o_i + seq_len + 1] with o_i = batch_offsets(...)[i]; input is its first
    seq_len bytes, target its last seq_len. Returns numpy int64 arrays when numpy is present,
    else lists of lists of ints. Use a different seed per step (e.g. base_seed * 1_000_003 + step).
    """
    offs = batch_offsets(len(data), batch_size, seq_len, seed)
    try:
        import numpy as np

        if isinstance(data, (bytes, bytearray, memoryview)):
            d = np.frombuffer(data, dtype=np.uint8)
        else:
            d = np.asarray(data, dtype=np.uint8)
        w = np.stack([np.asarray(d[o : o + seq_len + 1], dtype=np.int64) for o in offs])
        return w[:, :-1], w[:, 1:]
    except ImportError:
        ws = [list(data[o : o + seq_len + 1]) for o in offs]
        return [w[:-1] for w in ws], [w[1:] for w in ws]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder for train.bin and val.bin")
    ap.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                    help=f"total size cap, train+val (default {DEFAULT_MAX_BYTES})")
    ap.add_argument("--stdlib", default=None, help="source folder (default: this interpreter's stdlib)")
    args = ap.parse_args(argv)

    root = args.stdlib or stdlib_dir()
    train, val, info = build_corpus(root, args.max_bytes)
    os.makedirs(args.out, exist_ok=True)
    for name, data in (("train.bin", train), ("val.bin", val)):
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
    with open(os.path.join(args.out, "data.json"), "w") as f:
        f.write('{"format": "bytes"}\n')
    bits, nats = unigram_entropy(val)
    print(f"source {root} (Python {sys.version.split()[0]}): {info['files']} files, "
          f"{info['train_files']} train / {info['val_files']} val")
    print(f"train.bin {len(train)} bytes, val.bin {len(val)} bytes, "
          f"crc32 {zlib.crc32(train):08x} / {zlib.crc32(val):08x}")
    print(f"val unigram entropy: {bits:.6f} bits/byte = {nats:.6f} nats/byte")
    return 0


if __name__ == "__main__":
    sys.exit(main())
