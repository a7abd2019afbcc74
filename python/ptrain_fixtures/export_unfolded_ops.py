#!/usr/bin/env python3
"""Generates the op-level fixture of the ops in the newest exporter's unfolded graphs, with reference outputs.

torch.onnx.export(dynamo=True, optimize=False) writes torch.split as SplitToSequence + SequenceAt, and
LLaMA-style models compute positions and rotary tables with CumSum, Range, Cos and Sin. This model (opset
18, onnx.helper) uses each form ptrain legalizes (lib/Import/ONNX/LegalizeSequenceOps.cpp) on a run-time
input x [2, 6, 4]: SplitToSequence with a scalar split, with sizes and with neither (keepdims 0), SequenceAt
at positive and negative positions, SequenceLength, SequenceConstruct, ConcatFromSequence with and without
new_axis, CumSum of a run-time float tensor (inclusive, and exclusive + reverse), CumSum of a constant
integer tensor, and Cos/Sin of a constant Range. Reference outputs from onnxruntime, checked against
onnx.reference to 1e-5.

Usage: .venv/bin/python python/ptrain_fixtures/export_unfolded_ops.py [--out test/Import/ONNX/opset18+/unfolded]
The file is a pure function of the seed: rerunning reproduces the committed bytes.
"""
import argparse
import os

import numpy as np
import onnx
import onnx.reference
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(np.asarray(array), name))


def build():
    n = helper.make_node
    nodes = [
        # Sequences: a scalar split of 2 along axis 1 (3 parts), SequenceAt 0 and -1, SequenceLength.
        const("two", np.array(2, dtype=np.int64)),
        n("SplitToSequence", ["x", "two"], ["seq"], name="split_scalar", axis=1),
        const("p0", np.array(0, dtype=np.int64)),
        const("plast", np.array(-1, dtype=np.int64)),
        n("SequenceAt", ["seq", "p0"], ["first"], name="at_first"),
        n("SequenceAt", ["seq", "plast"], ["last"], name="at_last"),
        n("SequenceLength", ["seq"], ["len"], name="length"),
        n("Cast", ["len"], ["lenf"], name="len_float", to=F),
        n("Mul", ["first", "lenf"], ["scaled"], name="scale"),
        n("Add", ["scaled", "last"], ["y_seq"], name="seq_out"),
        # No split, keepdims 0: four [2, 6] parts stacked again on a new axis 1 -> [2, 4, 6].
        n("SplitToSequence", ["x"], ["cols"], name="split_all", axis=2, keepdims=0),
        n("ConcatFromSequence", ["cols"], ["y_stack"], name="stack", axis=1, new_axis=1),
        # Split sizes [1, 2, 3] on axis 1, element 2; SequenceConstruct + ConcatFromSequence on axis 0.
        const("sizes", np.array([1, 2, 3], dtype=np.int64)),
        n("SplitToSequence", ["x", "sizes"], ["parts"], name="split_sizes", axis=1),
        n("SequenceAt", ["parts", "two"], ["part2"], name="at_part2"),
        n("SequenceConstruct", ["first", "last"], ["pair"], name="construct"),
        n("ConcatFromSequence", ["pair"], ["y_concat"], name="concat", axis=0),
        # CumSum of the run-time x: inclusive on axis 1; exclusive and reversed on the last axis.
        const("ax1", np.array(1, dtype=np.int64)),
        const("axlast", np.array(-1, dtype=np.int32)),
        n("CumSum", ["x", "ax1"], ["y_cumsum"], name="cumsum"),
        n("CumSum", ["x", "axlast"], ["y_cumsum_rev"], name="cumsum_rev", exclusive=1, reverse=1),
        # Positions as LLaMA-style exports compute them: cumsum(ones) - 1, an int64 constant chain.
        const("ones", np.ones([6], dtype=np.int64)),
        const("ax0", np.array(0, dtype=np.int64)),
        const("one", np.array(1, dtype=np.int64)),
        n("CumSum", ["ones", "ax0"], ["counts"], name="positions_cumsum"),
        n("Sub", ["counts", "one"], ["pos"], name="positions"),
        n("Cast", ["pos"], ["posf"], name="positions_float", to=F),
        const("shape_pos", np.array([1, 6, 1], dtype=np.int64)),
        n("Reshape", ["posf", "shape_pos"], ["pos3"], name="positions_3d"),
        # Rotary-style tables: cos/sin of a constant Range times a frequency.
        const("start", np.array(0.0, dtype=np.float32)),
        const("limit", np.array(4.0, dtype=np.float32)),
        const("delta", np.array(1.0, dtype=np.float32)),
        n("Range", ["start", "limit", "delta"], ["freqs_idx"], name="range"),
        const("freq", np.array(0.75, dtype=np.float32)),
        n("Mul", ["freqs_idx", "freq"], ["angles"], name="angles"),
        n("Cos", ["angles"], ["cos"], name="cos"),
        n("Sin", ["angles"], ["sin"], name="sin"),
        n("Mul", ["x", "cos"], ["xc"], name="x_cos"),
        n("Mul", ["pos3", "sin"], ["ps"], name="pos_sin"),
        n("Add", ["xc", "ps"], ["y_rotary"], name="rotary_out"),
    ]
    outputs = [
        helper.make_tensor_value_info("y_seq", F, [2, 2, 4]),
        helper.make_tensor_value_info("y_stack", F, [2, 4, 6]),
        helper.make_tensor_value_info("part2", F, [2, 3, 4]),
        helper.make_tensor_value_info("y_concat", F, [4, 2, 4]),
        helper.make_tensor_value_info("y_cumsum", F, [2, 6, 4]),
        helper.make_tensor_value_info("y_cumsum_rev", F, [2, 6, 4]),
        helper.make_tensor_value_info("y_rotary", F, [2, 6, 4]),
    ]
    graph = helper.make_graph(nodes, "unfolded_ops", [helper.make_tensor_value_info("x", F, [2, 6, 4])], outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="ptrain-export-unfolded")
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    return m


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test",
                                                      "Import", "ONNX", "opset18+", "unfolded"))
    args = parser.parse_args()
    m = build()
    x = np.random.default_rng(5).standard_normal([2, 6, 4]).astype(np.float32)
    session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    ort = session.run(None, {"x": x})
    ref = onnx.reference.ReferenceEvaluator(m).run(None, {"x": x})
    for out, a, b in zip(m.graph.output, ort, ref):
        err = float(np.max(np.abs(a - b)))
        assert err < 1e-5, f"output {out.name}: onnxruntime and onnx.reference differ by {err}"
    onnx.save(m, os.path.join(args.out, "unfolded_ops.onnx"))
    with open(os.path.join(args.out, "unfolded_ops.input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    for i, (out, value) in enumerate(zip(m.graph.output, ort)):
        with open(os.path.join(args.out, f"unfolded_ops.output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, out.name).SerializeToString())
    print(f"unfolded_ops.onnx: {len(m.graph.node)} nodes, {len(ort)} outputs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
