"""A rank that returned from its training loop and exited 0 (tests/data/torchrun/2.13.0/early_exit,
a real torchrun job, PyTorch 2.13.0 on Gloo: rank 2 leaves before step 3's DP all_reduce; its
peers fail on the closed connection; torchrun's failure table lists ranks 0, 1 and 3).

Nothing in any log is about rank 2: what says it exited by itself is its absence from a failure
table that lists the workers on both sides of it. A table cut short (a paste of its Root Cause
section only) no longer says so, and then the report must not claim it.
"""

import json
import pathlib
import shutil
import subprocess

CASE = pathlib.Path(__file__).resolve().parents[1] / "data" / "torchrun" / "2.13.0" / "early_exit"


def analyze(cli, folder):
    result = subprocess.run([cli, "analyze", str(folder), "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)["verdict"]


def test_a_rank_missing_from_a_whole_failure_table_exited_by_itself(cli):
    fault_rank = json.loads((CASE / "expected.json").read_text())["fault_rank"]
    verdict = analyze(cli, CASE)
    assert verdict["culprit_ranks"] == [fault_rank]
    assert "status 0" in verdict["summary"], verdict["summary"]
    assert not any("crash" in action for action in verdict["next_actions"]), \
        verdict["next_actions"]
    assert any("early" in action for action in verdict["next_actions"]), verdict["next_actions"]


def test_a_failure_table_cut_to_its_root_cause_claims_no_clean_exit(cli, tmp_path):
    fault_rank = json.loads((CASE / "expected.json").read_text())["fault_rank"]
    job = tmp_path / "early_exit"
    shutil.copytree(CASE / "dumps", job / "dumps")
    lines = (CASE / "console.log").read_text().splitlines(keepends=True)
    # The table's other failures, [1] and [2], cut: what a paste of the Root Cause alone keeps.
    start = next(i for i, line in enumerate(lines) if line.startswith("Failures:"))
    end = next(i for i, line in enumerate(lines) if line.startswith("Root Cause"))
    kept = lines[:start + 1] + lines[end - 1:]
    assert len(kept) < len(lines)
    (job / "console.log").write_text("".join(kept))
    verdict = analyze(cli, job)
    assert verdict["culprit_ranks"] == [fault_rank]
    assert "status 0" not in verdict["summary"], verdict["summary"]
