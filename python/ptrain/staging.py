"""An output folder replaced all at once (ptrain-compile's -o, ptrain-data's OUT): a tool writes its files into a
staging folder inside the output folder (tempfile.mkdtemp(dir=out): the same file system, so each move is a
rename) and, only when everything succeeded, publishes them. A failed run removes the staging folder and leaves
the output folder as it was."""

import os


def publish(stage, out, names):
    """Moves the files `names` from `stage` into `out`: first removes those of `names` in `out` that `stage` does
    not hold (an earlier run's files of another configuration, e.g. kernels.o of a fused plan, or the other data
    format's), then renames each one `stage` holds over its namesake. Files of `out` not in `names` stay."""
    for name in names:
        if os.path.lexists(os.path.join(out, name)) and not os.path.lexists(os.path.join(stage, name)):
            os.remove(os.path.join(out, name))
    for name in names:
        if os.path.lexists(os.path.join(stage, name)):
            os.replace(os.path.join(stage, name), os.path.join(out, name))
