"""Shared fixtures: the fr-analyze binary built by scripts/test.sh and dumps written by it."""

import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("FR_ANALYZE_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set FR_ANALYZE_CLI to the built fr-analyze (scripts/test.sh does)")
    return path


@pytest.fixture(scope="session")
def example_job(cli, tmp_path_factory):
    """An 8-rank job whose rank 5 never reached the last all_reduce, as pickles on disk."""
    directory = tmp_path_factory.mktemp("job") / "dumps"
    subprocess.run([cli, "example", str(directory), "--world-size", "8", "--stuck-rank", "5"],
                   check=True, capture_output=True)
    return directory


@pytest.fixture(scope="session")
def simulated_job(cli, tmp_path_factory):
    """A TP2 x PP2 x DP2 job whose rank 5 hangs before a DP collective (`fr-analyze simulate`)."""
    directory = tmp_path_factory.mktemp("sim") / "dumps"
    subprocess.run([cli, "simulate", str(directory), "--fault", "stuck_before_op",
                    "--fault-rank", "5"], check=True, capture_output=True)
    return directory
