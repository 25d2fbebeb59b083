#!/usr/bin/env python3
"""Turns one capture (tests/torch/capture.py OUT) into a golden case under tests/data/torch/:
dumps compressed with zstd (fr-analyze reads .zst as users copy them), the file times the dumps
had when PyTorch's job wrote them, and expected.json as the harness wrote it.

    tests/torch/make_fixture.py /tmp/cap/stuck tests/data/torch/2.13.0/stuck_before_op

Then review the case's report once by hand and write it with
    FR_UPDATE_GOLDEN=1 pytest tests/python/test_torch_fixtures.py -k stuck_before_op
"""

import json
import os
import shutil
import subprocess
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    capture, case = sys.argv[1], sys.argv[2]
    dumps = os.path.join(case, "dumps")
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(dumps)
    times = {}
    source = os.path.join(capture, "dumps")
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        target = os.path.join(dumps, name + ".zst")
        subprocess.run(["zstd", "-q", "-19", path, "-o", target], check=True)
        times[name + ".zst"] = os.stat(path).st_mtime_ns
    with open(os.path.join(case, "file_times.json"), "w") as f:
        json.dump(times, f, indent=1, sort_keys=True)
        f.write("\n")
    shutil.copy(os.path.join(capture, "expected.json"), os.path.join(case, "expected.json"))


if __name__ == "__main__":
    main()
