"""The simulator cases a new user tries (issue 20, item 8), through the CLI as a subprocess.

Each expected answer is what `fr-analyze simulate` says it injected, never what the analyzer
prints; the report's tables and counts must agree with each other and with that verdict.
"""

import json
import re
import subprocess

import pytest


def simulate(cli, directory, *args):
    done = subprocess.run([cli, "simulate", str(directory), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected = re.search(r"expected verdict: (\w+), culprits \[([\d,]*)\]", done.stdout)
    assert expected, done.stdout
    culprits = [int(r) for r in expected.group(2).split(",") if r]
    return expected.group(1), culprits, done.stdout


def analyze_json(cli, directory):
    done = subprocess.run([cli, "analyze", str(directory), "--format", "json"],
                          capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_a_fault_on_the_world_group_strikes_at_a_barrier(cli, tmp_path):
    """The world group has only the barrier of every 10th step: the default fault step (12) has
    none, so the simulator failed ("rank 3 has no op #0 on its default_pg group")."""
    failure_class, culprits, out = simulate(
        cli, tmp_path / "d", "--tp", "2", "--pp", "2", "--dp", "2", "--fault", "stuck_before_op",
        "--fault-rank", "3", "--fault-group", "world")
    assert (failure_class, culprits) == ("missing_participant", [3])
    assert "default_pg all_reduce_barrier" in out
    verdict = analyze_json(cli, tmp_path / "d")["verdict"]
    assert verdict["failure_class"] == failure_class
    assert verdict["culprit_ranks"] == culprits


def test_a_missing_send_names_the_peer_op_left_waiting(cli, tmp_path):
    """The simulator printed "rank 4's p2p #-1": a skipped send shifts the FIFO pairing, so the
    peer's op left over is found among its unfinished ops, not in the channel's queue."""
    _, culprits, out = simulate(
        cli, tmp_path / "d", "--tp", "2", "--pp", "4", "--dp", "2", "--fault", "missing_send",
        "--fault-rank", "6", "--fault-group", "pp")
    assert culprits == [6]
    left = re.search(r"rank 4's p2p #(-?\d+)", out)
    assert left and int(left.group(1)) > 0, out

