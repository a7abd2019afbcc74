"""TensorBoard event files of scalars, written with the standard library alone (ptrain-run's ranks run under
Debian's Python, which has neither tensorflow nor tensorboardX; the test reads the file back with the
tensorboard package's own event reader, test/Target/Cpp/data_resume_e2e.py).

The format (tensorflow/core/util/event.proto, summary.proto; tensorflow/core/lib/io/record_writer.cc), what
tensorboardX's EventFileWriter writes:

    a file events.out.tfevents.<unix seconds>.<host>.<pid>.0 of TFRecords, each
        uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
    with mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2^32); the first record an Event whose
    file_version is "brain.Event:2", then one Event per step:
        Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
        Summary { repeated Value value = 1; }      Value { string tag = 1; float simple_value = 2; }

Use: w = EventWriter(folder); w.scalars(step, {"train/loss": 2.3, ...}); w.close(). Each scalars() call is one
Event, flushed, so TensorBoard shows a run while it trains. Non-finite values are written as they are.
"""

import os
import socket
import struct
import time


def _crc32c_table():
    poly, table = 0x82F63B78, []  # CRC-32C (Castagnoli), reflected polynomial
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C of `data` (bytes): crc32c(b"123456789") == 0xE3069283 (RFC 3720, B.4)."""
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # int64 as protobuf's two's-complement varint
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number, wire, payload):
    return _varint(number << 3 | wire) + payload


def _bytes_field(number, data):
    return _field(number, 2, _varint(len(data)) + data)


def event(wall_time, step=None, file_version=None, scalars=None):
    """One serialized Event (module docstring); scalars: {tag: float}."""
    out = _field(1, 1, struct.pack("<d", wall_time))
    if step is not None:
        out += _field(2, 0, _varint(int(step)))
    if file_version is not None:
        out += _bytes_field(3, file_version.encode())
    if scalars:
        summary = b"".join(_bytes_field(1, _bytes_field(1, tag.encode()) + _field(2, 5, struct.pack("<f", value)))
                           for tag, value in scalars.items())
        out += _bytes_field(5, summary)
    return out


def record(data):
    """One TFRecord around `data`."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


class EventWriter:
    """An event file in `folder` (created); scalars(step, {tag: value}) appends one Event."""

    def __init__(self, folder):
        os.makedirs(folder, exist_ok=True)
        now = time.time()
        self.path = os.path.join(folder, f"events.out.tfevents.{int(now)}.{socket.gethostname()}.{os.getpid()}.0")
        self.f = open(self.path, "wb")
        self.f.write(record(event(now, file_version="brain.Event:2")))
        self.f.flush()

    def scalars(self, step, values):
        values = {k: float(v) for k, v in values.items() if v is not None}
        if values:
            self.f.write(record(event(time.time(), step, scalars=values)))
            self.f.flush()

    def close(self):
        self.f.close()
