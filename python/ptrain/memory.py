"""The memory the generated step really occupies on this process, for ptrain-run --memory-log.

The C++ step keeps every state and arena in heap blocks that ptrain_step_init allocates for this rank
(docs/CodegenCpu.md, "Storage"): `state_<i>_<name>` per `ptrain.state` of this rank's stage, `ptrain_arena` (the
stage functions' temporaries) and `ptrain_arena_<fn>` per function of the stage that calls others
(`ptrain_arena_stage<s>_train_step`: the stash; `..._eval_step`), listed by ptrain_step_num_storage_blocks /
ptrain_step_storage_block. Blocks from 64 KiB on are anonymous zero mappings whose pages the kernel maps only
when touched, so the bytes of each block that lie on a resident page (/proc/self/pagemap, bit 63 "present" or
62 "swapped") are the memory that storage really takes on this rank: the parts of an arena no buffer of this
rank reaches stay unmapped.
"""

import os
import re
import resource

PAGE = os.sysconf("SC_PAGE_SIZE")


def _blocks(lib):
    """(variable name, address, bytes) of every heap block of the loaded step `lib` (a ctypes.CDLL)."""
    import ctypes
    lib.ptrain_step_num_storage_blocks.restype = ctypes.c_int64
    blocks = []
    for i in range(lib.ptrain_step_num_storage_blocks()):
        name, ptr, size = ctypes.c_char_p(), ctypes.c_void_p(), ctypes.c_int64()
        status = lib.ptrain_step_storage_block(ctypes.c_int64(i), ctypes.byref(name), ctypes.byref(ptr),
                                               ctypes.byref(size))
        if status != 0:
            raise RuntimeError(f"ptrain_step_storage_block({i}) failed with status {status}")
        blocks.append((name.value.decode(), ptr.value or 0, size.value))
    return blocks


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


def _allocated_bytes(lib):
    """The runtime's counter of the bytes ptrain_alloc holds in this process (ptrain_allocated_bytes; the runtime
    is libstep.so's dependency, loaded RTLD_GLOBAL by ptrain-run)."""
    import ctypes
    out = ctypes.c_int64()
    status = lib.ptrain_allocated_bytes(ctypes.byref(out))
    if status != 0:
        raise RuntimeError(f"ptrain_allocated_bytes failed with status {status}")
    return out.value


def _identifier(key):
    """The C identifier the emitters derive from a state key (identifierFrom, lib/Target/Common/EmitHelpers.cpp)."""
    return "".join(c if c.isascii() and c.isalnum() else "_" for c in key)


def measure(lib, stage, plan=None):
    """Resident bytes of the step's storage by category on the rank of `stage` (`lib`: the loaded ctypes.CDLL),
    the allocated sizes of the same blocks (`static`, the name the sizes had when the storage was static), the
    runtime's allocation counter (`allocated_bytes`: every block ptrain_alloc holds, so it equals the sum of
    `static` when the step's block list is complete), and the process's peak RSS. With the step's `plan`
    (plan.json), `optimizer_state_bytes` is the part of `state_bytes` in states of kind optimizer_moment (AdamW's
    moments, SGD's momentum buffers; under ZeRO-1 this rank's shards, docs/DistributedOptimizer.md)."""
    result = {"state_bytes": 0, "stash_bytes": 0, "eval_bytes": 0, "temporaries_bytes": 0, "other_bytes": 0}
    static = {"state_bytes": 0, "stash_bytes": 0, "eval_bytes": 0, "temporaries_bytes": 0, "other_bytes": 0}
    moments = {_identifier(s["key"]) for s in (plan or {}).get("states", []) if s.get("kind") == "optimizer_moment"}
    if plan is not None:
        result["optimizer_state_bytes"] = 0  # a part of state_bytes: not in `static`, whose sum is the blocks'
    with open("/proc/self/pagemap", "rb") as pagemap:
        for name, address, size in _blocks(lib):
            state = re.fullmatch(r"state_\d+_(.*)", name)
            if state and state.group(1) in moments:
                result["optimizer_state_bytes"] += _resident_bytes(pagemap, address, size)
            if state:
                key = "state_bytes"
            elif name == "ptrain_arena":
                key = "temporaries_bytes"
            elif name == f"ptrain_arena_stage{stage}_train_step":
                key = "stash_bytes"
            elif name == f"ptrain_arena_stage{stage}_eval_step":
                key = "eval_bytes"
            else:
                key = "other_bytes"
            result[key] += _resident_bytes(pagemap, address, size)
            static[key] += size
    result["static"] = static
    result["allocated_bytes"] = _allocated_bytes(lib)
    result["maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return result
