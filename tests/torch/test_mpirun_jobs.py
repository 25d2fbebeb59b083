"""Whole Open MPI jobs (mpirun --tag-output, Gloo on CPU, one injected fault), judged as the
torchrun jobs are: fr-analyze reads mpirun's console exactly as it printed it (every write tagged
`[1,R]<stderr>:`, faulthandler's fragments tagged mid-line, "mpirun noticed that process rank 2
... exited on signal 11", "Process name: [[J,1],R]" naming the first rank to exit, often a
victim) and the dumps the survivors managed to write, and must name the injected fault.

Golden copies under tests/data/mpirun/<Open MPI version>/<scenario>/ (torch 2.13.0; the
`<scenario>_torch_2.14.1` ones with torch 2.14.1, worded the same) are analysed offline; the
segfault and the hang are also captured live when mpirun is installed (scripts/install-deps.sh
installs it; FR_MPIRUN_ALL=1: every scenario).
"""

import os
import pathlib
import shutil
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mpirun_capture  # noqa: E402
from test_torchrun_jobs import analyze_golden, capture_live, check, check_launcher  # noqa: E402

GOLDEN = HERE.parent / "data" / "mpirun"
GOLDEN_CASES = sorted(p.parent for p in GOLDEN.glob("*/*/expected.json"))


def test_golden_cases_are_present():
    assert {case.name for case in GOLDEN_CASES} >= set(mpirun_capture.SCENARIOS), GOLDEN


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_golden_mpirun_job_is_diagnosed(cli, tmp_path, case):
    expected, status, report = analyze_golden(cli, tmp_path, case)
    check(status, report, expected)
    check_launcher(report, expected, "mpirun")


# Captured live in every run: the two whose evidence depends most on timing (what faulthandler and
# the survivors printed before mpirun stopped them); FR_MPIRUN_ALL=1 captures the exception too.
LIVE = mpirun_capture.SCENARIOS if os.environ.get("FR_MPIRUN_ALL") else ["segfault", "hang"]


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun (openmpi-bin) not installed")
@pytest.mark.parametrize("scenario", LIVE)
def test_live_mpirun_job_is_diagnosed(cli, tmp_path, scenario):
    expected, status, report = capture_live(
        cli, tmp_path, [sys.executable, HERE / "mpirun_capture.py", "--scenario", scenario])
    check(status, report, expected)
    check_launcher(report, expected, "mpirun")
