#!/usr/bin/env python3
"""Copies an ONNX model with external data, giving every external initializer the location LOCATION (the
file itself is not moved). Usage: set_external_location.py IN.onnx OUT.onnx LOCATION"""
import sys

import onnx

model = onnx.load(sys.argv[1], load_external_data=False)
for init in model.graph.initializer:
    for entry in init.external_data:
        if entry.key == "location":
            entry.value = sys.argv[3]
onnx.save(model, sys.argv[2])
