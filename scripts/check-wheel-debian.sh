#!/usr/bin/env bash
# Installs the wheel where nothing was built: a Debian 12 root made by debootstrap (minbase plus
# python3-venv; no compiler, none of the -dev packages), then simulates a job and analyses it with
# the installed `fr-analyze` and `import fr_analyze`. Run by hand (root, network to
# deb.debian.org), not in CI.
#
#   bash scripts/check-wheel-debian.sh "$(bash scripts/build-wheel.sh)" [ROOT]
#
# ROOT (default /tmp/fr-debian12) is made on first use and reused.
set -euo pipefail
wheel=$(realpath "$1")
root=${2:-/tmp/fr-debian12}
if [ ! -x "$root/usr/bin/python3" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
  debootstrap --variant=minbase --include=python3-venv bookworm "$root" \
    http://deb.debian.org/debian >/dev/null
fi
# A real machine has /proc: the dynamic loader finds the executable's $ORIGIN (the RPATH that
# auditwheel set) through /proc/self/exe.
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
trap 'umount "$root/proc"' EXIT
rm -rf "$root/opt/fr" "$root/tmp/job" "$root/tmp/wheel"
mkdir -p "$root/tmp/wheel"
cp "$wheel" "$root/tmp/wheel/"
# The wheel's one dependency (protobuf's runtime, for the report's typed message), fetched here:
# the root installs with --no-index.
python3 -m pip download -q --disable-pip-version-check --only-binary=:all: --no-deps \
  --python-version 3.11 --platform manylinux2014_x86_64 -d "$root/tmp/wheel" "protobuf>=4.21"
chroot "$root" /bin/bash -euo pipefail -c '
  echo "root: $(. /etc/os-release; echo "$PRETTY_NAME"), $(ldd --version | head -n 1), $(python3 --version)"
  if command -v cc gcc g++ ld >/dev/null; then echo "a compiler is installed"; exit 1; fi
  if dpkg-query -W -f "\${Package}\n" | grep -- "-dev\$"; then echo "-dev packages installed"; exit 1; fi
  echo "no compiler, no -dev packages ($(dpkg-query -W -f "\${Package}\n" | wc -l) packages)"
  python3 -m venv /opt/fr
  TIMEFORMAT="installed in %R s"
  time /opt/fr/bin/pip install -q --disable-pip-version-check --no-index --only-binary=:all: \
    --find-links /tmp/wheel /tmp/wheel/fr_analyze-*.whl
  cd /tmp
  /opt/fr/bin/fr-analyze --version
  /opt/fr/bin/fr-analyze simulate /tmp/job --tp 2 --pp 2 --dp 2 --fault stuck_before_op \
    --fault-rank 5 >/dev/null
  /opt/fr/bin/fr-analyze /tmp/job >/tmp/report.txt || [ $? -eq 1 ]
  head -n 2 /tmp/report.txt
  /opt/fr/bin/fr-analyze analyze /tmp/job --format json >/tmp/report.json || [ $? -eq 1 ]
  /opt/fr/bin/python -c "
import json, fr_analyze
report = fr_analyze.analyze(\"/tmp/job\")
print(\"import fr_analyze:\", fr_analyze.__version__, report.verdict.failure_class, report.verdict.culprit_ranks)
assert report.verdict.culprit_ranks == [5]
assert json.load(open(\"/tmp/report.json\"))[\"verdict\"][\"culprit_ranks\"] == [5]
"
'
echo "check-wheel-debian.sh: $(basename "$wheel") installs and runs in $root"
