"""Real PyTorch in the loop, live: captures jobs with the installed torch (tests/torch/capture.py)
and checks that fr-analyze names the injected fault. A PyTorch release that changes what the
flight recorder writes fails here rather than for a user.

Run with the torch venv (scripts/torch-venv.sh) and FR_ANALYZE_CLI set; scripts/test.sh does.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("FR_ANALYZE_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set FR_ANALYZE_CLI to the built fr-analyze (scripts/test.sh does)")
    return path


def capture(tmp_path, *args):
    out = tmp_path / "job"
    proc = subprocess.run([sys.executable, str(HERE / "capture.py"), str(out), *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, json.loads((out / "expected.json").read_text())


@pytest.mark.parametrize("args", [
    ["--scenario", "stuck_before_op", "--fault-rank", "6"],
    ["--scenario", "op_mismatch", "--fault-rank", "1", "--json"],
    ["--scenario", "healthy", "--no-stacks"],
    # A victim that begins waiting late: the culprit's other neighbours (blocked in send/recv,
    # which Gloo does not record) then stopped before anyone waited on the culprit, the order a
    # loaded machine produced by chance in CI and that named them culprits too.
    ["--scenario", "stuck_before_op", "--fault-rank", "6", "--late-rank", "7"],
    ["--scenario", "op_mismatch", "--fault-rank", "1", "--late-rank", "0", "--json"],
], ids=["stuck_before_op", "op_mismatch_json", "healthy_no_stacks",
        "stuck_before_op_late_victim", "op_mismatch_json_late_victim"])
def test_live_capture_is_diagnosed(cli, tmp_path, args):
    job, expected = capture(tmp_path, *args)
    proc = subprocess.run([cli, "analyze", str(job / "dumps"), "--format", "json"],
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    verdict = json.loads(proc.stdout)["verdict"]
    assert verdict["failure_class"] == expected["failure_class"], verdict.get("summary")
    assert verdict.get("culprit_ranks", []) == expected["culprit_ranks"], verdict.get("summary")
