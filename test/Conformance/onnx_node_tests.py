#!/usr/bin/env python3
"""Runs the ONNX backend node tests (Debian's libonnx-testdata) through ptrain's importer and reference
interpreter and compares every output with the reference .pb within tolerance.

For each test folder (model.onnx + test_data_set_*/input_*.pb, output_*.pb):
  ptrain-translate --import-onnx model.onnx          -> passed on, or "unsupported" when the importer
                                                        rejects the model with a clean error (exit 1);
                                                        a shape operand fed as a graph input is given its
                                                        value with --constant-input NAME=input_<i>.pb (the
                                                        importer's error names it) and the import retried
  ptrain-interpret --weights model.onnx --input ... --expect ... --atol A --expect-rtol R
                                                     -> "passed" or "failed"
A crash (a signal, or any exit status but 0 and 1) is "failed" in every case: unsupported input must be a
clean error. Test data in an element type the interpreter does not evaluate (int8, int16, unsigned) is
"unsupported" too.

Usage:
  onnx_node_tests.py --bin BUILD/bin --list test/Conformance/onnx-node-tests.txt   # CI: all must pass
  onnx_node_tests.py --bin BUILD/bin --all [--write-list FILE]                     # survey every test of
                                                                                    # the ops in OPS
Prints one line per failed or unsupported test and ends with "N passed, N failed, N unsupported". Exit
status 1 when a test failed (or, with --list, was unsupported), 77 when the test data is not installed.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

DATA = "/usr/share/libonnx-testdata/data/node"

# The ops whose node tests are surveyed with --all (the prefixes of their test names).
OPS = [
    "add", "sub", "mul", "div", "pow", "sqrt", "erf", "tanh", "relu", "exp", "log", "neg", "reciprocal",
    "matmul", "gemm", "transpose", "reshape", "flatten", "squeeze", "unsqueeze", "concat", "split", "slice",
    "gather", "where", "equal", "less", "greater", "not", "and", "or", "xor", "cast", "softmax", "logsoftmax",
    "reduce_mean", "reduce_sum", "reduce_max", "layer_normalization", "dropout", "expand", "range",
    "constantofshape", "trilu", "sce", "identity", "shape", "size", "min", "max", "constant",
]
# Other ops that share a prefix with a listed op but are not that op.
EXCLUDE = re.compile(r"^test_(reduce_sum_square|maxpool|maxunpool|matmulinteger|gather_elements|gathernd|"
                     r"constant_pad|castlike|logsoftmax|max_roi)")


def candidates():
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(DATA, "test_*")))
    pattern = re.compile(r"^test_(%s)(_|$)" % "|".join(OPS))
    chosen = [n for n in names if pattern.match(n) and not EXCLUDE.match(n)]
    chosen += [n for n in names if n.startswith("test_logsoftmax")]
    return sorted(set(chosen))


def graph_inputs(model):
    """Names of the graph inputs that are not initializers, in order: input_<i>.pb feeds the i-th."""
    import onnx
    m = onnx.load(model, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in inits]


CONSTANT_HINT = re.compile(r"--constant-input (\S+)=<tensor\.pb>")


def run_one(name, bindir, atol, rtol):
    """Returns ("passed" | "failed" | "unsupported", detail).

    A shape operand fed as a graph input is an error naming it (ptrain's IR is static); the runner then
    gives that input's value from the data set with --constant-input and imports again, once per data set.
    """
    folder = os.path.join(DATA, name)
    model = os.path.join(folder, "model.onnx")
    inputs = graph_inputs(model)
    data_sets = sorted(glob.glob(os.path.join(folder, "test_data_set_*")))
    constants = []  # names of inputs given as constants, in the order the importer asked for them
    with tempfile.TemporaryDirectory() as tmp:
        mlir = os.path.join(tmp, "model.mlir")

        def import_model(data_set):
            args = [os.path.join(bindir, "ptrain-translate"), "--import-onnx", model, "-o", mlir]
            if constants:
                args += ["--constant-input", ",".join(
                    "%s=%s" % (n, os.path.join(data_set, "input_%d.pb" % inputs.index(n))) for n in constants)]
            return subprocess.run(args, capture_output=True, text=True, timeout=60)

        for k, data_set in enumerate(data_sets or [folder]):
            while True:
                imp = import_model(data_set)
                hint = CONSTANT_HINT.search(imp.stderr) if imp.returncode == 1 else None
                if k > 0 or not hint or hint.group(1) not in inputs or hint.group(1) in constants:
                    break
                constants.append(hint.group(1))
            if imp.returncode == 1:
                first = (imp.stderr.strip().splitlines() or ["(no message)"])[0]
                return "unsupported", first.replace(model, "model.onnx")
            if imp.returncode != 0:
                return "failed", "importer crashed (exit %d): %s" % (imp.returncode, imp.stderr.strip()[-300:])
            if not data_sets:
                break
            count = lambda kind: len(glob.glob(os.path.join(data_set, kind + "_*.pb")))
            args = [os.path.join(bindir, "ptrain-interpret"), mlir, "--weights", model,
                    "--atol", str(atol), "--expect-rtol", str(rtol)]
            for i in range(count("input")):
                if i >= len(inputs) or inputs[i] not in constants:
                    args += ["--input", os.path.join(data_set, "input_%d.pb" % i)]
            for i in range(count("output")):
                args += ["--expect", os.path.join(data_set, "output_%d.pb" % i)]
            run = subprocess.run(args, capture_output=True, text=True, timeout=60)
            last = (run.stderr.strip().splitlines() or [""])[-1]
            if run.returncode == 1 and "unsupported data type" in last:
                # Test data in an element type the interpreter does not evaluate (int8/16, unsigned, or
                # bfloat16 stored as UINT16 by onnx 1.12): a clean error.
                return "unsupported", last.split("error: ")[-1]
            if run.returncode != 0:
                why = "interpreter crashed" if run.returncode != 1 else "mismatch or error"
                return "failed", "%s in %s: %s" % (why, os.path.basename(data_set), last)
    return "passed", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="folder with ptrain-translate and ptrain-interpret")
    parser.add_argument("--list", help="file with one test name per line ('#' comments)")
    parser.add_argument("--all", action="store_true", help="survey every node test of the ops in OPS")
    parser.add_argument("--write-list", help="with --all: write the names of the passing tests here")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()
    if not os.path.isdir(DATA):
        print("onnx_node_tests: %s not found (apt-get install libonnx-testdata); skipped" % DATA)
        return 77
    if args.list:
        with open(args.list) as f:
            names = [l.split("#")[0].strip() for l in f]
        names = [n for n in names if n]
    elif args.all:
        names = candidates()
    else:
        parser.error("give --list or --all")
    results = {"passed": [], "failed": [], "unsupported": []}
    for name in names:
        if not os.path.isdir(os.path.join(DATA, name)):
            results["failed"].append(name)
            print("failed      %s: no such test in %s" % (name, DATA))
            continue
        status, detail = run_one(name, args.bin, args.atol, args.rtol)
        results[status].append(name)
        if status != "passed":
            print("%-11s %s: %s" % (status, name, detail))
    print("%d passed, %d failed, %d unsupported" % tuple(len(results[k]) for k in ("passed", "failed", "unsupported")))
    if args.write_list:
        with open(args.write_list, "w") as f:
            f.write("# ONNX backend node tests (libonnx-testdata 1.12) that ptrain imports and interprets\n"
                    "# within --atol 1e-4 / --expect-rtol 1e-4 of the reference outputs. Generated by\n"
                    "# test/Conformance/onnx_node_tests.py --all --write-list; run in CI by CTest\n"
                    "# onnx-node-conformance.\n")
            f.write("\n".join(results["passed"]) + "\n")
    if results["failed"] or (args.list and results["unsupported"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
