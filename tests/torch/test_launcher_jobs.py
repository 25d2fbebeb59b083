"""Real jobs of launchers other than torchrun and mpirun (tests/torch/launcher_capture.py), judged
as the torchrun jobs are: fr-analyze reads the launcher's console exactly as it printed it and the
dumps the ranks wrote, and must name the injected fault (expected.json, from the harness).

  lightning   PyTorch Lightning Trainer(accelerator="cpu", devices=4, strategy="ddp"): Lightning
              starts ranks 1-3 itself (no torchrun) and all four print to one console; rank 2
              raises in training_step (tests/data/lightning/<version>/exception)
  accelerate  accelerate launch --multi_gpu --num_processes 4 with Accelerator(cpu=True), torchrun
              underneath; rank 2 raises; the agent SIGTERMs rank 0 before it dumps
              (tests/data/accelerate/<version>/exception)
  ray_retry   Ray Train with FailureConfig(max_failures=1): rank 2 fails attempt 1, rank 3 the
              retry; the first failure is the root cause and the attempts' dumps
              (dumps/attempt_<n>/) are never matched together (tests/data/ray/<version>/retry,
              run by test_ray_jobs.py with the other Ray goldens)
  deepspeed   DeepSpeed's launcher (`deepspeed --num_gpus 4`, its CPU accelerator) running the
              torchrun jobs' training step; rank 2 raises; the launcher kills the others and
              reports only a return code (tests/data/deepspeed/<version>/exception)

The golden copies run in every test run. Capturing them live needs lightning, accelerate and
ray[train], which are not in scripts/venv.sh: a separate venv,

    python3.11 -m venv build/launchers-venv
    build/launchers-venv/bin/pip install torch==2.13.0 lightning accelerate "ray[train]" deepspeed
    FR_LAUNCHERS_LIVE=1 FR_LAUNCHERS_PYTHON=build/launchers-venv/bin/python \\
        FR_ANALYZE_CLI=build/dev/tools/fr-analyze build/venv/bin/python -m pytest \\
        tests/torch/test_launcher_jobs.py

(on 2 busy cores: Lightning about 30 s, accelerate about 20 s, the Ray retry about 75 s).
`$FR_LAUNCHERS_PYTHON tests/torch/launcher_capture.py OUT --launcher NAME --golden` replaces a
golden copy.
"""

import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from test_torchrun_jobs import analyze_golden, capture_live, check, check_launcher  # noqa: E402

DATA = HERE.parent / "data"
# The launcher whose own words the console holds: accelerate's is torchrun's agent; Lightning
# prints none (its ranks' lines carry only torch's own "[rankN]:").
WORDS_OF = {"accelerate": "torchrun", "deepspeed": "deepspeed"}
GOLDEN_CASES = sorted(p.parent for name in ("lightning", "accelerate", "deepspeed")
                      for p in (DATA / name).glob("*/*/expected.json"))


def test_golden_cases_are_present():
    assert {case.parent.parent.name for case in GOLDEN_CASES} == {"lightning", "accelerate",
                                                                  "deepspeed"}
    assert list((DATA / "ray").glob("*/retry/expected.json")), "the Ray retry golden"


@pytest.mark.parametrize("case", GOLDEN_CASES,
                         ids=lambda c: f"{c.parent.parent.name}/{c.parent.name}/{c.name}")
def test_golden_launcher_job_is_diagnosed(cli, tmp_path, case):
    expected, status, report = analyze_golden(cli, tmp_path, case)
    check(status, report, expected)
    name = case.parent.parent.name
    if name in WORDS_OF:
        # DeepSpeed reports the first exit by its return code only, naming no rank.
        check_launcher(report, expected, WORDS_OF[name], sees_the_death=name != "deepspeed")


@pytest.mark.skipif(not os.environ.get("FR_LAUNCHERS_LIVE"),
                    reason="FR_LAUNCHERS_LIVE=1 (and FR_LAUNCHERS_PYTHON) runs the launchers")
@pytest.mark.parametrize("launcher", ["lightning", "accelerate", "ray_retry", "deepspeed"])
def test_live_launcher_job_is_diagnosed(cli, tmp_path, launcher):
    python = os.environ.get("FR_LAUNCHERS_PYTHON", sys.executable)
    expected, status, report = capture_live(
        cli, tmp_path, [python, HERE / "launcher_capture.py", "--launcher", launcher], timeout=600)
    check(status, report, expected)
    if launcher in WORDS_OF:
        check_launcher(report, expected, WORDS_OF[launcher],
                       sees_the_death=launcher != "deepspeed")
