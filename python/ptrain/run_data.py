"""ptrain-run's data (python/ptrain/run.py): the corpus of --data and --val-data (python/ptrain/token_data.py reads
and checks the format), the files no output may overwrite, the bytes format's windows (python/ptrain/loader.py),
the --labels files, and the samples a run asks for."""

import array
import os
import sys

from ptrain import loader, token_data
from ptrain.run_plan import RunError

def data_files(data):
    """(train, val) paths of a bytes corpus (test/Target/Cpp/e2e.py): a folder holds train.bin and val.bin
    (data.py); a file is the training data and its folder's val.bin, if any, the held-out data (else None: the
    file's last 10%)."""
    if os.path.isdir(data):
        return os.path.join(data, "train.bin"), os.path.join(data, "val.bin")
    val = os.path.join(os.path.dirname(os.path.abspath(data)), "val.bin")
    return data, (val if os.path.isfile(val) and os.path.abspath(val) != os.path.abspath(data) else None)


def read_data(train_path, val_path, seq):
    """The bytes of a bytes corpus's (train, val) files (data_files): without val_path, the last 10% of train."""
    with open(train_path, "rb") as f:
        train = f.read()
    if val_path:
        with open(val_path, "rb") as f:
            val = f.read()
    else:
        cut = len(train) * 9 // 10
        train, val = train[:cut], train[cut:]
    for name, d in (("training", train), ("validation", val)):
        if len(d) < seq + 1:
            raise RunError(f"the {name} data has {len(d)} bytes, fewer than one window of {seq + 1}")
    return train, val


def open_data(data, data_format=None, val_data=None):
    """The corpus of --data and --val-data (python/ptrain/token_data.py: its format read from its files); memory
    maps only."""
    try:
        return token_data.open_corpus(data, data_format, val_data)
    except token_data.DataError as e:
        raise RunError(str(e))


def data_inputs(data):
    """The files --data reads: what no output may overwrite."""
    if os.path.isdir(data):
        names = ("train.bin", "val.bin", "train.idx", "val.idx", token_data.DECLARATION, "meta.pkl")
        return [os.path.join(data, f) for f in names if os.path.isfile(os.path.join(data, f))]
    return [p for p in (data, data + ".idx", data + ".bin", *data_files(data)) if p and os.path.isfile(p)]


# The bytes format's window sampler (python/ptrain/loader.py): test/Target/Cpp/e2e.py draws the same batches.
window_starts, batch = loader.window_starts, loader.window_batch


def read_labels(labels_dir, data, train, val):
    """--labels DIR: (train labels, val labels) as int64 arrays of the lengths of the train and val data."""
    if not os.path.isdir(data):
        raise RunError(f"--labels {labels_dir}: needs --data to be a folder (train.bin and val.bin), got {data}")
    out = []
    for name, d in (("train", train), ("val", val)):
        path = os.path.join(labels_dir, f"{name}.labels")
        if not os.path.isfile(path):
            raise RunError(f"--labels {labels_dir}: no {name}.labels (int64 little-endian, one per byte of "
                           f"{name}.bin)")
        labels = array.array("q")
        with open(path, "rb") as f:
            raw = f.read()
        if len(raw) != 8 * len(d):
            raise RunError(f"{path}: {len(raw)} bytes; {name}.bin has {len(d)} bytes, so it needs {8 * len(d)} "
                           "(one int64 label per byte)")
        labels.frombytes(raw)
        if sys.byteorder != "little":
            labels.byteswap()
        out.append(labels)
    return out


def run_samples(args, plan):
    """The training samples the run asks for: --steps x the global batch (Megatron's train_samples)."""
    return args.steps * plan.get("dp", 1) * plan["micro_batches"] * plan["batch"]
