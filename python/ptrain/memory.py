"""The memory the generated step really occupies on this process, for ptrain-run --memory-log.

The C++ step keeps every state and arena in static storage (docs/CodegenCpu.md): `state_<i>_<name>` per
`ptrain.state`, `ptrain_arena` (the stage functions' temporaries) and `ptrain_arena_<fn>` per function that
calls others (`ptrain_arena_stage<s>_train_step`: the stash; `..._eval_step`). Those are zero-filled (.bss)
pages that the kernel maps only when touched, so the bytes of each symbol that lie on a resident page
(/proc/self/pagemap, bit 63 "present" or 62 "swapped") are the memory that storage really takes on this rank:
the states of other stages and the parts of an arena no buffer of this rank reaches stay unmapped.
"""

import os
import re
import resource
import subprocess

PAGE = os.sysconf("SC_PAGE_SIZE")


def _symbols(lib):
    """(demangled name, offset, size) of every defined data/bss object of `lib` (binutils nm)."""
    out = subprocess.run(["nm", "-C", "-S", "--defined-only", lib], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] in "bBdD":
            syms.append((parts[3], int(parts[0], 16), int(parts[1], 16)))
    return syms


def _base(lib):
    """The load address of `lib` in this process (its mapping at file offset 0)."""
    real = os.path.realpath(lib)
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == real and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    raise RuntimeError(f"{lib} is not mapped in this process")


def _resident_bytes(pagemap, start, size):
    """Bytes of [start, start + size) on present (or swapped) pages."""
    if size <= 0:
        return 0
    first, last = start // PAGE, (start + size - 1) // PAGE
    pagemap.seek(first * 8)
    data = pagemap.read((last - first + 1) * 8)
    total = 0
    for k in range(last - first + 1):
        entry = int.from_bytes(data[8 * k:8 * k + 8], "little")
        if entry >> 62 & 3:
            lo = max(start, (first + k) * PAGE)
            hi = min(start + size, (first + k + 1) * PAGE)
            total += hi - lo
    return total


def measure(lib, stage):
    """Resident bytes of the step's static storage by category on the rank of `stage`, the static sizes of the
    same symbols (`static`; states: every stage's), and the process's peak RSS."""
    base = _base(lib)
    result = {"state_bytes": 0, "stash_bytes": 0, "eval_bytes": 0, "temporaries_bytes": 0, "other_bytes": 0}
    static = {"state_bytes": 0, "stash_bytes": 0, "eval_bytes": 0, "temporaries_bytes": 0}
    with open("/proc/self/pagemap", "rb") as pagemap:
        for name, offset, size in _symbols(lib):
            short = name.rsplit("::", 1)[-1]
            if re.fullmatch(r"state_\d+_.*", short) and not short.endswith("_dims"):
                key = "state_bytes"
            elif short == "ptrain_arena":
                key = "temporaries_bytes"
            elif short == f"ptrain_arena_stage{stage}_train_step":
                key = "stash_bytes"
            elif short == f"ptrain_arena_stage{stage}_eval_step":
                key = "eval_bytes"
            else:
                key = "other_bytes"
            result[key] += _resident_bytes(pagemap, base + offset, size)
            if key in static:
                static[key] += size
    result["static"] = static
    result["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return result
