"""The CMake build step of `pip install .`: builds fr_analyze._core and the fr-analyze executable
with CMake and puts both inside the package. Everything else is in pyproject.toml.

    python3.11 -m venv .venv && .venv/bin/pip install .        # build isolation, PyPI
    .venv/bin/pip install --no-build-isolation .                # offline, Debian's packages

FR_ANALYZE_CMAKE_BUILD_DIR=build/dev reuses a build tree configured with FR_BUILD_PYTHON=ON (the
test suite does, to avoid a second full build); otherwise the build tree is build/pip (Release),
configured on first use.
CMAKE_BUILD_PARALLEL_LEVEL sets the number of compile jobs as usual.
"""

import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configures (unless reusing a build tree) and builds the targets _core and fr-analyze."""

    def build_extension(self, ext: Extension) -> None:
        build_dir = os.environ.get("FR_ANALYZE_CMAKE_BUILD_DIR")
        build_dir = os.path.abspath(os.path.join(ROOT, build_dir or os.path.join("build", "pip")))
        cmake = shutil.which("cmake")
        if cmake is None:
            raise RuntimeError("cmake is not on PATH (scripts/install-deps.sh installs it)")
        version = subprocess.run([cmake, "--version"], capture_output=True, text=True)
        print(f"fr-analyze: building with {cmake} ({version.stdout.splitlines()[0]})", flush=True)
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            self._run([cmake, "-S", ROOT, "-B", build_dir, *generator,
                       "-DCMAKE_BUILD_TYPE=Release", "-DFR_BUILD_PYTHON=ON",
                       f"-DPython3_EXECUTABLE={sys.executable}", *self._pybind11_hint()])
        self._run([cmake, "--build", build_dir, "--target", "_core", "fr-analyze"])

        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        module = os.path.join(build_dir, "python", "fr_analyze", "_core" + suffix)
        binary = os.path.join(build_dir, "tools", "fr-analyze")
        if not os.path.exists(module):
            raise RuntimeError(f"{module} was not built: is {build_dir} configured for another "
                               f"Python than {sys.executable}?")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(module, target)
        bin_dir = os.path.join(os.path.dirname(target), "bin")
        os.makedirs(bin_dir, exist_ok=True)
        shutil.copy2(binary, os.path.join(bin_dir, "fr-analyze"))

    @staticmethod
    def _pybind11_hint() -> list:
        """pybind11 from the build environment (PyPI, with build isolation); without it, CMake
        finds Debian's pybind11-dev."""
        try:
            import pybind11
        except ImportError:
            return []
        return [f"-Dpybind11_DIR={pybind11.get_cmake_dir()}"]

    def _run(self, command: list) -> None:
        print("+ " + " ".join(command), flush=True)
        subprocess.run(command, check=True)


setup(ext_modules=[CMakeExtension("fr_analyze._core")], cmdclass={"build_ext": CMakeBuild})
