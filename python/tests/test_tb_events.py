"""Tests for python/ptrain/tb_events.py: CRC-32C, the TFRecord framing, and the event file read back by the
tensorboard package's own reader (in the project's .venv; skipped without it outside CI)."""

import json
import os
import struct
import subprocess

import pytest

from ptrain import tb_events

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")


def test_crc32c_check_values():
    assert tb_events.crc32c(b"123456789") == 0xE3069283  # RFC 3720 B.4 / the CRC catalogue's check value
    assert tb_events.crc32c(b"") == 0
    assert tb_events.crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4: 32 bytes of zeros


def test_record_framing(tmp_path):
    w = tb_events.EventWriter(str(tmp_path))
    w.scalars(3, {"train/loss": 1.5, "skipped": None})
    w.close()
    blob = open(w.path, "rb").read()
    records, at = [], 0
    while at < len(blob):
        (n,) = struct.unpack_from("<Q", blob, at)
        assert struct.unpack_from("<I", blob, at + 8)[0] == tb_events.masked_crc(blob[at:at + 8])
        data = blob[at + 12:at + 12 + n]
        assert struct.unpack_from("<I", blob, at + 12 + n)[0] == tb_events.masked_crc(data)
        records.append(data)
        at += 16 + n
    assert len(records) == 2 and b"brain.Event:2" in records[0]
    assert b"train/loss" in records[1] and struct.pack("<f", 1.5) in records[1] and b"skipped" not in records[1]
    assert os.path.basename(w.path).startswith("events.out.tfevents.")


READER = """
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
print(json.dumps({t: [[e.step, e.value, e.wall_time] for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}))
"""


def test_tensorboard_reads_it_back(tmp_path):
    if not os.path.exists(VENV_PYTHON):
        if os.environ.get("CI") == "true":
            pytest.fail(".venv is missing under CI: scripts/setup.sh must create it (scripts/setup-python.sh)")
        pytest.skip(".venv is missing: run scripts/setup-python.sh to read the event file with tensorboard")
    w = tb_events.EventWriter(str(tmp_path))
    for step in range(5):
        w.scalars(step, {"train/loss": 3.0 - 0.25 * step, "bytes/pp forward 0->1": 65536 * (step + 1)})
    w.scalars(-2, {"neg": -1e-3})  # int64 steps as two's-complement varints
    w.close()
    p = subprocess.run([VENV_PYTHON, "-c", READER, str(tmp_path)], capture_output=True, text=True, check=True)
    got = json.loads(p.stdout)
    assert [[s, v] for s, v, _ in got["train/loss"]] == [[i, 3.0 - 0.25 * i] for i in range(5)]
    assert [v for _, v, _ in got["bytes/pp forward 0->1"]] == [65536.0 * (i + 1) for i in range(5)]
    assert got["neg"][0][0] == -2 and got["neg"][0][1] == pytest.approx(-1e-3)
    assert all(t > 1.7e9 for _, _, t in got["train/loss"])  # wall time in Unix seconds
