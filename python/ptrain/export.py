"""ptrain-export: the trained weights of a ptrain-run checkpoint written back into the original ONNX graph.

    ptrain-export out/ --checkpoint PATH -o trained.onnx [--external-data | --no-external-data] [--model M]

out/ is the ptrain-compile folder the run trained (plan.json, libstep.so); PATH its --checkpoint (one file per
pipeline stage, PATH.stage<s>, when pp > 1; data-parallel replica 0 of each stage wrote them). Every
`parameter` state of every stage is read through the runtime's own loader (ptrain_checkpoint_load: magic,
version, bounds and the FNV-1a checksum checked) and gathered by key; a key held by several stages (the tied
embedding) must be equal on all of them. The model of plan.json (or --model) is copied with each parameter's
initializer replaced by its trained value (same name, dtype and shape; the graph, its other initializers, opset
and metadata unchanged) and saved: with its data in TRAINED.onnx.data beside it (--external-data, the default
when the original model keeps external data or the parameters exceed 1 GiB) or inline. The result loads in
onnxruntime and in ptrain (ptrain-compile / ptrain_step_init read initializers by key).

Errors (a message, exit status 1): plan.json not matching libstep.so's embedded plan, a missing or corrupt
checkpoint file, a checkpoint of another step (keys, shapes), a model without an initializer a parameter
needs or with another shape (a mismatched model), an unwritable output.
"""

import argparse
import ctypes
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from ptrain import plan_abi  # noqa: E402

MAGIC = b"PTRNCKPT"
PARAMETER = 0  # PTRAIN_STATE_PARAMETER
DTYPES = {0: ("f32", 4), 2: ("i64", 8)}  # ptrain_dtype_t -> (name, bytes)
INLINE_LIMIT = 1 << 30


class ExportError(Exception):
    pass


class StateDesc(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("kind", ctypes.c_int32), ("rank", ctypes.c_int32), ("dims", ctypes.POINTER(ctypes.c_int64)),
                ("init", ctypes.c_int32), ("init_seed", ctypes.c_uint64)]  # ptrain_state_desc_t


def read_header(path):
    """[(key, dtype, kind, dims)] of a checkpoint (docs/CodegenCpu.md, "Checkpoint format (version 1)")."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ExportError(f"checkpoint {path}: {e.strerror}")
    try:
        if data[:8] != MAGIC:
            raise ExportError(f"checkpoint {path}: not a ptrain checkpoint (no PTRNCKPT magic)")
        version, n = struct.unpack_from("<II", data, 8)
        if version != 1:
            raise ExportError(f"checkpoint {path}: version {version}, this ptrain-export reads version 1")
        pos, states = 24, []
        for _ in range(n):
            length, = struct.unpack_from("<I", data, pos)
            key = data[pos + 4:pos + 4 + length].decode()
            pos += 4 + length
            dtype, kind, rank = struct.unpack_from("<iii", data, pos)
            dims = list(struct.unpack_from(f"<{rank}q", data, pos + 12))
            pos += 12 + 8 * rank + 16
            states.append((key, dtype, kind, dims))
    except (struct.error, UnicodeDecodeError, ValueError) as e:
        raise ExportError(f"checkpoint {path}: corrupt header ({e})")
    return states


def load_checkpoint(runtime, path):
    """{key: (kind, numpy array)} of every state in the checkpoint at path, loaded and verified by the runtime."""
    import numpy as np
    header = read_header(path)
    arrays, descs, keep = {}, (StateDesc * len(header))(), []
    for i, (key, dtype, kind, dims) in enumerate(header):
        if dtype not in DTYPES:
            raise ExportError(f"checkpoint {path}: state '{key}' has dtype {dtype}, not f32 or i64")
        a = np.zeros(dims, np.float32 if dtype == 0 else np.int64)
        d = (ctypes.c_int64 * max(len(dims), 1))(*dims)
        keep += [key.encode(), d]
        descs[i] = StateDesc(keep[-2], a.ctypes.data, dtype, kind, len(dims), d)
        arrays[key] = (kind, a)
    if runtime.ptrain_checkpoint_load(descs, len(header), path.encode()) != 0:
        raise ExportError(f"checkpoint {path}: {runtime.ptrain_last_error().decode()}")
    return arrays


def gather_parameters(runtime, plan, checkpoint):
    """{key: array} of every parameter over the pipeline stages' checkpoint files."""
    import numpy as np
    pp = plan.get("pp", 1)
    params, owner = {}, {}
    for s in range(pp):
        path = checkpoint if pp == 1 else f"{checkpoint}.stage{s}"
        if not os.path.isfile(path):
            raise ExportError(f"--checkpoint {checkpoint}: no checkpoint file {path} (stage {s} of pp = {pp}; "
                              "write one with ptrain-run --checkpoint)")
        for key, (kind, a) in load_checkpoint(runtime, path).items():
            if kind != PARAMETER:
                continue
            if key in params:
                if params[key].shape != a.shape or not np.array_equal(params[key], a):
                    diff = float(np.max(np.abs(params[key] - a))) if params[key].shape == a.shape else None
                    raise ExportError(f"parameter '{key}' differs between {owner[key]} and {path}"
                                      + (f" (max |difference| {diff:.3e})" if diff is not None else
                                         f" (shapes {list(params[key].shape)} and {list(a.shape)})"))
                continue
            params[key], owner[key] = a, path
    expected = {s["key"]: s["shape"] for s in plan.get("states", []) if s["kind"] == "parameter"}
    missing = sorted(set(expected) - set(params))
    if missing:
        raise ExportError(f"--checkpoint {checkpoint}: no stage holds the parameter(s) {', '.join(missing)} of "
                          f"{plan.get('_path', 'plan.json')}")
    for key, shape in expected.items():
        if list(params[key].shape) != shape:
            raise ExportError(f"checkpoint {owner[key]}: parameter '{key}' has shape {list(params[key].shape)}, "
                              f"the plan {shape}")
    return params


def export(args):
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        raise ExportError(f"the numpy and onnx Python packages are needed ({e}; Debian: python3-numpy python3-onnx)")
    plan_path = os.path.join(args.out, "plan.json")
    lib = os.path.join(args.out, "libstep.so")
    try:
        with open(plan_path) as f:
            plan = json.load(f)
    except OSError as e:
        raise ExportError(f"{plan_path}: {e.strerror} (the -o folder of ptrain-compile)")
    except ValueError as e:
        raise ExportError(f"{plan_path}: not valid JSON ({e})")
    if not os.path.isfile(lib):
        raise ExportError(f"{lib}: no such file")
    try:
        plan_abi.check(plan, plan_path, lib)
    except plan_abi.PlanError as e:
        raise ExportError(str(e))
    if plan.get("tp", 1) != 1:
        raise ExportError(f"{plan_path}: tp = {plan['tp']}: gathering tensor-parallel shards is not supported yet")
    plan["_path"] = plan_path
    runtime_path = os.path.join(args.build_dir or "", "lib", "Runtime", "libptrain_runtime.so")
    try:
        runtime = ctypes.CDLL(runtime_path)
    except OSError as e:
        raise ExportError(f"cannot load the runtime {runtime_path}: {e} (pass --build-dir)")
    runtime.ptrain_last_error.restype = ctypes.c_char_p
    params = gather_parameters(runtime, plan, args.checkpoint)

    source = args.model or plan["model"]
    if not os.path.isfile(source):
        raise ExportError(f"the model {source} does not exist (--model names another)")
    try:
        model = onnx.load(source)
    except Exception as e:  # onnx raises DecodeError, OSError, ValueError for bad files and data
        raise ExportError(f"{source}: cannot load the ONNX model ({e})")
    by_name = {init.name: init for init in model.graph.initializer}
    for key, value in params.items():
        init = by_name.get(key)
        if init is None:
            raise ExportError(f"{source}: no initializer '{key}' (the checkpoint's parameter): the checkpoint is "
                              "not of this model")
        dims = list(init.dims)
        if dims != list(value.shape):
            raise ExportError(f"{source}: initializer '{key}' has shape {dims}, the checkpoint's parameter "
                              f"{list(value.shape)}: the checkpoint is not of this model")
        want = np.float32 if init.data_type == onnx.TensorProto.FLOAT else \
            np.int64 if init.data_type == onnx.TensorProto.INT64 else None
        if want is None or value.dtype != want:
            raise ExportError(f"{source}: initializer '{key}' has ONNX data type {init.data_type}, the "
                              f"checkpoint's parameter {value.dtype}")
        init.CopyFrom(numpy_helper.from_array(value, key))
    total = sum(a.nbytes for a in params.values())
    external = args.external_data
    if external is None:
        external = total > INLINE_LIMIT or os.path.isfile(source + ".data") or any(
            i.data_location == onnx.TensorProto.EXTERNAL for i in onnx.load(source, load_external_data=False)
            .graph.initializer)
    dest = os.path.abspath(args.output)
    if not os.path.isdir(os.path.dirname(dest)):
        raise ExportError(f"-o {args.output}: the folder {os.path.dirname(dest)} does not exist")
    if os.path.isdir(dest):
        raise ExportError(f"-o {args.output}: is a folder (name the .onnx file to write)")
    if os.path.exists(dest) and os.path.samefile(dest, source):
        raise ExportError(f"-o {args.output}: is the model the graph is copied from; write the trained model "
                          "beside it")
    data_path = os.path.join(os.path.dirname(dest), os.path.basename(dest) + ".data")
    try:
        if external:
            if os.path.exists(data_path):
                os.remove(data_path)  # save_model appends to it otherwise
            onnx.save_model(model, dest, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=os.path.basename(data_path), size_threshold=1024)
        else:
            onnx.save_model(model, dest)
    except (OSError, ValueError) as e:
        for path in (dest, data_path) if external else (dest,):  # No half-written model or data left behind.
            if os.path.isfile(path):
                os.remove(path)
        raise ExportError(f"-o {args.output}: cannot write ({e})")
    data_name = os.path.basename(data_path)
    return {"output": dest, "data": data_name if external else None, "parameters": len(params), "bytes": total}


def main(argv=None):
    p = argparse.ArgumentParser(prog="ptrain-export", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the output folder of ptrain-compile (plan.json, libstep.so)")
    p.add_argument("--checkpoint", required=True, help="the --checkpoint PATH of ptrain-run")
    p.add_argument("-o", "--output", required=True, help="the trained ONNX model to write")
    p.add_argument("--model", default=None, help="the ONNX model to copy the graph from (default: plan.json's)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--external-data", dest="external_data", action="store_true", default=None,
                       help="write the initializers to OUTPUT.data beside the model")
    group.add_argument("--no-external-data", dest="external_data", action="store_false",
                       help="keep the initializers inline")
    p.add_argument("--build-dir", default=os.environ.get("PTRAIN_BUILD_DIR"))
    args = p.parse_args(argv)
    try:
        result = export(args)
    except ExportError as e:
        print(f"ptrain-export: error: {e}", file=sys.stderr)
        return 1
    where = f" (data in {result['data']})" if result["data"] else ""
    print(f"ptrain-export: {result['parameters']} trained parameters ({result['bytes']:,} bytes) -> "
          f"{result['output']}{where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
