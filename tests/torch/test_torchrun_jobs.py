"""Whole torchrun jobs, judged as a user would judge them: fr-analyze reads everything a real
`torchrun` job left (flight-recorder dumps, the launcher's console, the --log-dir tree, @record's
error.json files) and must name the fault that was injected: the rank that caused the failure,
not the ranks that reported it.

Every scenario of tests/torch/torchrun_capture.py is captured live with the installed torch, and
every golden copy under tests/data/torchrun/<torch>/<scenario>/ is analysed offline. The expected
answer is what the harness injected (expected.json), never what fr-analyze printed.

Run with the venv (scripts/venv.sh) and FR_ANALYZE_CLI set; scripts/test.sh does:
    FR_ANALYZE_CLI=build/dev/tools/fr-analyze build/venv/bin/python -m pytest tests/torch
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import torchrun_capture  # noqa: E402

GOLDEN = HERE.parent / "data" / "torchrun"
GOLDEN_CASES = sorted(p.parent for p in GOLDEN.glob("*/*/expected.json"))
# Files of a capture that a user's job directory would not hold.
HARNESS_FILES = {"expected.json", "file_times.json"}


def stage(source, target, times=None):
    """Copies a capture (or a golden case) to target without the harness's own files, keeping the
    files' modification times (from `times`, relative path -> ns, where given)."""
    shutil.copytree(source, target, copy_function=shutil.copy2,
                    ignore=lambda d, names: [n for n in names
                                             if n in HARNESS_FILES and pathlib.Path(d) == source])
    for rel, ns in (times or {}).items():
        os.utime(target / rel, ns=(ns, ns))
    return target


def analyze_golden(cli, tmp_path, case):
    """A golden case staged as its job left it (file times restored) and analysed:
    (expected answer, exit status, report)."""
    expected = json.loads((case / "expected.json").read_text())
    times = json.loads((case / "file_times.json").read_text())
    status, report = analyze(cli, stage(case, tmp_path / "job", times))
    return expected, status, report


def analyze(cli, job):
    """(exit status, report). A run that crashed after printing its report still gives the report,
    so that a failure says both what went wrong with the run and what the verdict was."""
    proc = subprocess.run([cli, "analyze", str(job), "--format", "json"], capture_output=True,
                          text=True, timeout=120)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"fr-analyze exited {proc.returncode} without a JSON report: "
                    f"{proc.stderr[-2000:]}")
    return proc.returncode, report


def capture_live(cli, tmp_path, command, timeout=300):
    """Runs a capture script (`command`: its argv, writing into tmp_path/capture), then analyses
    what it left as a user would: (expected.json of the injected fault, exit status, report)."""
    out = tmp_path / "capture"
    proc = subprocess.run([*command[:2], str(out), *command[2:]], capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    expected = json.loads((out / "expected.json").read_text())
    status, report = analyze(cli, stage(out, tmp_path / "job"))
    return expected, status, report


def describe(verdict):
    root = verdict.get("root_cause") or {}
    return (f"failure_class={verdict.get('failure_class')} "
            f"culprit_ranks={verdict.get('culprit_ranks', [])} "
            f"root_cause.kind={root.get('kind')} root_cause.ranks={root.get('ranks', [])}\n"
            f"summary: {verdict.get('summary')}")


def check(status, report, expected):
    """Every way the report differs from what was injected, in one message."""
    verdict = report["verdict"]
    wrong = []
    if verdict.get("failure_class") != expected["failure_class"]:
        wrong.append(f"failure_class {verdict.get('failure_class')!r}, "
                     f"expected {expected['failure_class']!r}")
    if verdict.get("culprit_ranks", []) != expected["culprit_ranks"]:
        wrong.append(f"culprit_ranks {verdict.get('culprit_ranks', [])}, "
                     f"expected {expected['culprit_ranks']}")
    root = verdict.get("root_cause")
    kinds = expected["root_cause_kinds"]
    if root is None:
        if "none" not in kinds:
            wrong.append(f"no root_cause, expected one of {kinds}")
    elif root.get("kind") not in kinds:
        wrong.append(f"root_cause.kind {root.get('kind')!r}, expected one of {kinds}")
    else:
        # A fault printed by a rank (exception, segfault, or the rank the timeouts wait for) must
        # name that rank; a root cause that may name none (unknown, host_kill) must name no other.
        ranks, want = root.get("ranks", []), expected["root_cause_ranks"]
        must_name = root.get("kind") in ("python_exception", "segfault", "collective_timeout")
        if ranks != want and (must_name or ranks):
            wrong.append(f"root_cause.ranks {ranks}, expected {want}")
    # A rank the harness made die (an exception, a segfault) is shown dying: no next action may
    # send the user looking for where it hangs or for an exception it swallowed.
    if expected["scenario"].split("_")[0] in ("exception", "segfault"):
        hanging = [a for a in verdict.get("next_actions", [])
                   if "stuck outside communication" in a or "swallowed" in a]
        if hanging:
            wrong.append(f"next actions for a rank that hangs, yet it died: {hanging}")
        # ...nor its summary.
        if "outside communication" in verdict.get("summary", ""):
            wrong.append("the summary says the rank is outside communication, yet it died")
    # The stack shown for a rank that raised is where the harness made it raise, in the job's
    # own code (this folder's scripts: the one its launcher ran, or what that one imports), from
    # its traceback, not the dump's last collective nor torch's or the launcher's code.
    if (expected["scenario"] in ("exception", "two_agents") and root is not None
            and root.get("kind") == "python_exception"):
        stack = root.get("stack", [])
        harness = {p.name for p in HERE.glob("*.py")}
        innermost = stack[0].rsplit(" (", 1)[-1] if stack else ""
        if (not stack or "site-packages" in innermost
                or os.path.basename(innermost.rsplit(":", 1)[0]) not in harness):
            wrong.append(f"root_cause.stack does not start in the job's own code: {stack[:3]}")
    # A loss gone NaN on every rank is the numbers', not the network's.
    if expected["scenario"] == "nan":
        network = [a for a in verdict.get("next_actions", []) if "network" in a or "NCCL" in a]
        if network:
            wrong.append(f"next actions send the user to the network for a NaN: {network}")
    # A rank that left the program's order waits in a collective of its own: it is neither
    # "stuck outside communication" nor one of two independent culprits, and every other rank
    # waits behind it.
    if expected["scenario"] == "uneven_data":
        outside = [a for a in verdict.get("next_actions", []) if "outside communication" in a]
        if outside:
            wrong.append(f"next actions say the rank is outside communication: {outside}")
        others = [r for r in range(expected["world_size"]) if r != expected["fault_rank"]]
        if verdict.get("victim_ranks", []) != others:
            wrong.append(f"victim_ranks {verdict.get('victim_ranks', [])}, expected {others}")
    # A rank that returned and exited 0 left nothing to read but its absence from the
    # launcher's failures: nothing may send the reader after a crash it never had.
    if expected["scenario"] == "early_exit":
        if "status 0" not in verdict.get("summary", ""):
            wrong.append(f"the summary does not say the rank exited 0: {verdict.get('summary')}")
        crash = [a for a in verdict.get("next_actions", [])
                 if "crash" in a or "segfault" in a or "OOM" in a]
        if crash:
            wrong.append(f"next actions look for a crash: {crash}")
    # A rank the launcher saw exit with status 3 and no traceback: the verdict says so, and no
    # next action asks for the dumps that were read or sends the reader after a hang.
    if expected["scenario"] == "exit_code":
        if "status 3" not in verdict.get("summary", ""):
            wrong.append(f"the summary does not give the exit status: {verdict.get('summary')}")
        stale = [a for a in verdict.get("next_actions", [])
                 if "collect every rank" in a or "outside communication" in a]
        if stale:
            wrong.append(f"next actions that do not fit a rank that exited: {stale}")
    # The peer that aborted on the mismatch only detected it: nothing sends the reader to a
    # traceback of the rank whose op differs, which raised none.
    if expected["scenario"] in ("size_mismatch", "dtype_mismatch"):
        traceback = [a for a in verdict.get("next_actions", []) if "traceback" in a]
        if traceback:
            wrong.append(f"next actions send the reader to a traceback: {traceback}")
    want = 0 if expected["failure_class"] == "none" else 1
    if status != want:
        wrong.append(f"exit status {status}, expected {want}"
                     + (" (killed by signal %d)" % -status if status < 0 else ""))
    if report["inputs"].get("ranks_loaded", []) != expected["ranks_dumped"]:
        wrong.append(f"inputs.ranks_loaded {report['inputs'].get('ranks_loaded', [])}, "
                     f"expected {expected['ranks_dumped']}")
    assert not wrong, (f"{expected['scenario']}: " + "; ".join(wrong) + "\n" + describe(verdict)
                       + f"\n(injected: {expected['notes']})")


# Faults after which the launcher itself sees the faulty rank's process end (it exits or dies of
# a signal on its own, before the launcher stops the others).
DEATHS = {"exception", "segfault", "sigkill", "segfault_and_error"}


def check_launcher(report, expected, launcher, sees_the_death=True):
    """The report names the launcher that ran the job (`launcher`, what the harness started), and
    its line on the death: the faulty rank's own exit where the launcher saw it (`sees_the_death`;
    for torchrun, where that rank's agent printed its failure table, see
    torchrun_capture.failure_tables), a note where the agent failed before it printed one, and
    never a victim's exit without saying so."""
    found = report.get("launcher", {})
    assert launcher in found.get("names", []), found
    line = found.get("death_line")
    if expected["failure_class"] == "none":
        assert line is None, found
        return
    tables = expected.get("launcher_failure_tables")
    if tables is not None:
        agent = expected["fault_rank"] // expected["nproc_per_node"]
        sees_the_death = tables[agent]
        if not sees_the_death:
            # The agent's own traceback is in its console: the note must point there.
            console = "console.log" if expected["nodes"] == 1 else f"node{agent}/console.log"
            assert console in found.get("note", ""), f"the agent's failure is not noted: {found}"
    if expected["scenario"] in DEATHS and sees_the_death:
        assert line is not None and line.get("rank") == expected["fault_rank"], found
    # A line that names no rank (DeepSpeed's return code) claims nobody; one naming a victim
    # must say so.
    # Where every rank raised on its own (nan), any rank's exit is a death of its own.
    own_deaths = expected["scenario"] == "nan"
    # A rank the injected fault leaves undecidable (expected among the culprits) is no victim.
    if (line is not None and line.get("rank", -1) >= 0 and line["rank"] != expected["fault_rank"]
            and line["rank"] not in expected["culprit_ranks"] and not own_deaths):
        assert found.get("note"), f"a victim's exit shown as the death without a note: {found}"


# Captured live in every run: the faults whose evidence depends most on timing (which rank the
# launcher saw die first, what the survivors printed before they were stopped): a raise, a death
# by signal (sigkill; segfault's is the same race, and a golden case), a hang. Every scenario,
# the slower two-agent, desync and healthy jobs included, is also a golden case below;
# FR_TORCHRUN_ALL=1 captures all of them live.
LIVE = (torchrun_capture.SCENARIOS if os.environ.get("FR_TORCHRUN_ALL")
        else ["exception", "sigkill", "hang"])


@pytest.mark.parametrize("scenario", LIVE)
def test_live_torchrun_job_is_diagnosed(cli, tmp_path, scenario):
    expected, status, report = capture_live(
        cli, tmp_path, [sys.executable, HERE / "torchrun_capture.py", "--scenario", scenario])
    check(status, report, expected)
    check_launcher(report, expected, "torchrun")


def test_golden_cases_are_present():
    # Guards against a checkout that lost the captured data: the golden tests would pass vacuously.
    scenarios = {case.name for case in GOLDEN_CASES}
    assert set(torchrun_capture.SCENARIOS) <= scenarios, f"golden cases under {GOLDEN}"


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_golden_torchrun_job_is_diagnosed(cli, tmp_path, case):
    expected, status, report = analyze_golden(cli, tmp_path, case)
    check(status, report, expected)
    check_launcher(report, expected, "torchrun")


@pytest.mark.parametrize("case", ["sigkill_highest_rank", "segfault_highest_rank_last_step",
                                  "exception_rank_0_first_step"])
def test_the_dumps_alone_place_a_rank_no_dump_names(cli, tmp_path, case):
    """Gloo's dumps list no group members: a group's members are the dumps that name it. Rank 3,
    the highest, killed before it dumped, is named by no dump; rank 0, which raised before its
    first DP all_reduce, names no DP group while its DP partner waits there alone. Without logs,
    the TP and DP groups short of a member still say who the waiting ranks wait for."""
    golden = GOLDEN / "2.13.0" / case
    expected = json.loads((golden / "expected.json").read_text())
    job = tmp_path / "job"
    shutil.copytree(golden / "dumps", job / "dumps")
    status, report = analyze(cli, job)
    assert report["verdict"]["culprit_ranks"] == [expected["fault_rank"]], describe(
        report["verdict"])
    dumped = expected["fault_rank"] in expected["ranks_dumped"]
    assert report["inputs"].get("ranks_missing", []) == ([] if dumped else [expected["fault_rank"]])


@pytest.mark.parametrize("current", ["healthy", "sigkill"])
def test_a_previous_runs_log_dir_tree_is_not_this_jobs_cause(cli, tmp_path, current):
    """A messy directory: the --log-dir tree of yesterday's run (rank 2 raised ValueError) beside
    today's job. Its traceback carries no time of its own; its files were last written a day
    before today's job began, so it is neither today's cause nor the reason of today's rank 2
    death (a SIGKILL, which nothing logged)."""
    golden = GOLDEN / "2.13.0"
    expected = json.loads((golden / current / "expected.json").read_text())
    job = stage(golden / current, tmp_path / "job",
                json.loads((golden / current / "file_times.json").read_text()))
    day = 86400 * 10**9
    for rel, ns in json.loads((golden / "exception" / "file_times.json").read_text()).items():
        if rel.startswith("logdir/"):
            (job / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(golden / "exception" / rel, job / rel)
            os.utime(job / rel, ns=(ns - day, ns - day))
    status, report = analyze(cli, job)
    check(status, report, expected)
    cause = report["verdict"].get("root_cause", {})
    assert "ValueError" not in json.dumps(cause), cause


def test_two_independent_faults_are_both_named_from_the_console_alone(cli):
    """The segfault_and_error job's console pasted on its own (no dumps, no --log-dir tree): rank
    2's segfault is the first death the launcher saw, and rank 1's OSError, printed without a
    time before the launcher stopped anyone, is a second fault of its own rather than a victim's
    report. Both ranks are named, as injected; the ranks that timed out or lost their peer are
    not."""
    case = GOLDEN / "2.13.0" / "segfault_and_error"
    expected = json.loads((case / "expected.json").read_text())
    proc = subprocess.run([cli, "analyze", "-", "--format", "json"],
                          input=(case / "console.log").read_text(), capture_output=True,
                          text=True, timeout=60)
    verdict = json.loads(proc.stdout)["verdict"]
    root = verdict["root_cause"]
    assert root["kind"] in expected["root_cause_kinds"], describe(verdict)
    assert root["ranks"] == expected["root_cause_ranks"], describe(verdict)
    assert verdict["culprit_ranks"] == expected["culprit_ranks"], describe(verdict)
    # The second fault's own line is shown, not only the launcher's word on the first.
    texts = [e["text"] for e in root["evidence"] if e.get("rank") == 1]
    assert any("No space left on device" in t for t in texts), root["evidence"]


def test_two_independent_faults_with_dumps_say_both_stopped_on_their_own(cli, tmp_path):
    """With the dumps too, the verdict's sentence does not call the rank that raised its own
    error (rank 1) one that is "stuck outside communication": the logs show it stopped."""
    case = GOLDEN / "2.13.0" / "segfault_and_error"
    expected, status, report = analyze_golden(cli, tmp_path, case)
    verdict = report["verdict"]
    assert verdict["culprit_ranks"] == expected["culprit_ranks"], describe(verdict)
    assert "outside communication" not in verdict["summary"], describe(verdict)
