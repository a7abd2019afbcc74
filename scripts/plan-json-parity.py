#!/usr/bin/env python3
"""plan.json before and after `ptrain-translate --emit-plan-json` (issue 28, item 3): byte for byte.

Compiles the plans the end-to-end tests compile (dp/tp/pp grids, 1F1B/GPipe/interleaved schedules, the
compression policies, vocabulary parallelism, the linear autoencoder, single-rank steps, --target cuda) twice:
with ptrain-compile as it was at OLD (default 9c40b81, the last driver that read plan.json's facts with regular
expressions over printed IR) and with this tree's, both on this build's tools, and diffs the two plan.json files
and the two .ptrain_plan sections embedded in libstep.so.
The host compiler (and nvcc) is a stub that links an empty shared object: plan.json does not depend on the
library's code, only on step.mlir (and step.cu's state blocks for --target cuda, which the old driver read).

The old driver reads printed IR: from 471d385 on, ptrain.tp_slice prints as the typed #ptrain.tp_slice<...>,
which its regular expression does not match, so its plans of tp > 1 lose their tp_slice fields. Run the check
on a build of 5decd91 (the commit of --emit-plan-json, before the typed attribute) for the tp plans; the
other plans compare on any build up to 9a50ea9. From the next commit on, ptrain.pipeline, ptrain.stage and
ptrain.schedule print typed as well (#ptrain.pipeline<...>, docs/Plan.md "The plan attributes") and the old
driver reads no pipeline plan: compare on a build of 9a50ea9 or earlier.

Usage: scripts/plan-json-parity.py [--old COMMIT] [--only NAME,...] [--keep] BUILD_DIR SCRATCH_DIR
Exit status 0 when every plan.json and section is identical, or differs only where the old reader was wrong (a
symbol printed quoted, @"onnx::MatMul_181", kept its quotes: the TorchScript and Hugging Face exports); any other
difference is printed as a unified diff and the status is 1.
"""

import argparse
import difflib
import json
import os
import shutil
import stat
import subprocess
import sys

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPT = os.path.join(SOURCE, "models", "gpt", "gpt.onnx")
LLAMA = os.path.join(SOURCE, "test", "Import", "ONNX", "opset18+", "Inputs", "llama_tiny.onnx")
EXPORTS = os.path.join(SOURCE, "test", "Import", "ONNX", "Inputs", "exports")
SLOW = os.path.join(SOURCE, "test", "Transforms", "Inputs", "h200-slow-link.json")
COMMON = ["--lr", "1e-3", "--warmup-steps", "1", "--total-steps", "100"]
MCBENCH_Q8 = ["--policy", "mcbench", "--compress-options", "tp-fwd-codec=quant:bits=8 tp-bwd-codec=quant:bits=8"]

# name -> (model, flags): the plans of test/Target/Cpp/*_e2e.py and test/Target/Cuda/compile_e2e.py.
PLANS = {
    "one": (GPT, []),
    "one-none": (GPT, ["--optimizer", "none"]),
    "mb4": (GPT, ["--micro-batches", "4"]),
    "pp2": (GPT, ["--pp", "2", "--micro-batches", "4"]),
    "pp2-gpipe": (GPT, ["--pp", "2", "--micro-batches", "4", "--schedule", "gpipe"]),
    "pp2-interleaved": (GPT, ["--pp", "2", "--virtual-stages", "2", "--schedule", "interleaved",
                              "--micro-batches", "4"]),
    "pp4": (GPT, ["--pp", "4", "--micro-batches", "4"]),
    "dp2pp2": (GPT, ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000"]),
    "dp3pp2": (GPT, ["--dp", "3", "--pp", "2", "--micro-batches", "2"]),
    "tp2": (GPT, ["--tp", "2", "--micro-batches", "4"]),
    "tp2pp2": (GPT, ["--tp", "2", "--pp", "2", "--micro-batches", "4", "--clip-norm", "0.1"]),
    "dp2tp2": (GPT, ["--dp", "2", "--tp", "2", "--micro-batches", "2"]),
    "dp2tp2pp2": (GPT, ["--dp", "2", "--tp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000"]),
    "vtp2": (GPT, ["--tp", "2", "--vocab-parallel", "--micro-batches", "4"]),
    "vtp2pp2": (GPT, ["--tp", "2", "--pp", "2", "--vocab-parallel", "--micro-batches", "4"]),
    "vtp2pad": (GPT, ["--tp", "2", "--vocab-parallel", "--vocab-multiple", "3", "--micro-batches", "4"]),
    "occ": (GPT, ["--pp", "2", "--micro-batches", "4", "--policy", "optimus-cc"]),
    "occ-exact": (GPT, ["--pp", "2", "--micro-batches", "4", "--policy", "optimus-cc", "--compress-options",
                        "cb-rank=128 cb-sends=all sc=false"]),
    "occ-interleaved": (GPT, ["--pp", "2", "--virtual-stages", "2", "--schedule", "interleaved",
                              "--micro-batches", "4", "--policy", "optimus-cc"]),
    "occ-sc": (GPT, ["--dp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes", "1000000", "--policy",
                     "optimus-cc", "--compress-options", "sc-all=true sc-rank=8"]),
    "occ-fe-pp4": (GPT, ["--pp", "4", "--micro-batches", "4", "--policy", "optimus-cc", "--compress-options",
                         "cb=false sc=false"]),
    "occ-dp2tp2pp2": (GPT, ["--dp", "2", "--tp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes",
                            "1000000", "--policy", "optimus-cc"]),
    "mcbench-dp2tp2": (GPT, ["--dp", "2", "--tp", "2", "--micro-batches", "2"] + MCBENCH_Q8),
    "mcbench-tp2pp2": (GPT, ["--tp", "2", "--pp", "2", "--micro-batches", "2"] + MCBENCH_Q8),
    "auto-tp2": (GPT, ["--tp", "2", "--micro-batches", "2", "--policy", "auto", "--cluster", SLOW,
                       "--compress-options", "auto-tp-codecs=quant:bits=8;bf16"]),
    "report-pp2": (GPT, ["--pp", "2", "--micro-batches", "2", "--report", "{out}.report.json"]),
    "linear-ae": (GPT, ["--pp", "2", "--micro-batches", "4", "--linear-ae", "64"]),
    "linear-ae-skip": (GPT, ["--pp", "4", "--micro-batches", "4", "--linear-ae", "32", "--linear-ae-skip-stages",
                             "1"]),
    "sgd-clip": (GPT, ["--pp", "2", "--micro-batches", "4", "--optimizer", "sgd", "--momentum", "0.9",
                       "--clip-norm", "0.1", "--ignore-index", "32"]),
    "llama-one": (LLAMA, ["--import-options", "--signature auto"]),
    "llama-pp2": (LLAMA, ["--pp", "2", "--micro-batches", "2", "--import-options", "--signature auto"]),
    # The exports of exports_table.py and hf_exports_train.py: initializers named onnx::MatMul_181 (a symbol that
    # prints quoted) and BERT's three inputs.
    "gpt-opset14-pp2": (os.path.join(EXPORTS, "gpt-opset14.onnx"), ["--pp", "2", "--micro-batches", "2",
                                                                   "--import-options", "--signature auto"]),
    "gpt2-folded-pp2": (os.path.join(EXPORTS, "gpt2-opset17-folded.onnx"), ["--pp", "2", "--micro-batches", "2",
                                                                           "--import-options", "--signature auto"]),
    "bert-folded-pp2": (os.path.join(EXPORTS, "bert-opset17-folded.onnx"), ["--pp", "2", "--micro-batches", "2",
                                                                           "--import-options", "--signature auto"]),
    "gpt-opset14-one": (os.path.join(EXPORTS, "gpt-opset14.onnx"), ["--import-options", "--signature auto"]),
    "cuda-one": (GPT, ["--target", "cuda"]),
    "cuda-pp2": (GPT, ["--target", "cuda", "--pp", "2", "--micro-batches", "2"]),
    "cuda-interleaved": (GPT, ["--target", "cuda", "--pp", "2", "--micro-batches", "4", "--schedule",
                               "interleaved", "--virtual-stages", "2"]),
    "cuda-dp2tp2": (GPT, ["--target", "cuda", "--dp", "2", "--tp", "2"]),
    "cuda-occ-sc": (GPT, ["--target", "cuda", "--dp", "2", "--pp", "2", "--micro-batches", "2", "--bucket-bytes",
                          "1000000", "--policy", "optimus-cc", "--compress-options", "sc-all=true sc-rank=8"]),
}

# A compiler that accepts ptrain-compile's command lines and links an empty shared object to -o.
STUB = """#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
  esac
  shift
done
exec cc -shared -x c /dev/null -o "$out"
"""


def drop_fingerprint(text):
    return "\n".join(line for line in text.splitlines() if '"fingerprint":' not in line)


def old_symbols_fixed(text):
    """The old plan with its one known error undone: the regular expression `ptrain\\.state @(\\S+)` took a symbol
    that MLIR prints quoted (@"onnx::MatMul_181") with its quotes."""
    lines = []
    for line in drop_fingerprint(text).splitlines():
        head, sep, value = line.partition('"symbol": ')
        if sep and value.startswith('"\\"') and value.rstrip(",").endswith('\\""'):
            comma = "," if value.endswith(",") else ""
            value = json.dumps(json.loads(value.rstrip(","))[1:-1]) + comma
        lines.append(head + sep + value)
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("scratch")
    p.add_argument("--old", default="9c40b81")
    p.add_argument("--only", default=None, help="comma-separated plan names")
    args = p.parse_args()
    build, scratch = os.path.abspath(args.build), os.path.abspath(args.scratch)
    os.makedirs(scratch, exist_ok=True)
    old_driver = os.path.join(scratch, "old_compile.py")
    with open(old_driver, "w") as f:
        f.write(subprocess.run(["git", "-C", SOURCE, "show", f"{args.old}:python/ptrain/compile.py"],
                               check=True, stdout=subprocess.PIPE, text=True).stdout)
    stub = os.path.join(scratch, "stub-cc")
    with open(stub, "w") as f:
        f.write(STUB)
    os.chmod(stub, os.stat(stub).st_mode | stat.S_IXUSR)
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "python"))
    plans = PLANS if not args.only else {k: PLANS[k] for k in args.only.split(",")}
    cuda = os.path.isfile(os.path.join(build, "lib", "Runtime", "cuda", "libptrain_runtime_cuda.so"))
    same, fixed, differ, failed = [], [], [], []
    for name, (model, flags) in plans.items():
        if "--target" in flags and "cuda" in flags and not cuda:
            print(f"{name}: skipped (a build without PTRAIN_ENABLE_CUDA)")
            continue
        texts = {}
        for which, driver in (("old", [old_driver]), ("new", ["-m", "ptrain.compile"])):
            out = os.path.join(scratch, name, which)
            shutil.rmtree(out, ignore_errors=True)
            cmd = [sys.executable, *driver, model, *[f.format(out=out) for f in flags], *COMMON, "-o", out,
                   "--build-dir", build, "--source-dir", SOURCE, "--cxx", stub, "--nvcc", stub]
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                texts[which] = None
                print(f"{name} ({which}): ptrain-compile failed:\n{proc.stdout[-2000:]}")
                continue
            with open(os.path.join(out, "plan.json")) as f:
                # The paths name this run's folder (old/ or new/): the same file name in both.
                texts[which] = f.read().replace(os.path.join(name, which), os.path.join(name, "OUT"))
            # The .ptrain_plan section of libstep.so (plan_abi.py: the fields without paths, and their fingerprint).
            section = os.path.join(out, "ptrain_plan.json")
            subprocess.run(["objcopy", "--dump-section", f".ptrain_plan={section}", os.path.join(out, "libstep.so")],
                           check=True)
            with open(section) as f:
                texts[which] += "\n.ptrain_plan " + json.dumps(json.load(f), indent=1, sort_keys=True) + "\n"
        if None in texts.values():
            failed.append(name)
        elif texts["old"] == texts["new"]:
            same.append(name)
            print(f"{name}: identical ({len(texts['new'])} bytes)")
        elif old_symbols_fixed(texts["old"]) == drop_fingerprint(texts["new"]):
            fixed.append(name)
            print(f"{name}: differs only where the old reader was wrong: a symbol that prints quoted "
                  f"(@\"onnx::MatMul_181\") kept its quotes in \"symbol\" (and so the fingerprint differs)")
        else:
            differ.append(name)
            print(f"{name}: DIFFERS")
            sys.stdout.writelines(difflib.unified_diff(texts["old"].splitlines(True), texts["new"].splitlines(True),
                                                       f"{name}/old/plan.json", f"{name}/new/plan.json"))
    print(f"\n{len(same)} identical, {len(fixed)} with the old reader's quoted symbols fixed ({', '.join(fixed)}), "
          f"{len(differ)} differ ({', '.join(differ)}), {len(failed)} failed "
          f"({', '.join(failed)})")
    return 0 if not differ and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
