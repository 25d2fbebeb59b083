#!/usr/bin/env bash
# Installs every Debian package that building, testing and benchmarking fr-analyze needs
# (headless Chromium renders the HTML report and drives the console in the tests; Open MPI's
# mpirun launches real jobs; the console's tests start their own PostgreSQL server).
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  g++ clang-14 libclang-rt-14-dev clang-format
  libabsl-dev libfmt-dev libzstd-dev zlib1g-dev libsimdjson-dev libre2-dev
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-dev python3-venv python3-pip pybind11-dev
  python3-pytest python3-numpy python3-pandas
  python3-nbclient python3-nbformat python3-ipykernel
  python3-setuptools python3-wheel python3-matplotlib python3-tqdm
  zstd gzip
  openmpi-bin
  chromium-headless-shell fonts-dejavu-core
  postgresql
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
