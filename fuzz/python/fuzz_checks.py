#!/usr/bin/env python3
"""Fuzz targets for the Python checks of a compile's plan and of a checkpoint's manifest (atheris, libFuzzer's
engine for Python; docs/Fuzzing.md).

Targets (the input is the bytes of a file a user may hand-edit or corrupt):
  plan      plan.json's text, parsed as the drivers parse it (json), then compared with the plan embedded in
            the library it was compiled for (plan_abi.compare; the fixed library plan is the committed
            gpt2_megatron.embedded.json beside this file, with its plan.json gpt2_megatron.plan.json);
  plan-elf  a libstep.so's bytes, whose .ptrain_plan section plan_abi.parse_embedded reads;
  manifest  a checkpoint manifest PATH.json's text, read by manifest.parse and checked by manifest.check
            against the same plan, at the same and at another data-parallel degree.
The checks must end in their own error (plan_abi.PlanError, manifest.ManifestError) or succeed: any other
exception (TypeError, ValueError, IndexError, struct.error, RecursionError, ...) is a crash of ptrain-run or
ptrain-export on a bad file, reported as a finding.

Usage (ptrain from python/ on PYTHONPATH, as scripts/fuzz.sh and CTest set it; docs/PythonPackage.md):
  PYTHONPATH=python .venv/bin/python fuzz/python/fuzz_checks.py TARGET [libFuzzer options] [CORPUS_DIR...] (atheris)
  PYTHONPATH=python python3 fuzz/python/fuzz_checks.py --replay TARGET FILE_OR_DIR...   (no atheris: each file once)
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_fixtures():
    with open(os.path.join(HERE, "gpt2_megatron.plan.json")) as f:
        plan = json.load(f)
    with open(os.path.join(HERE, "gpt2_megatron.embedded.json")) as f:
        embedded = json.load(f)
    return plan, embedded


def make_targets(plan_abi, manifest):
    plan, embedded = load_fixtures()

    def plan_target(data):
        try:
            text = data.decode()
            got = json.loads(text)
        except ValueError:  # not UTF-8 or not JSON: the drivers report it before any check (run.py load_plan)
            return
        try:
            plan_abi.compare(got, "plan.json", "libstep.so", embedded)
        except plan_abi.PlanError:
            pass

    def plan_elf_target(data):
        try:
            plan_abi.parse_embedded(data, "libstep.so")
        except plan_abi.PlanError:
            pass

    def manifest_target(data):
        try:
            got = manifest.parse(data.decode(errors="surrogateescape"), "ckpt.json")
        except manifest.ManifestError:
            return
        for other_dp in (False, True):
            try:
                manifest.check(got, plan, "plan.json", "ckpt", embedded, other_dp=other_dp)
            except manifest.ManifestError:
                pass

    return {"plan": plan_target, "plan-elf": plan_elf_target, "manifest": manifest_target}


def replay(target, paths):
    from ptrain import manifest, plan_abi
    run = make_targets(plan_abi, manifest)[target]
    files = []
    for p in paths:
        files += sorted(os.path.join(p, n) for n in os.listdir(p)) if os.path.isdir(p) else [p]
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        print(f"Running: {path} ({len(data)} bytes)", file=sys.stderr)
        run(data)
    print(f"Executed {len(files)} inputs", file=sys.stderr)
    return 0 if files else 1


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--replay":
        return replay(sys.argv[2], sys.argv[3:])
    if len(sys.argv) < 2 or sys.argv[1] not in ("plan", "plan-elf", "manifest"):
        print(__doc__, file=sys.stderr)
        return 2
    import atheris
    with atheris.instrument_imports(include=["ptrain"]):
        from ptrain import manifest, plan_abi
    target = make_targets(plan_abi, manifest)[sys.argv[1]]
    atheris.Setup([sys.argv[0]] + sys.argv[2:], target)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
