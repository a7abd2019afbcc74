"""Shared by the end-to-end CTest scripts of test/Target/Cpp: running tools, recording checks, the corpus."""

import os
import shutil
import struct
import subprocess
import sys

failures = []


def setup(argv):
    """(build, source, work, bin, model) from BUILD_DIR SOURCE_DIR WORK_DIR; WORK_DIR is emptied."""
    build, source, work = argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return build, source, work, os.path.join(build, "bin"), os.path.join(source, "models", "gpt", "gpt.onnx")


def run(cmd, timeout=300, env=None):
    """(exit status, stdout and stderr together) of `cmd` (in `env`, default this process's environment)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def emitted_library(build, source, work, bin_dir, mlir_name, *cxx_flags):
    """Emits test/Target/Cpp/Inputs/<mlir_name> with ptrain-translate --emit-cpp, builds it against the runtime
    (-Wall -Werror, `cxx_flags` and the build's step flags, as ptrain-compile adds them: the sanitizers of a
    PTRAIN_SANITIZE build) and loads it with ctypes (ptrain_step_last_error's restype set); finishes the test on
    a failure."""
    import ctypes
    from ptrain.compile import step_flags
    cpp, lib = os.path.join(work, "step.cpp"), os.path.join(work, "libstep.so")
    rc, out = run([os.path.join(bin_dir, "ptrain-translate"), "--emit-cpp",
                   os.path.join(source, "test", "Target", "Cpp", "Inputs", mlir_name), "-o", cpp,
                   "--emit-cpp-constants=" + os.path.join(work, "step.consts.bin")])
    check(rc == 0, f"ptrain-translate --emit-cpp Inputs/{mlir_name}" + ("" if rc == 0 else ":\n" + out))
    runtime = os.path.join(build, "lib", "Runtime")
    rc, out = run([os.environ.get("CXX", "c++"), "-std=c++17", "-O2", "-shared", "-fPIC", "-Wall", "-Werror",
                   *cxx_flags, *step_flags(runtime), "-I" + os.path.join(source, "include"), cpp, "-o", lib,
                   "-L" + runtime, "-lptrain_runtime", "-Wl,-rpath," + runtime, "-Wl,--no-undefined"])
    check(rc == 0, "compiling step.cpp" + ("" if rc == 0 else ":\n" + out))
    if failures:
        finish()
    for name in ("libmpi.so.40",):  # the runtime links MPI; its components need libmpi's symbols globally
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass
    library = ctypes.CDLL(lib)
    library.ptrain_step_last_error.restype = ctypes.c_char_p
    return library


def corpus(source, work, max_bytes=400000):
    """A small byte-level corpus: data.py over the Python standard library, capped; returns its folder."""
    data = os.path.join(work, "data")
    rc, _ = run([sys.executable, os.path.join(source, "python", "ptrain", "data.py"), "--out", data,
                 "--max-bytes", str(max_bytes)])
    check(rc == 0, "data.py")
    return data


def stdlib_megatron(work, count, val_from):
    """A Megatron indexed dataset WORK/mega (train and val, data.json: vocabulary 256, end-of-document 0) of the
    first `count` Python standard-library files, each file's bytes as uint16 ids ended by 0 (a byte-level
    tokenization; 0 never occurs in source text), files [val_from, count) held out; returns (folder, the
    documents as lists of ids)."""
    import json
    import numpy as np
    from ptrain import data as stdlib_corpus, megatron_index
    root = stdlib_corpus.stdlib_dir()
    docs = []
    for rel in stdlib_corpus.list_sources(root)[:count]:
        with open(os.path.join(root, rel), "rb") as f:
            docs.append(np.frombuffer(f.read(), dtype=np.uint8).astype(np.uint16).tolist() + [0])
    mega = os.path.join(work, "mega")
    os.makedirs(mega)
    megatron_index.write(os.path.join(mega, "train"), docs[:val_from], np.uint16)
    megatron_index.write(os.path.join(mega, "val"), docs[val_from:], np.uint16)
    with open(os.path.join(mega, "data.json"), "w") as f:
        json.dump({"format": "megatron", "vocab_size": 256, "eod": 0}, f)
    return mega, docs


def global_batches(source, data, path, steps, seed, rows=16, seq=64):
    """Writes the global batches ptrain-run's workers draw in steps 0..steps-1 (run_data.py's batch():
    random.Random(seed * 1000003 + i), `rows` windows of `seq` bytes) as raw int64 for ptrain-interpret
    --tokens-file; returns `path`."""
    from ptrain import run_data
    train, _ = run_data.read_data(*run_data.data_files(data), seq)
    with open(path, "wb") as f:
        for i in range(steps):
            ids = list(run_data.batch(train, rows, seq, seed * 1000003 + i))
            f.write(struct.pack(f"<{len(ids)}q", *ids))
    return path


def compile_plans(bin_dir, model, work, configs, common):
    """ptrain-compile `model` once per {name: flags} of `configs` (each with `common`) into WORK/name, recording a
    check per plan; returns {name: plan.json} of the ones that compiled."""
    import json
    plans = {}
    for name, flags in configs.items():
        rc, out = run([os.path.join(bin_dir, "ptrain-compile"), model, *flags, *common, "-o", os.path.join(work, name)])
        check(rc == 0, f"ptrain-compile {' '.join(flags)}" + ("" if rc == 0 else ":\n" + out))
        if rc == 0:
            plans[name] = json.load(open(os.path.join(work, name, "plan.json")))
    return plans


def executor_losses(bin_dir, model, step_dir, tokens, steps, timeout=900):
    """The step losses of the multi-rank executor (ptrain-interpret --multi-rank) on `step_dir`/step.mlir over
    the global batches of `tokens` (global_batches()); None, with a failure recorded, when it fails."""
    rc, out = run([os.path.join(bin_dir, "ptrain-interpret"), os.path.join(step_dir, "step.mlir"), "--weights", model,
                   "--multi-rank", "--steps", str(steps), "--tokens-file", tokens], timeout=timeout)
    check(rc == 0, f"ptrain-interpret --multi-rank on {step_dir}/step.mlir" + ("" if rc == 0 else ":\n" + out[-3000:]))
    if rc != 0:
        return None
    return [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]


def print_losses(logs, base="none"):
    """Prints each run's train losses, relative to run `base`'s, and its validation losses; returns base's."""
    reference = logs[base]["train_loss"]
    for name, log in logs.items():
        rel = [f"{(x / y - 1) * 100:+.4f}%" for x, y in zip(log["train_loss"], reference)]
        print(f"{name}: train {log['train_loss']} ({', '.join(rel)} vs {base}) val {log['val_loss']}")
    return reference


def read_checkpoint(path):
    """{key: bytes} of a checkpoint (docs/CodegenCpu.md, version 1)."""
    blob = open(path, "rb").read()
    count, data_offset = struct.unpack_from("<I", blob, 12)[0], struct.unpack_from("<Q", blob, 16)[0]
    pos, states = 24, {}
    for _ in range(count):
        n = struct.unpack_from("<I", blob, pos)[0]
        key = blob[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        _, _, rank = struct.unpack_from("<iii", blob, pos)
        pos += 12 + 8 * rank
        offset, size = struct.unpack_from("<QQ", blob, pos)
        pos += 16
        states[key] = blob[data_offset + offset:data_offset + offset + size]
    return states


def train_logs(bin_dir, work, data, names, steps=3, seed=3, timeout=60):
    """{name: ptrain-run's log} of the plans work/<name>, each trained `steps` steps on `data` with `seed` and one
    validation batch, `timeout` ptrain-run's deadline in seconds (a failed run is a recorded check, not in the
    result)."""
    import json
    logs = {}
    for name in names:
        log = os.path.join(work, f"{name}.json")
        rc, out = run([os.path.join(bin_dir, "ptrain-run"), os.path.join(work, name), "--data", data, "--steps",
                       str(steps), "--val-batches", "1", "--seed", str(seed), "--log", log, "--timeout", str(timeout),
                       "--no-tensorboard", "--no-plots"], timeout=900)
        check(rc == 0, f"ptrain-run {name} {steps} steps" + ("" if rc == 0 else ":\n" + out))
        if rc == 0:
            with open(log) as f:
                logs[name] = json.load(f)
    return logs


def finish():
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


def ort_val_loss(model, data, plan, seed, val_batches, dp=1):
    """onnxruntime's mean loss of the ONNX `model` over the validation batches a ptrain-run of `plan` with --seed
    `seed` and --val-batches `val_batches` drew (run_data.py's batch(), seeds 7919 * (seed + 1) + j): per batch the
    global batch of dp replicas' rows in the eval step's micro-batches, the loss averaged over them (the eval
    step's loss all-reduce averages over dp). Needs .venv (ort_venv.require)."""
    import numpy as np
    import onnxruntime as ort
    from ptrain import run_data
    rows, seq, b = plan["micro_batches"] * plan["batch"], plan["seq"], plan["batch"]
    _, val = run_data.read_data(*run_data.data_files(data), seq)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    losses = []
    for j in range(val_batches):
        tokens = np.ctypeslib.as_array(run_data.batch(val, dp * rows, seq, 7919 * (seed + 1) + j)).reshape(-1, seq)
        micro = []
        for m in range(0, len(tokens), b):
            t = tokens[m:m + b]
            z = sess.run(None, {name: t})[0][:, :-1].astype(np.float64)
            z = z - z.max(-1, keepdims=True)
            logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
            micro.append(-np.take_along_axis(logp, t[:, 1:, None], -1).mean())
        losses.append(np.mean(micro))
    return float(np.mean(losses))
