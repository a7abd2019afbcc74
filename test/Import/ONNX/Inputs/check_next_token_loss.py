#!/usr/bin/env python3
"""Checks the loss a `ptrain-interpret --entry train_step` run printed (stdin, "result 0: ... value = X")
against the next-token cross-entropy computed in numpy from reference logits and tokens:
mean over positions p < S-1 of logsumexp(logits[b, p]) - logits[b, p, tokens[b, p+1]].

Usage: ptrain-interpret ... | check_next_token_loss.py LOGITS.pb TOKENS.pb [RTOL]
"""
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    logits = numpy_helper.to_array(onnx.load_tensor(sys.argv[1])).astype(np.float64)[:, :-1]
    tokens = numpy_helper.to_array(onnx.load_tensor(sys.argv[2]))[:, 1:]
    rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    peak = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - peak).sum(-1)) + peak[..., 0]
    expected = float(np.mean(lse - np.take_along_axis(logits, tokens[..., None], -1)[..., 0]))
    text = sys.stdin.read()
    match = re.search(r"^result 0: tensor<f32> .* value = (\S+)$", text, re.M)
    if not match:
        sys.exit("check_next_token_loss: no scalar result 0 in the interpreter's output")
    got = float(match.group(1))
    ok = abs(got - expected) <= rtol * abs(expected)
    print("next-token loss: interpreter %.9g, numpy %.9g: %s" % (got, expected, "ok" if ok else "MISMATCH"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
