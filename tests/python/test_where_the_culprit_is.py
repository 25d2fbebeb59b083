"""Where the culprit is, not where it last issued an op (issue 31, class 3: "the stack shown for
the culprit is its last completed op's, not where it is").

Two real captures of the same fault, PyTorch 2.13.0 on Gloo with 4 ranks (TP=2 x DP=2): in the
'hang' scenario rank 2 sleeps in user code (tests/torch/torchrun_job.py, inject) before a DP
all_reduce its peers wait in. tests/data/torchrun/2.13.0/hang holds every rank's flight-recorder
dump; tests/data/debug_server/2.13.0/hang holds the debug server's periodic stack snapshots of
the same scenario. What each capture set up (its expected.json) is the expected answer.
"""

import json
import pathlib
import shutil
import subprocess

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
DUMPS = DATA / "torchrun" / "2.13.0" / "hang"
STACKS = DATA / "debug_server" / "2.13.0" / "hang"


def analyze(cli, folder, *args):
    result = subprocess.run([cli, "analyze", str(folder), *args], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1, result.stderr
    return result.stdout


def lead_finding(report):
    verdict = report["verdict"]
    for finding in report["findings"]:
        if finding["kind"] == verdict["failure_class"]:
            return finding
    raise AssertionError(f"no finding of class {verdict['failure_class']}")


def test_the_culprits_live_stack_replaces_its_last_ops_stack(cli, tmp_path):
    dumps_expected = json.loads((DUMPS / "expected.json").read_text())
    stacks_expected = json.loads((STACKS / "expected.json").read_text())
    assert dumps_expected["fault_rank"] == stacks_expected["fault_rank"]
    culprit = dumps_expected["fault_rank"]
    held_in = stacks_expected["held_in_function"]

    # The dumps alone: the culprit's stack is its last op's, and says so.
    alone = json.loads(analyze(cli, DUMPS / "dumps", "--format", "json"))
    assert alone["verdict"]["culprit_ranks"] == [culprit]
    last_op = lead_finding(alone)
    assert last_op["stack_at"].startswith("its last op"), last_op["stack_at"]
    assert not any(frame.startswith(f"{held_in} (") for frame in last_op["stack"])

    # The same dumps with the stacks beside them: the stack is where rank 2 is now.
    job = tmp_path / "job"
    shutil.copytree(DUMPS / "dumps", job / "dumps")
    shutil.copytree(STACKS / "dump_dir", job / "debug_server")
    report = json.loads(analyze(cli, job, "--format", "json"))
    assert report["verdict"]["culprit_ranks"] == [culprit]
    now = lead_finding(report)
    assert now["ranks"][0] == culprit
    assert now["stack"][0].startswith(f"{held_in} ("), now["stack"]
    assert now["stack_at"].startswith("the newest live snapshot, ")
    newest = sorted(path.name for path in (STACKS / "dump_dir").glob("stacks_*.txt"))[-1]
    assert newest in now["stack_at"], now["stack_at"]
    # Its last op stays in the evidence.
    assert any(line.startswith(f"rank {culprit} last recorded") for line in now["evidence"])

    text = analyze(cli, job)
    heading = f"stack of rank {culprit} at the newest live snapshot"
    assert heading in text
    shown = text.split(heading, 1)[1].splitlines()
    assert shown[1].strip().startswith(f"{held_in} ("), shown[:3]
