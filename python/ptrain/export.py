"""ptrain-export: the trained weights of a ptrain-run checkpoint written back into the original ONNX graph.

    ptrain-export out/ --checkpoint PATH -o trained.onnx [--external-data | --no-external-data] [--model M]

out/ is the ptrain-compile folder the run trained (plan.json, libstep.so); PATH its --checkpoint: one file per
pipeline stage (PATH.stage<s>, when pp > 1) and tensor-parallel rank (PATH[.stage<s>].tp<t>, when tp > 1),
which data-parallel replica 0 wrote, and PATH.json, ptrain-run's manifest (step, seed, grid, plan fingerprint,
file names). Every state of every file is read through the runtime's own loader (ptrain_checkpoint_load:
magic, version, bounds and the FNV-1a checksum checked) before anything is written; all files must be of one
step (their AdamW step counters, and the manifest's). The parameters of a stage are gathered from its tp
ranks: a sharded one by its plan.json `tp_slice` (dimension `dim` is groups x tp x chunk, rank t holds
[:, t, :]: column-parallel, fused Q|K|V, row-parallel and vocabulary-parallel splits; a vocabulary padded to a
multiple of tp is cut back, its padding must be zero), a replicated one must be bit-equal on all tp ranks; a
key held by several stages (the tied embedding) must be equal on all of them. The model of plan.json (or
--model) is copied with each parameter's initializer replaced by its trained value (same name, dtype and
shape; the graph, its other initializers, opset and metadata unchanged) and saved: with its data in
TRAINED.onnx.data beside it (--external-data, the default when the original model keeps external data or the
parameters exceed 1 GiB) or inline. The result loads in onnxruntime and in ptrain (ptrain-compile /
ptrain_step_init read initializers by key).

Errors (a message, exit status 1, nothing written): plan.json not matching libstep.so's embedded plan, a
missing or corrupt checkpoint file, files of different steps, a manifest of another step, grid or compile, a
replicated parameter that differs between tp ranks, a checkpoint of another step (keys, shapes), a model
without an initializer a parameter needs or with another shape (a mismatched model), an unwritable output.
"""

import argparse
import ctypes
import json
import os
import re
import struct
import sys

from ptrain import build_dirs
from ptrain import manifest as manifest_module
from ptrain import plan_abi

MAGIC = b"PTRNCKPT"
PARAMETER = 0  # PTRAIN_STATE_PARAMETER
STEP_COUNTER = 5  # PTRAIN_STATE_STEP_COUNTER
DTYPES = {0: ("f32", 4), 2: ("i64", 8)}  # ptrain_dtype_t -> (name, bytes)
INLINE_LIMIT = 1 << 30


class ExportError(Exception):
    pass


class StateDesc(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("kind", ctypes.c_int32), ("rank", ctypes.c_int32), ("dims", ctypes.POINTER(ctypes.c_int64)),
                ("init", ctypes.c_int32), ("init_seed", ctypes.c_uint64)]  # ptrain_state_desc_t


def read_entries(path):
    """(data offset, [(key, dtype, kind, dims, offset, size)]) of a checkpoint's header, reading the header only
    (docs/CodegenCpu.md, "Checkpoint format (version 1)"): each state's bytes are at data offset + offset."""
    try:
        with open(path, "rb") as f:
            data = f.read(24)
            if len(data) == 24:
                data += f.read(max(struct.unpack_from("<Q", data, 16)[0] - 24, 0))
    except OSError as e:
        raise ExportError(f"checkpoint {path}: {e.strerror}")
    try:
        if data[:8] != MAGIC:
            raise ExportError(f"checkpoint {path}: not a ptrain checkpoint (no PTRNCKPT magic)")
        version, n, data_offset = struct.unpack_from("<IIQ", data, 8)
        if version != 1:
            raise ExportError(f"checkpoint {path}: version {version}, this ptrain-export reads version 1")
        pos, states = 24, []
        for _ in range(n):
            length, = struct.unpack_from("<I", data, pos)
            key = data[pos + 4:pos + 4 + length].decode()
            pos += 4 + length
            dtype, kind, rank = struct.unpack_from("<iii", data, pos)
            dims = list(struct.unpack_from(f"<{rank}q", data, pos + 12))
            offset, size = struct.unpack_from("<QQ", data, pos + 12 + 8 * rank)
            pos += 12 + 8 * rank + 16
            states.append((key, dtype, kind, dims, offset, size))
    except (struct.error, UnicodeDecodeError, ValueError) as e:
        raise ExportError(f"checkpoint {path}: corrupt header ({e})")
    return data_offset, states


def read_header(path):
    """[(key, dtype, kind, dims)] of a checkpoint (read_entries without the offsets)."""
    return [entry[:4] for entry in read_entries(path)[1]]


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


stage_files = manifest_module.stage_files


def read_manifest(plan, checkpoint, embedded):
    """PATH.json, ptrain-run's manifest of the checkpoint (python/ptrain/manifest.py), checked against the plan
    (plan["_path"], its embedded plan `embedded`): the same grid and fingerprint, the plan's files; None when
    there is none (a checkpoint written by ptrain_step_save directly)."""
    try:
        manifest = manifest_module.read(checkpoint)
        return manifest and manifest_module.check(manifest, plan, plan["_path"], checkpoint, embedded)
    except manifest_module.ManifestError as e:
        raise ExportError(str(e))


def gather_shards(key, parts, tp_slice, files):
    """The full tensor of a parameter that --ptrain-shard-tp sliced, from its tp ranks' parts (in tp order):
    dimension `dim` viewed as groups x tp x chunk, part t is [:, t, :] (the layout of tensorParallelSlice,
    include/ptrain/Interpreter/MultiRankExecutor.h: column-parallel and fused Q|K|V weights along their output
    dimension, row-parallel ones along their input dimension, the vocabulary-parallel table along its rows);
    a vocabulary padded to a multiple of tp (`padded`) is cut back to the model's, its padding rows must be 0."""
    import numpy as np
    dim, groups, global_shape = tp_slice["dim"], tp_slice["groups"], list(tp_slice["global_shape"])
    local = list(parts[0].shape)
    tp = len(parts)
    split = tp_slice.get("padded", global_shape[dim] if dim < len(global_shape) else 0)
    if (dim >= len(local) or len(local) != len(global_shape) or groups < 1 or local[dim] % groups
            or local[dim] * tp != split):
        raise ExportError(f"{files[0]}: parameter '{key}' has the local shape {local}, which tp_slice "
                          f"{tp_slice} does not split over tp = {tp}")
    chunk = local[dim] // groups
    # [..., groups * chunk, ...] per rank -> [..., groups, tp, chunk, ...] -> [..., groups * tp * chunk, ...]
    pieces = [a.reshape(local[:dim] + [groups, 1, chunk] + local[dim + 1:]) for a in parts]
    full = np.concatenate(pieces, axis=dim + 1).reshape(local[:dim] + [split] + local[dim + 1:])
    if split != global_shape[dim]:
        padding = np.take(full, range(global_shape[dim], split), axis=dim)
        if np.any(padding != 0):
            raise ExportError(f"parameter '{key}': the vocabulary padding (entries {global_shape[dim]}..{split - 1} "
                              f"of dimension {dim}) is not zero in {', '.join(files)}: not a vocabulary-parallel "
                              "checkpoint of this plan")
        full = np.take(full, range(global_shape[dim]), axis=dim)
    return np.ascontiguousarray(full)


def gather_parameters(runtime, plan, checkpoint, manifest=None):
    """{key: array} of every parameter, the full tensors, over the checkpoint's files (one per pipeline stage
    and tensor-parallel rank, data-parallel replica 0's). Every file is read and checked before anything is
    returned: the same step counter in all of them (and the manifest's step), a replicated parameter bit-equal
    on every tp rank and stage that holds it, a sliced one gathered from its tp ranks' parts."""
    import numpy as np
    pp, tp = plan.get("pp", 1), plan.get("tp", 1)
    states = {s["key"]: s for s in plan.get("states", [])}
    files = stage_files(plan, checkpoint)
    loaded, steps = {}, {}
    for s, t, path in files:
        if not os.path.isfile(path):
            where = "".join([f"stage {s} of pp = {pp}" if pp > 1 else "", ", " if pp > 1 and tp > 1 else "",
                             f"tp rank {t} of tp = {tp}" if tp > 1 else ""])
            raise ExportError(f"--checkpoint {checkpoint}: no checkpoint file {path}" +
                              (f" ({where}; " if where else " (") + "write one with ptrain-run --checkpoint)")
        loaded[path] = load_checkpoint(runtime, path)
        steps.update({path: int(a) for kind, a in loaded[path].values() if kind == STEP_COUNTER})
    if len(set(steps.values())) > 1:
        by_step = {}
        for path, n in steps.items():
            by_step.setdefault(n, []).append(path)
        raise ExportError("the checkpoint files are of different steps: " +
                          "; ".join(f"after step {n}: {', '.join(paths)}" for n, paths in sorted(by_step.items())) +
                          " (the files of one run are needed)")
    if manifest is not None and steps and manifest["step"] not in steps.values():
        raise ExportError(f"{checkpoint}.json says step {manifest['step']}, but the checkpoint files are after "
                          f"step {next(iter(steps.values()))}: the files are not the ones the manifest describes")
    params, owner = {}, {}
    for s in range(pp):
        stage = [(p, loaded[p]) for s2, _, p in files if s2 == s]
        keys = [sorted(k for k, (kind, _) in ck.items() if kind == PARAMETER) for _, ck in stage]
        for (path, _), k in zip(stage[1:], keys[1:]):
            if k != keys[0]:
                odd = sorted(set(k) ^ set(keys[0]))
                raise ExportError(f"{path} and {stage[0][0]} hold different parameters ({', '.join(odd[:4])}): "
                                  "the tp ranks of a stage hold the same keys")
        for key in keys[0]:
            parts = [ck[key][1] for _, ck in stage]
            paths = [p for p, _ in stage]
            sliced = states.get(key, {}).get("tp_slice") if tp > 1 else None
            if sliced:
                a = gather_shards(key, parts, sliced, paths)
            else:
                a = parts[0]
                for path, b in zip(paths[1:], parts[1:]):
                    if b.shape != a.shape or not np.array_equal(a, b):
                        raise ExportError(f"parameter '{key}' is replicated over the tp ranks but differs between "
                                          f"{paths[0]} and {path}" + describe_difference(a, b))
            where = paths[0] if len(paths) == 1 else f"{paths[0]} .. {paths[-1]}"
            if key in params:
                if params[key].shape != a.shape or not np.array_equal(params[key], a):
                    raise ExportError(f"parameter '{key}' differs between {owner[key]} and {where}" +
                                      describe_difference(params[key], a))
                continue
            params[key], owner[key] = a, where
    expected = {k: s.get("tp_slice", {}).get("global_shape", s["shape"]) if tp > 1 else s["shape"]
                for k, s in states.items() if s["kind"] == "parameter"}
    missing = sorted(set(expected) - set(params))
    if missing:
        raise ExportError(f"--checkpoint {checkpoint}: no stage holds the parameter(s) {', '.join(missing)} of "
                          f"{plan.get('_path', 'plan.json')}")
    for key, shape in expected.items():
        if list(params[key].shape) != list(shape):
            raise ExportError(f"checkpoint {owner[key]}: parameter '{key}' has shape {list(params[key].shape)}, "
                              f"the plan {list(shape)}")
    return params


def describe_difference(a, b):
    import numpy as np
    if a.shape != b.shape:
        return f" (shapes {list(a.shape)} and {list(b.shape)})"
    return f" (max |difference| {float(np.max(np.abs(a.astype(np.float64) - b))):.3e})"


CHECKPOINT_SUFFIX = re.compile(r"(\.stage\d+)?(\.tp\d+)?(\.dp\d+)?|\.json")


def check_not_an_input(args, dest, data_path, source, plan_path, lib):
    """-o (and its OUTPUT.data) must not be a file the export reads or that its inputs need: a checkpoint file or
    manifest (-o PATH.stage0 replaced the trained weights with the model), the source model's external data (its
    original weights), plan.json or libstep.so. Checked before anything is written."""
    import onnx
    inputs = {plan_path: "the plan's plan.json", lib: "the plan's libstep.so"}
    folder = os.path.dirname(os.path.abspath(source))
    # onnx.load with its external data forgets the locations: the graph alone names them.
    for init in onnx.load(source, load_external_data=False).graph.initializer:
        for entry in init.external_data:
            if entry.key == "location":
                inputs[os.path.join(folder, entry.value)] = f"external data of the model {source}"
    ckpt = os.path.abspath(args.checkpoint)
    ckpt_folder = os.path.dirname(ckpt)
    for name in os.listdir(ckpt_folder) if os.path.isdir(ckpt_folder) else []:
        path = os.path.join(ckpt_folder, name)
        if path.startswith(ckpt) and CHECKPOINT_SUFFIX.fullmatch(path[len(ckpt):]):
            inputs[path] = f"a file of the checkpoint {args.checkpoint}"
    for what, path in (("-o", dest), ("-o's external data", data_path)):
        if not os.path.exists(path):
            continue
        for other, role in inputs.items():
            if os.path.exists(other) and os.path.samefile(path, other):
                raise ExportError(f"{what} {path}: is {role}; writing it would destroy it (write the trained "
                                  "model elsewhere)")


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
        embedded = plan_abi.check(plan, plan_path, lib)
    except plan_abi.PlanError as e:
        raise ExportError(str(e))
    plan["_path"] = plan_path
    manifest = read_manifest(plan, args.checkpoint, embedded)
    build = build_dirs.build_dir(args.build_dir)
    if not build:
        raise ExportError("cannot locate the ptrain build (its lib/Runtime/libptrain_runtime.so): " +
                          build_dirs.HOW.format(tool="ptrain-export"))
    runtime_path = os.path.join(build, "lib", "Runtime", "libptrain_runtime.so")
    try:
        runtime = ctypes.CDLL(runtime_path)
    except OSError as e:
        raise ExportError(f"cannot load the runtime {runtime_path}: {e} (pass --build-dir)")
    runtime.ptrain_last_error.restype = ctypes.c_char_p
    params = gather_parameters(runtime, plan, args.checkpoint, manifest)

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
    check_not_an_input(args, dest, data_path, source, plan_path, lib)
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
    p.add_argument("--build-dir", default=None,
                   help="the ptrain build (lib/Runtime/libptrain_runtime.so; default: $PTRAIN_BUILD_DIR, else the "
                        "build of the ptrain-translate on PATH)")
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
