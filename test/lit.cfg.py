# -*- Python -*-
# lit configuration for ptrain's pass-level tests. Run on the build tree (build/test), never the source tree.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "PTRAIN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtext", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ptrain_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%ptrain_include", os.path.join(config.ptrain_src_root, "include")))
config.substitutions.append(("%ptrain_build", config.ptrain_obj_root))  # bench scripts' --build
config.substitutions.append(("%shared", os.path.join(config.ptrain_src_root, "..", "shared")))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
# Python run by the tests imports ptrain and ptrain_fixtures from the source tree (docs/PythonPackage.md).
config.environment["PYTHONPATH"] = os.path.join(config.ptrain_src_root, "python")
llvm_config.use_default_substitutions()
# FileCheck, not, count and split-file come from Debian's llvm-22-tools.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.ptrain_tools_dir, config.llvm_tools_dir]
tools = [
    "ptrain-opt",
    "ptrain-translate",
    "ptrain-interpret",
    "ptrain-compile",
    "ptrain-calibrate",
    "split-file",
    "not",
    ToolSubst("%PYTHON", config.python_executable, unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
