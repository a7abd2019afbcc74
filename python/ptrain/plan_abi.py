"""The plan a libstep.so was compiled for, embedded in the library (docs/CodegenCpu.md, "The embedded plan").

ptrain-compile writes plan.json and adds the same facts to libstep.so as a non-loaded ELF section
`.ptrain_plan` (objcopy --add-section): every plan.json field that fixes the library's buffers and ranks
(batch, seq, vocab, dp, pp, micro_batches, the schedule, the states with their shapes, ...), without the paths
(model, library, cluster), which may move, and a `fingerprint`, the SHA-256 of those fields as canonical JSON.
A driver (ptrain-run, ptrain-export) reads the section back and compares it with plan.json before any rank
calls into the library: a hand-edited or mismatched plan.json (a seq or batch the library was not built for
would make it read past the token buffer) is an error naming the field, not an out-of-bounds read.
"""

import hashlib
import json
import os
import struct
import subprocess

SECTION = ".ptrain_plan"
# plan.json fields that may differ from the embedded ones: paths (moving out/ or the model is fine).
UNBOUND = ("model", "library", "cluster")
# Compared first: the buffer shapes and the grid, so that a difference shows where it starts (global_batch
# follows from batch and micro_batches).
FIRST = ("seq", "batch", "micro_batches", "vocab", "dp", "pp", "tp")


class PlanError(Exception):
    pass


def bound_fields(plan):
    """The fields of plan.json that the library was compiled for, with their fingerprint."""
    facts = {k: v for k, v in plan.items() if k not in UNBOUND}
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"))
    return dict(facts, fingerprint=hashlib.sha256(text.encode()).hexdigest())


def embed(lib, plan, objcopy="objcopy"):
    """Adds plan's bound fields to lib as the section .ptrain_plan."""
    blob = lib + ".plan"
    with open(blob, "w") as f:
        json.dump(bound_fields(plan), f, sort_keys=True)
    try:
        proc = subprocess.run([objcopy, "--add-section", f"{SECTION}={blob}", "--set-section-flags",
                               f"{SECTION}=noload,readonly", lib], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    except OSError as e:
        raise PlanError(f"cannot run {objcopy} to embed the plan in {lib}: {e}")
    finally:
        os.remove(blob)
    if proc.returncode != 0:
        raise PlanError(f"{objcopy} could not embed the plan in {lib}: {proc.stderr.strip()}")


def read_embedded(lib):
    """The JSON object of lib's .ptrain_plan section; None when the library has none."""
    with open(lib, "rb") as f:
        return parse_embedded(f.read(), lib)


def parse_embedded(data, lib):
    """The JSON object of the .ptrain_plan section of the ELF file whose bytes are data (read from lib, named in
    errors); None when it has none. Raises PlanError for anything else than a 64-bit little-endian ELF file
    whose section headers and plan section lie inside it and hold a JSON object."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise PlanError(f"{lib}: not a 64-bit little-endian ELF shared library")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise PlanError(f"{lib}: its ELF section headers lie outside the file")

    def header(i):  # Elf64_Shdr: name, type, flags, addr, offset, size
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)

    strtab = header(shstrndx)
    for i in range(shnum):
        name_off, _, _, _, offset, size = header(i)
        start = strtab[4] + name_off
        end = data.find(b"\0", start) if start < len(data) else -1
        if start < len(data) and end < 0:  # found by fuzz/python/fuzz_checks.py plan-elf
            raise PlanError(f"{lib}: the name of its ELF section {i} runs past the end of the file")
        name = data[start:end].decode(errors="replace") if start < len(data) else ""
        if name != SECTION:
            continue
        if offset + size > len(data):
            raise PlanError(f"{lib}: its {SECTION} section lies outside the file")
        try:
            embedded = json.loads(data[offset:offset + size].decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise PlanError(f"{lib}: its {SECTION} section is not valid JSON ({e})")
        if not isinstance(embedded, dict):
            raise PlanError(f"{lib}: its {SECTION} section is not a JSON object")
        return embedded
    return None


def check(plan, plan_path, lib):
    """Raises PlanError naming the first field where plan (read from plan_path) differs from what lib was
    compiled for; a library without the section is refused too (compiled before the plan was embedded)."""
    return compare(plan, plan_path, lib, read_embedded(lib))


def compare(plan, plan_path, lib, embedded):
    """check() with lib's embedded plan already read (read_embedded: a dict, or None when lib has none)."""
    if embedded is None:
        raise PlanError(f"{lib}: no embedded plan (section {SECTION}); compile it again with ptrain-compile")
    if not isinstance(plan, dict):  # ptrain-export reads plan.json without looking at its type
        raise PlanError(f"{plan_path}: expected a JSON object, not a {type(plan).__name__}")
    want = dict(embedded)
    fingerprint = want.pop("fingerprint", None)
    if bound_fields(want).get("fingerprint") != fingerprint:
        raise PlanError(f"{lib}: its embedded plan does not match its fingerprint; compile it again")
    keys = set(want) | {k for k in plan if k not in UNBOUND}
    for key in sorted(keys, key=lambda k: (FIRST.index(k) if k in FIRST else len(FIRST), k)):
        if key not in plan:
            raise PlanError(f"{plan_path}: '{key}' is missing; {lib} was compiled for {key} = "
                            f"{json.dumps(want[key])}")
        if key not in want:
            raise PlanError(f"{plan_path}: '{key}' is not a field of the plan {lib} was compiled for "
                            f"(fingerprint {fingerprint[:12]})")
        if plan[key] != want[key]:
            got, exp = json.dumps(plan[key]), json.dumps(want[key])
            if len(got) > 80 or len(exp) > 80:
                got, exp = describe_difference(plan[key], want[key])
            raise PlanError(f"{plan_path}: '{key}' is {got} but {lib} was compiled for {exp} (plan fingerprint "
                            f"{fingerprint[:12]}); restore plan.json or compile again with ptrain-compile")
    return embedded


def describe_difference(got, want, path=""):
    """The first differing leaf of two JSON values, as (got, want) strings with its path."""
    if isinstance(got, dict) and isinstance(want, dict):
        for k in sorted(set(got) | set(want)):
            if got.get(k) != want.get(k):
                return describe_difference(got.get(k), want.get(k), f"{path}.{k}")
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                named = isinstance(a, dict) and "key" in a and a.get("key") == (b or {}).get("key")
                return describe_difference(a, b, f"{path}[{i}]" + (f" (key {a['key']})" if named else ""))
    if isinstance(got, list) and isinstance(want, list):
        return f"a list of {len(got)} entries", f"{len(want)} entries"
    return f"{json.dumps(got)} at {path or '.'}", json.dumps(want)
