#!/usr/bin/python3
"""Writes sce_scores.pb, sce_labels.pb and sce_weights.pb (legalize-selection.onnxtext, LOSS-VALUES) and prints
PyTorch's F.cross_entropy(weight, ignore_index=-100) of them, mean and sum, the values the test checks.

    /usr/bin/python3 test/Import/ONNX/Inputs/make_sce_inputs.py   (torch: Debian's python3-torch; onnx)
"""
import os

import numpy as np
import torch
import torch.nn.functional as F
from onnx import numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
scores = rng.uniform(-2.0, 2.0, size=(3, 5, 2)).astype(np.float32)  # [N, C, d]
labels = np.array([[1, -100], [4, 0], [-100, 2]], dtype=np.int64)   # two ignored positions
weights = np.array([0.5, 1.0, 1.5, 2.0, 3.0], dtype=np.float32)
for name, array in (("sce_scores", scores), ("sce_labels", labels), ("sce_weights", weights)):
    with open(os.path.join(here, f"{name}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())
x, t, w = (torch.from_numpy(a).double() if a.dtype != np.int64 else torch.from_numpy(a)
           for a in (scores, labels, weights))
for reduction in ("mean", "sum"):
    print(reduction, f"{float(F.cross_entropy(x, t, weight=w, ignore_index=-100, reduction=reduction)):.9f}")
