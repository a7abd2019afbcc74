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
"unsupported" too. bfloat16 test data, which onnx 1.12 stores as UINT16 bit patterns, is retyped BFLOAT16
where the model declares that type; an input whose values no node reads (CastLike's `target_type`) is fed
in its declared shape (as_declared).

Usage:
  onnx_node_tests.py --bin BUILD/bin --doc docs/ONNXConformance.md        # CI: every listed test must pass
  onnx_node_tests.py --bin BUILD/bin --all [--write-doc docs/ONNXConformance.md]
                        # survey every node test of the ops in ISSUE_OPS and OTHER_OPS; write the document
  onnx_node_tests.py --bin BUILD/bin --list FILE                          # one test name per line
Prints one line per failed or unsupported test and ends with "N passed, N failed, N unsupported, N excluded"
(EXCLUDED: tests that cannot match, with the reason). Exit status 1 when a test failed (or, with --doc or
--list, was unsupported), 77 when the test data is not installed.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

DATA = "/usr/share/libonnx-testdata/data/node"

# The ops whose node tests are surveyed with --all: issue 4's list, then the other ops ptrain imports.
ISSUE_OPS = [
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Tanh", "Relu", "Exp", "Log", "Neg", "Reciprocal", "MatMul",
    "Gemm", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather", "Where",
    "Equal", "Cast", "Softmax", "LogSoftmax", "ReduceMean", "ReduceSum", "ReduceMax", "LayerNormalization",
    "Dropout", "Expand", "Range", "ConstantOfShape", "Trilu", "SoftmaxCrossEntropyLoss",
]
OTHER_OPS = [
    "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Identity", "Shape", "Size",
    "Min", "Max", "Constant", "NegativeLogLikelihoodLoss", "ReduceMin", "ReduceProd",
    "ReduceL2", "Clip", "GatherND", "CastLike", "CumSum", "Cos", "Sin", "Sigmoid", "GlobalAveragePool",
]
# Ops ptrain imports that have no one-node test in libonnx-testdata 1.12 (newer opsets, or sequences that only
# occur between other ops); their importer tests are named in the generated document.
NO_NODE_TESTS = {
    "Gelu": "opset 20: test/Import/ONNX/opset18+/opset18-ops.test",
    "Attention": "opset 23: test/Import/ONNX/opset18+/attention.test",
    "RMSNormalization": "opset 23: test/Import/ONNX/opset18+/rms-norm.test",
    "RotaryEmbedding": "opset 23: test/Import/ONNX/opset18+/rotary-embedding.test",
    "SplitToSequence, SequenceAt, SequenceConstruct, SequenceLength, ConcatFromSequence":
        "test/Import/ONNX/opset18+/unfolded-ops.test",
}
# Node tests of these ops that cannot match, with the reason (listed in the generated document).
EXCLUDED = {
    "test_training_dropout": "reference mask drawn from numpy's RNG; ptrain's mask is a counter-based hash "
                             "(DropoutTest checks its rate and scale)",
    "test_training_dropout_default": "reference mask drawn from numpy's RNG (as test_training_dropout)",
    "test_training_dropout_default_mask": "reference mask drawn from numpy's RNG (as test_training_dropout)",
    "test_training_dropout_mask": "reference mask drawn from numpy's RNG (as test_training_dropout)",
    "test_cast_FLOAT_to_BFLOAT16": "onnx 1.12's reference truncates to bfloat16 (all 12 values are the truncated "
                                   "bits); ptrain rounds to nearest even, as later ONNX references do",
    "test_castlike_FLOAT_to_BFLOAT16": "the same data as test_cast_FLOAT_to_BFLOAT16: the reference truncates "
                                       "(5 of its 12 values are one bfloat16 ulp below the rounded ones; "
                                       "ptrain's match within atol 4e-3, one ulp at 0.8)",
    "test_castlike_FLOAT_to_BFLOAT16_expanded": "the same data as test_cast_FLOAT_to_BFLOAT16: the reference "
                                                "truncates (as test_castlike_FLOAT_to_BFLOAT16)",
}


# Why an "unsupported" test is (the first matching pattern of its clean error), for the generated document.
REASONS = [
    ("unsupported data type", "test data in an element type ptrain does not represent (its tensors are f64, f32, "
                              "f16, bf16, i64, i32 and i1; ids and shapes are i32/i64)"),
    ("element type 8", "strings are not a tensor type ptrain represents"),
    ("'Loop'", "the expansion uses Loop (control flow), outside ptrain's static IR"),
    ("Loop attribute", "the expansion uses Loop (control flow), outside ptrain's static IR"),
    ("ONNX Loop node", "the expansion uses Loop (control flow), outside ptrain's static IR"),
    ("GatherElements", "the expansion uses GatherElements, which ptrain does not import"),
    ("not a tensor", "sequence and optional types are not tensors"),
]


def reason(detail):
    return next((why for pattern, why in REASONS if pattern in detail), "")


def test_ops():
    """{test name: ONNX op} for every node test: the op of a one-node model; an `_expanded` test (the op's
    function body) counts for the op of the test it expands."""
    import onnx
    single = {}
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(DATA, "test_*")))
    for name in names:
        if name.endswith("_expanded"):
            continue
        graph = onnx.load(os.path.join(DATA, name, "model.onnx"), load_external_data=False).graph
        if len(graph.node) == 1:
            single[name] = graph.node[0].op_type
    ops = dict(single)
    for name in names:
        if name.endswith("_expanded") and name[: -len("_expanded")] in single:
            ops[name] = single[name[: -len("_expanded")]]
    return ops


def candidates():
    wanted = set(ISSUE_OPS + OTHER_OPS)
    return {name: op for name, op in test_ops().items() if op in wanted}


def graph_values(model):
    """(inputs, input element types, output element types, type-only inputs): the graph inputs that are not
    initializers, in order (input_<i>.pb feeds the i-th), the ONNX element types of those inputs and of the
    outputs, and {name: declared static shape} of the inputs whose values no node reads (unused, or only the
    `target_type` operand of CastLike, which reads its element type)."""
    import onnx
    m = onnx.load(model, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    inputs = [i for i in m.graph.input if i.name not in inits]
    elem = lambda v: v.type.tensor_type.elem_type
    value_reads = {name for node in m.graph.node
                   for k, name in enumerate(node.input) if not (node.op_type == "CastLike" and k == 1)}
    type_only = {}
    for i in inputs:
        dims = i.type.tensor_type.shape.dim
        if i.name not in value_reads and all(d.HasField("dim_value") for d in dims):
            type_only[i.name] = [d.dim_value for d in dims]
    return [i.name for i in inputs], [elem(i) for i in inputs], [elem(o) for o in m.graph.output], type_only


def as_declared(pb, declared, tmp, type_only_shape=None):
    """onnx 1.12's test data stores bfloat16 tensors as UINT16 (numpy has no bfloat16): the same 16-bit
    patterns. Where the model declares BFLOAT16, a copy typed BFLOAT16 is written to `tmp`; else `pb`.
    `type_only_shape`: the declared shape of an input whose values no node reads (graph_values). onnx 1.12's
    bfloat16 CastLike tests declare their `like` input 3x4 but store a one-element tensor, which no runtime
    that checks input shapes accepts (the interpreter: "argument 1 of @forward is tensor<3x4xf32>, got
    tensor<1xf32>"); since CastLike reads only its element type, such an input is fed as zeros of the
    declared shape (any values give the same outputs, which are compared with the reference as for every
    test)."""
    import onnx
    tensor = onnx.TensorProto()
    with open(pb, "rb") as f:
        tensor.ParseFromString(f.read())
    retype = declared == onnx.TensorProto.BFLOAT16 and tensor.data_type == onnx.TensorProto.UINT16
    reshape = type_only_shape is not None and list(tensor.dims) != type_only_shape
    if not retype and not reshape:
        return pb
    if retype:
        tensor.data_type = onnx.TensorProto.BFLOAT16
    if reshape:
        width = {onnx.TensorProto.DOUBLE: 8, onnx.TensorProto.FLOAT: 4, onnx.TensorProto.INT64: 8,
                 onnx.TensorProto.INT32: 4, onnx.TensorProto.FLOAT16: 2, onnx.TensorProto.BFLOAT16: 2,
                 onnx.TensorProto.BOOL: 1}.get(tensor.data_type)
        if width is None:
            return pb
        count = 1
        for d in type_only_shape:
            count *= d
        tensor.ClearField("dims")
        tensor.dims.extend(type_only_shape)
        for field in ("float_data", "double_data", "int32_data", "int64_data"):
            tensor.ClearField(field)
        tensor.raw_data = bytes(width * count)
    path = os.path.join(tmp, "declared_" + os.path.basename(os.path.dirname(pb)) + "_" + os.path.basename(pb))
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())
    return path


CONSTANT_HINT = re.compile(r"--constant-input (\S+)=<tensor\.pb>")


def run_one(name, bindir, atol, rtol):
    """Returns ("passed" | "failed" | "unsupported", detail).

    A shape operand fed as a graph input is an error naming it (ptrain's IR is static); the runner then
    gives that input's value from the data set with --constant-input and imports again, once per data set.
    """
    folder = os.path.join(DATA, name)
    model = os.path.join(folder, "model.onnx")
    inputs, input_types, output_types, type_only = graph_values(model)
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
                    pb = os.path.join(data_set, "input_%d.pb" % i)
                    args += ["--input", as_declared(pb, input_types[i], tmp, type_only.get(inputs[i]))
                             if i < len(inputs) else pb]
            for i in range(count("output")):
                pb = os.path.join(data_set, "output_%d.pb" % i)
                args += ["--expect", as_declared(pb, output_types[i], tmp) if i < len(output_types) else pb]
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


def read_doc(path):
    """The test names under the document's "## Passing" heading (as `write_doc` writes them)."""
    names, inside = [], False
    with open(path) as f:
        for line in f:
            if line.startswith("## "):
                inside = line.startswith("## Passing")
            elif inside:
                names += re.findall(r"`(test_\w+)`", line)
    return names


def write_doc(path, ops, results, details):
    """The generated conformance list: per op the passing tests, then every excluded or unsupported test of
    the surveyed ops with its reason."""
    status = {n: k for k, v in results.items() for n in v}
    lines = [
        "# ONNX backend node tests: conformance list",
        "",
        "Generated by `python3 test/Conformance/onnx_node_tests.py --bin build/bin --all --write-doc "
        "docs/ONNXConformance.md`; do not edit. Every node test (Debian's libonnx-testdata 1.12) of the ops below "
        "imports and, through the reference interpreter, matches the reference outputs within atol 1e-4 and "
        "1e-4 of max|expected| unless listed under \"Not passing\". CTest `onnx-node-conformance` runs every "
        "test of \"Passing\" and requires all to pass. A test counts for the op of its one-node model; an "
        "`_expanded` test (the op's ONNX function body) counts for that op.",
        "",
        "%d passed, %d failed, %d unsupported, %d excluded of %d." % (
            len(results["passed"]), len(results["failed"]), len(results["unsupported"]), len(results["excluded"]),
            sum(len(v) for v in results.values())),
        "",
        "Imported, with no one-node test in that data (the importer's own tests instead): " + ", ".join(
            "%s (%s)" % (op, where) for op, where in NO_NODE_TESTS.items()) + ".",
        "",
        "| op | in issue 4's list | passed | not passing |",
        "|---|---|---|---|",
    ]
    by_op = {}
    for name, op in sorted(ops.items()):
        by_op.setdefault(op, []).append(name)
    order = [o for o in ISSUE_OPS + OTHER_OPS if o in by_op]
    for op in order:
        names = by_op[op]
        passed = sum(status.get(n) == "passed" for n in names)
        lines.append("| %s | %s | %d | %d |" % (op, "yes" if op in ISSUE_OPS else "no", passed, len(names) - passed))
    lines += ["", "## Passing", ""]
    for op in order:
        passed = [n for n in by_op[op] if status.get(n) == "passed"]
        if passed:
            lines.append("- %s: %s" % (op, ", ".join("`%s`" % n for n in passed)))
    lines += ["", "## Not passing", ""]
    for op in order:
        for n in by_op[op]:
            if status.get(n) != "passed":
                why = EXCLUDED.get(n) or reason(details.get(n, ""))
                error = "" if n in EXCLUDED else " Error: `%s`" % details.get(n, "").split(": ", 1)[-1][:160]
                lines.append("- %s `%s` (%s): %s.%s" % (op, n, status.get(n), why or "see the error", error))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="folder with ptrain-translate and ptrain-interpret")
    parser.add_argument("--list", help="file with one test name per line ('#' comments)")
    parser.add_argument("--all", action="store_true", help="survey every node test of the ops in ISSUE_OPS and OTHER_OPS")
    parser.add_argument("--doc", help="run the tests under '## Passing' of this generated document (CI)")
    parser.add_argument("--write-doc", help="with --all: write the conformance document (docs/ONNXConformance.md)")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()
    if not os.path.isdir(DATA):
        print("onnx_node_tests: %s not found (apt-get install libonnx-testdata); skipped" % DATA)
        return 77
    ops = {}
    if args.doc:
        names = read_doc(args.doc)
    elif args.list:
        with open(args.list) as f:
            names = [l.split("#")[0].strip() for l in f]
        names = [n for n in names if n]
    elif args.all:
        ops = candidates()
        names = sorted(ops)
    else:
        parser.error("give --doc, --list or --all")
    results = {"passed": [], "failed": [], "unsupported": [], "excluded": []}
    details = {}
    for name in names:
        if name in EXCLUDED:
            results["excluded"].append(name)
            details[name] = EXCLUDED[name]
            continue
        if not os.path.isdir(os.path.join(DATA, name)):
            results["failed"].append(name)
            print("failed      %s: no such test in %s" % (name, DATA))
            continue
        status, detail = run_one(name, args.bin, args.atol, args.rtol)
        results[status].append(name)
        details[name] = detail
        if status != "passed":
            print("%-11s %s: %s" % (status, name, detail))
    print("%d passed, %d failed, %d unsupported, %d excluded" % tuple(
        len(results[k]) for k in ("passed", "failed", "unsupported", "excluded")))
    if args.write_doc:
        write_doc(args.write_doc, ops, results, details)
    if results["failed"] or ((args.list or args.doc) and results["unsupported"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
