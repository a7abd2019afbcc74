#!/usr/bin/env python3
"""ptrain-translate links MLIR and LLVM statically (tools/ptrain-translate/CMakeLists.txt, issue 5): checks
that the binary needs neither libMLIR.so nor libLLVM.so (readelf -d), and that `--help` and the import of the
bundled GPT (models/gpt/gpt.onnx) peak below LIMIT_MB resident (ru_maxrss of each process, os.wait4). With
the shared libraries `--help` alone peaked at 91 MB (the loader relocates and touches both whole libraries);
statically linked it was 11 MB, the imports 20 MB (bench/README.md "import"). Since --emit-cpp-kernels lowers
generated kernels in-process (issue 26: LLVM's X86 backend and MLIR's LLVM translation linked in, an 89 MB
binary) `--help` peaks at 30 MB and the import at 39-40 MB (AMD EPYC host and the fresh-machine root,
2026-12-07), so the limit is 48 MB: still half of the shared libraries' start-up alone.

Usage: translate_static.py BUILD/bin/ptrain-translate SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile

LIMIT_MB = 48


def peak_mb(args):
    """(exit status, peak resident MB, stderr) of `args` run in a child process."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, err.read().decode(errors="replace")


def main():
    tool, source = sys.argv[1], sys.argv[2]
    failures = []
    dynamic = subprocess.run(["readelf", "-d", tool], capture_output=True, text=True, check=True).stdout
    needed = [line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line]
    print("NEEDED:", " ".join(needed))
    shared_mlir = [lib for lib in needed if lib.startswith(("libMLIR", "libLLVM"))]
    if shared_mlir:
        failures.append("%s links %s: it must link the static MLIR/LLVM component libraries only (one "
                        "process must not mix them with the shared ones, ENV.md)" % (tool, ", ".join(shared_mlir)))
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            "--help": [tool, "--help"],
            "--import-onnx models/gpt/gpt.onnx": [tool, "--import-onnx", os.path.join(source, "models/gpt/gpt.onnx"),
                                                  "-o", os.path.join(tmp, "gpt.mlir")],
        }
        for what, args in runs.items():
            rc, mb, err = peak_mb(args)
            print("%s: exit %d, peak RSS %.1f MB (limit %d MB)" % (what, rc, mb, LIMIT_MB))
            if rc != 0:
                failures.append("%s exited %d: %s" % (what, rc, err.strip()[-300:]))
            elif mb >= LIMIT_MB:
                failures.append("%s peaked at %.1f MB resident, not < %d MB" % (what, mb, LIMIT_MB))
    for failure in failures:
        print("error: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
