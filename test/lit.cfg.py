# lit configuration for llmc's FileCheck tests (dialect, importer, tools).
import os
import sys

import lit.formats

config.name = "llmc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".textproto", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.llmc_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit",
                   "fixtures", "Inputs"]
# The example apps' builds (test/e2e/example-app.test) need the environment
# a shell has (HOME for CMake's package registry, compilers on PATH).
for var in ("HOME", "CC", "CXX"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

# The objects llmc compile keeps (compiler/Artifact/HostBuild.h: each
# model's code and the model support object) go in a cache folder of the
# suite's own, not the user's llmc cache (the suite's hundreds of models
# would push the user's entries out), and not in the build tree: a fresh
# clone of the same llmc (CI's) then compiles only the models whose
# generated code changed. The key covers the compiler, the flags and the
# whole preprocessed text (for nvcc's objects, every file it reads), so an
# entry is never another build's.
# LLMC_TEST_CACHE_DIR names another folder, or "off" (every model compiled).
cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
config.environment["LLMC_CACHE_DIR"] = (os.environ.get("LLMC_TEST_CACHE_DIR")
                                        or os.path.join(cache_home, "llmc-tests"))

# Tools are found on PATH: llmc and llmc-opt from the build, FileCheck and
# not from LLVM 19.
config.environment["PATH"] = os.pathsep.join(
    [config.llmc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%shared", config.llmc_shared_dir))
config.substitutions.append(("%llmc_obj_root", config.llmc_obj_root))
config.substitutions.append(("%llmc_src_root", os.path.dirname(config.test_source_root)))
# Sanitizer flags of a sanitizer build (empty otherwise), for programs the
# tests compile against the runtime.
config.substitutions.append(("%sanflags", config.llmc_san_flags))
config.substitutions.append(("%python", sys.executable))
# Token id lists for tests of the cache capacity.
config.substitutions.append(("%{ids65}", ",".join(str(3 + i % 250) for i in range(65))))
config.substitutions.append(("%{ids60}", ",".join(str(3 + i % 250) for i in range(60))))

# Models from other exporters live beside the checkout (../shared/models).
if os.path.isdir(os.path.join(config.llmc_shared_dir, "models")):
    config.available_features.add("shared-models")

# The CUDA compiler, for the tests that build a --target cuda artifact's GPU
# library (CI has nvcc but no GPU; a fresh machine may have neither).
import shutil
if shutil.which("nvcc") or os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
    config.available_features.add("nvcc")
# A GPU the CUDA runtime can use (never in CI).
if shutil.which("nvidia-smi"):
    import subprocess
    if subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0:
        config.available_features.add("gpu")
