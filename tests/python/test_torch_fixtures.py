"""Golden tests on dumps written by real PyTorch (tests/data/torch/<torch>/<case>/, captured by
tests/torch/capture.py; see tests/data/torch/README.md).

Each case holds the dumps as PyTorch wrote them (zstd-compressed copies), the file times they had,
expected.json (what the harness injected; never derived from fr-analyze) and report.json (the
JSON report, reviewed by hand once, then diffed on every run like Perfetto's diff tests).

    FR_UPDATE_GOLDEN=1 pytest tests/python/test_torch_fixtures.py   # rewrite report.json files
"""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "torch"
CASES = sorted(p.parent for p in DATA.glob("*/*/expected.json"))


def case_id(case):
    return f"{case.parent.name}/{case.name}"


def stage(case, tmp_path, mtimes="recorded"):
    """Copies a case's dumps to tmp_path/dumps with the recorded file times, zeroed ones, or
    ("copied") those of a `cp -r` a year later: the copy's own clock, 40 s between files, the
    highest rank's file first."""
    dumps = tmp_path / "dumps"
    shutil.copytree(case / "dumps", dumps)
    recorded = json.loads((case / "file_times.json").read_text())
    latest = max(recorded.values())
    for i, name in enumerate(sorted(os.listdir(dumps), reverse=True)):
        ns = {"zero": 0, "recorded": recorded[name],
              "copied": latest + (365 * 86400 + 40 * i) * 10**9}[mtimes]
        os.utime(dumps / name, ns=(ns, ns))
    return dumps


def analyze(cli, cwd):
    proc = subprocess.run([cli, "analyze", "dumps", "--format", "json"], cwd=cwd,
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_fixtures_are_present():
    # Guards against a checkout that lost the captured data: the golden tests would pass vacuously.
    assert len(CASES) >= 5, f"expected captured cases under {DATA}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_verdict_is_the_injected_fault(cli, case, tmp_path):
    expected = json.loads((case / "expected.json").read_text())
    stage(case, tmp_path)
    status, report = analyze(cli, tmp_path)
    verdict = report["verdict"]
    assert verdict["failure_class"] == expected["failure_class"], verdict.get("summary")
    assert verdict.get("culprit_ranks", []) == expected["culprit_ranks"], verdict.get("summary")
    assert status == (0 if expected["failure_class"] == "none" else 1)
    assert report["inputs"]["ranks_loaded"] == expected["ranks_dumped"]
    # Every oddity real PyTorch dumps show is registered with a severity and a meaning.
    for counter in report["stats"]["counter_details"]:
        assert counter["severity"] in ("info", "data_loss", "error"), counter
        assert counter["description"], counter


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_lost_file_times_change_no_verdict(cli, case, tmp_path):
    # Copies through object stores and archives lose modification times (often to 0).
    expected = json.loads((case / "expected.json").read_text())
    stage(case, tmp_path, mtimes="zero")
    _, report = analyze(cli, tmp_path)
    assert report["verdict"]["failure_class"] == expected["failure_class"]
    assert report["verdict"].get("culprit_ranks", []) == expected["culprit_ranks"]
    assert report["inputs"]["dump_time_source"].startswith("unknown")
    assert report["inputs"]["dump_time_confidence"] == "low"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_later_copys_file_times_change_no_verdict(cli, case, tmp_path):
    # `cp -r` without -p, or an archive unpacked a year later, gives every file the copy's time,
    # one after another: times come from the dumps' content first, so the verdict is the one the
    # recorded times give.
    expected = json.loads((case / "expected.json").read_text())
    stage(case, tmp_path / "original")
    stage(case, tmp_path / "copy", mtimes="copied")
    _, original = analyze(cli, tmp_path / "original")
    _, copy = analyze(cli, tmp_path / "copy")
    assert copy["verdict"]["failure_class"] == expected["failure_class"]
    assert copy["verdict"].get("culprit_ranks", []) == expected["culprit_ranks"]
    # (Victims may differ: a rank whose op was younger than its timeout when it dumped counts as
    # one only once the dump time is known, and the copy's times do not tell it.)
    for key in ("failure_class", "culprit_ranks", "confidence"):
        assert copy["verdict"].get(key) == original["verdict"].get(key), key


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_report_matches_golden(cli, case, tmp_path):
    stage(case, tmp_path)
    _, report = analyze(cli, tmp_path)
    golden = case / "report.json"
    if os.environ.get("FR_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    assert golden.exists(), f"no golden report for {case_id(case)}: run with FR_UPDATE_GOLDEN=1"
    assert report == json.loads(golden.read_text())


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_ranks_last_op_is_where_its_own_dump_stops(cli, case, tmp_path):
    """ranks[].last_op: the oldest op the rank's dump shows unfinished (neither completed nor
    retired), else its newest; read here from the raw entries (`fr-analyze entries`-style
    columns of the package), not from the verdict."""
    import fr_analyze

    dumps = stage(case, tmp_path)
    _, report = analyze(cli, tmp_path)
    entries = fr_analyze.load(str(dumps)).entries_df()
    for rank in report["ranks"]:
        mine = entries[entries["rank"] == rank["rank"]].sort_values("record_id")
        if mine.empty:
            continue
        unfinished = mine[(mine["state"] != "completed") & (~mine["retired"].astype(bool))]
        row = (unfinished if len(unfinished) else mine).iloc[0 if len(unfinished) else -1]
        seq = row["p2p_seq_id"] if row["is_p2p"] else row["collective_seq_id"]
        assert rank["last_op"].startswith(f"{row['op']} #{seq} "), (rank, row["record_id"])


def rewrite_unretired(cli, dumps, rank):
    """Rewrites rank's dump as if written before Gloo retired the op it stopped in (its newest
    entry, ended by an error): that entry's `retired` becomes false. Returns the entry, or None
    when the rank's newest entry is not such an op. The file keeps its time."""
    packed = dumps / f"nccl_trace_rank_{rank}.zst"
    mtime = packed.stat().st_mtime_ns
    decoded = subprocess.run([cli, "dump", str(packed)], capture_output=True, text=True, check=True)
    doc = json.loads(decoded.stdout)
    if not doc["entries"]:
        return None
    newest = max(doc["entries"], key=lambda e: e["record_id"])
    if not newest["retired"] or newest["state"] == "completed":
        return None
    newest["retired"] = False
    packed.unlink()
    rewritten = dumps / f"nccl_trace_rank_{rank}"
    rewritten.write_text(json.dumps(doc))
    os.utime(rewritten, ns=(mtime, mtime))
    return newest, mtime


def test_late_victim_that_dumped_before_its_failed_op_retired(cli, tmp_path):
    # A loaded CI machine produced this order in a live capture: the late rank's op was younger
    # than its timeout when the culprit's exit ended it, and the rank dumped before Gloo retired
    # that op. The captured case is rewritten to that order (one flag of the late rank's newest
    # entry); the culprit is still the one injected, and the late rank is not a second culprit.
    case = DATA / "2.13.0" / "op_mismatch_json_late_victim"
    expected = json.loads((case / "expected.json").read_text())
    late = expected["late_rank"]
    dumps = stage(case, tmp_path)
    rewritten = rewrite_unretired(cli, dumps, late)
    assert rewritten is not None
    newest, mtime = rewritten
    # What makes the order hard: the op the late rank stopped in is younger than its timeout.
    assert mtime - newest["time_created_ns"] < newest["timeout_ms"] * 1_000_000
    _, report = analyze(cli, tmp_path)
    verdict = report["verdict"]
    assert verdict["failure_class"] == expected["failure_class"], verdict.get("summary")
    assert verdict.get("culprit_ranks", []) == expected["culprit_ranks"], verdict.get("summary")
    assert late in verdict.get("victim_ranks", []), verdict.get("summary")


FAILED_CASES = [case for case in CASES
                if json.loads((case / "expected.json").read_text())["failure_class"] != "none"]


@pytest.mark.parametrize("case", FAILED_CASES, ids=case_id)
def test_any_rank_dumping_before_its_failed_op_retired_changes_no_verdict(cli, case, tmp_path):
    # The same race for every rank of every captured failure, one rank at a time: a rank whose
    # dump came before Gloo retired the op it stopped in (an op a peer's exit ended at once can be
    # younger than its timeout) is still where it was, and the verdict stays the injected one.
    expected = json.loads((case / "expected.json").read_text())
    rewritten_ranks = []
    for rank in expected["ranks_dumped"]:
        work = tmp_path / f"rank{rank}"
        work.mkdir()
        dumps = stage(case, work)
        if rewrite_unretired(cli, dumps, rank) is None:
            continue
        rewritten_ranks.append(rank)
        _, report = analyze(cli, work)
        verdict = report["verdict"]
        assert verdict["failure_class"] == expected["failure_class"], (rank, verdict["summary"])
        assert verdict.get("culprit_ranks", []) == expected["culprit_ranks"], (
            rank, verdict["summary"])
    # Every captured failure leaves some rank stopped in a retired, failed op.
    assert rewritten_ranks, "no rank's newest op was retired without completing"


@pytest.mark.parametrize("lost", [1, 2])
@pytest.mark.parametrize("case", FAILED_CASES, ids=case_id)
def test_victims_dumps_lost_from_the_top_blame_no_missing_rank(cli, case, tmp_path, lost):
    # Only some ranks dumped: the highest-ranked victims' files are gone (a node whose local disk
    # was lost). The world size is no longer one past the highest dump; the groups' strides and
    # the barrier every rank passed still say who was there, and the injected culprit stays the
    # culprit instead of the ranks that merely left no file. With one victim gone, a peer that
    # waits on it makes it a second candidate, never the only one.
    expected = json.loads((case / "expected.json").read_text())
    dropped = [r for r in sorted(expected["ranks_dumped"], reverse=True)
               if r not in expected["culprit_ranks"]][:lost]
    dumps = stage(case, tmp_path)
    for name in os.listdir(dumps):
        if int(name.split("_")[-1].split(".")[0]) in dropped:
            (dumps / name).unlink()
    _, report = analyze(cli, tmp_path)
    verdict = report["verdict"]
    assert verdict["failure_class"] == expected["failure_class"], (dropped, verdict["summary"])
    culprits = verdict.get("culprit_ranks", [])
    assert set(expected["culprit_ranks"]) <= set(culprits), (dropped, verdict["summary"])
    if lost == 2:
        assert culprits == expected["culprit_ranks"], (dropped, verdict["summary"])
    assert set(report["inputs"]["ranks_missing"]) >= set(dropped)


@pytest.mark.parametrize("case", FAILED_CASES, ids=case_id)
def test_a_culprit_whose_dump_is_cut_short_is_still_named(cli, case, tmp_path):
    """The injected culprit's dump cut in half (a copy interrupted, a disk full while it was
    written): where every other dump still shows who they wait for, the culprit is named, at
    medium confidence, never "insufficient evidence". Where they do not (the late-victim
    captures: the culprit's neighbours stopped before anyone waited on it), the ranks blamed
    instead are said to be uncertain (low) beside the culprit's unreadable dump, never sure."""
    expected = json.loads((case / "expected.json").read_text())
    dumps = stage(case, tmp_path)
    culprit = expected["culprit_ranks"][0]
    if culprit not in expected["ranks_dumped"]:
        pytest.skip("the culprit left no dump in this capture")
    (path,) = [p for p in dumps.iterdir() if p.name.startswith(f"nccl_trace_rank_{culprit}.")]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    _, report = analyze(cli, tmp_path)
    verdict = report["verdict"]
    assert [f["rank"] for f in report["inputs"]["files_rejected"]] == [culprit]
    if expected.get("late_rank") is None:
        assert verdict["culprit_ranks"] == [culprit], verdict["summary"]
        assert verdict["failure_class"] == "missing_participant"
        assert verdict["confidence"] == "medium"
    else:
        assert verdict["confidence"] == "low", verdict["summary"]
        assert f"Rank(s) {culprit} left no readable dump" in verdict["summary"]
