"""Builds the hvd Python package from this source tree (docs/install.md):

    <venv>/bin/python -m pip install --no-build-isolation --no-index ./bindings/python
    /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --no-index -w dist ./bindings/python

Nothing is downloaded. build_ext configures the whole project with CMake
(libhvd, the SWIG extension, hvd.cdef) and builds the target hvd_python, as
`pip install horovod` does; the wheel then holds the Python modules, the
extension modules and a copy of libhvd, which they find through their RPATH
$ORIGIN. Environment:

    HVD_CMAKE_ARGS   extra arguments for CMake's configure step, e.g.
                     "-DHVD_WITH_CUDA=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
    HVD_BUILD_DIR    an hvd build tree configured already: build hvd_python
                     there instead of configuring a new one
    CMAKE_BUILD_PARALLEL_LEVEL   build jobs (default: all cores)
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEADER = os.path.join(ROOT, "capi", "include", "hvd", "hvd.h")


def version():
    """HVD_VERSION_MAJOR.MINOR.PATCH from hvd.h, the version's one source."""
    with open(HEADER) as f:
        text = f.read()
    return ".".join(re.search(r"#define HVD_VERSION_%s\s+(\d+)" % part, text).group(1)
                    for part in ("MAJOR", "MINOR", "PATCH"))


class CMakeBuild(build_ext):
    """Builds the package's binary files with CMake and copies into the build
    what the CMake-built package has beyond this folder's Python sources:
    every extension module, the generated hvd_c.py, libhvd and hvd.cdef."""

    def run(self):
        build_dir = os.environ.get("HVD_BUILD_DIR")
        if not build_dir:
            build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
            subprocess.check_call(
                ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DHVD_BUILD_TESTS=OFF", "-DHVD_BUILD_JAVA=OFF", "-DPython_EXECUTABLE=" + sys.executable]
                + shlex.split(os.environ.get("HVD_CMAKE_ARGS", "")))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "hvd_python", "-j", jobs])

        built = os.path.join(build_dir, "python", "hvd")
        target = os.path.join(HERE if self.inplace else self.build_lib, "hvd")
        for folder, dirs, files in os.walk(built):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            rel = os.path.relpath(folder, built)
            for name in files:
                if name.endswith(".stamp") or os.path.exists(os.path.join(HERE, "hvd", rel, name)):
                    continue
                os.makedirs(os.path.join(target, rel), exist_ok=True)
                shutil.copy2(os.path.join(folder, name), os.path.join(target, rel, name))


if not os.path.exists(HEADER):
    sys.exit("hvd: build the Python package from an hvd source tree (%s is missing)" % HEADER)

setup(
    version=version(),
    # A placeholder that makes the wheel platform-specific and runs
    # CMakeBuild; CMake builds the real extension modules.
    ext_modules=[Extension("hvd._hvd_c", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
