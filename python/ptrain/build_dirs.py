"""Where the installed tools find the C++ build and the source tree (docs/PythonPackage.md).

ptrain-compile runs the build's ptrain-translate and ptrain-opt, links libptrain_runtime.so and includes the
runtime headers of the source tree; ptrain-export loads libptrain_runtime.so. They find them, in this order:

1. --build-dir / --source-dir;
2. PTRAIN_BUILD_DIR / PTRAIN_SOURCE_DIR (<build>/bin's wrappers set both: tools/python-tool.in);
3. the build whose bin/ holds the ptrain-translate first on PATH (a folder with CMakeCache.txt);

and the source folder of a build from its CMakeCache.txt (ptrain_SOURCE_DIR, the folder CMake configured).
Nothing found is None; the caller's error names HOW."""

import os
import shutil

HOW = ("run <build>/bin/{tool} of a ptrain build, or point the installed tool at one: --build-dir BUILD (or "
       "PTRAIN_BUILD_DIR=BUILD), or BUILD/bin first on PATH")


def build_dir(given=None):
    """The build folder (holding bin/ and lib/Runtime/): `given`, PTRAIN_BUILD_DIR, or the build of the
    ptrain-translate on PATH; None when there is none."""
    found = given or os.environ.get("PTRAIN_BUILD_DIR")
    if found:
        return found
    tool = shutil.which("ptrain-translate")
    if tool:
        candidate = os.path.dirname(os.path.dirname(os.path.realpath(tool)))
        if os.path.isfile(os.path.join(candidate, "CMakeCache.txt")):
            return candidate
    return None


def source_dir(given=None, build=None):
    """The source folder (holding include/): `given`, PTRAIN_SOURCE_DIR, or ptrain_SOURCE_DIR of the build's
    CMakeCache.txt; None when there is none."""
    found = given or os.environ.get("PTRAIN_SOURCE_DIR")
    if found or not build:
        return found
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("=")
                if key.split(":")[0] == "ptrain_SOURCE_DIR":
                    return value
    except OSError:
        pass
    return None
