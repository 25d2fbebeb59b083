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


@pytest.mark.parametrize("shape,fault,rank", [
    (("2", "4", "2"), "missing_send", 6),  # the last stage: unbatched sends after its recvs
    (("2", "4", "2"), "missing_send", 1),  # the first stage: batched send/recv pairs
    (("2", "4", "2"), "missing_recv", 15),
    (("1", "4", "1"), "missing_recv", 2),  # a middle stage, towards either neighbour
    (("2", "8", "1"), "missing_send", 8),
    (("8", "4", "2"), "missing_recv", 63),
])
def test_a_skipped_send_or_recv_names_the_rank_that_skipped_it(cli, tmp_path, shape, fault, rank):
    """A skipped p2p op shifts the FIFO pairing: the rank that skipped it and its neighbour end
    up waiting on each other. The verdict named both (or the neighbour and a third rank); the
    side whose own step-after-step schedule broke is the one that skipped."""
    tp, pp, dp = shape
    expected_class, culprits, out = simulate(
        cli, tmp_path / "d", "--tp", tp, "--pp", pp, "--dp", dp, "--fault", fault,
        "--fault-rank", str(rank), "--fault-group", "pp")
    assert culprits == [rank], out
    report = analyze_json(cli, tmp_path / "d")
    verdict = report["verdict"]
    assert verdict["failure_class"] == expected_class
    assert verdict["culprit_ranks"] == culprits
    assert verdict["confidence"] == "medium"
    assert rank not in verdict.get("victim_ranks", [])
    # Every chain of waits shown ends at the culprit.
    assert verdict["chains"]
    for chain in verdict["chains"]:
        assert chain["edges"][-1]["waits_for"] == rank, chain


def test_findings_on_dumps_with_timing_never_say_without_timing(cli, tmp_path):
    """A GPU stall in a pipeline recv (timing on, the simulator's default) leaves ops that every
    member issued and none started; the finding said "without timing" on dumps that have it."""
    simulate(cli, tmp_path / "d", "--tp", "8", "--pp", "4", "--dp", "2", "--fault", "gpu_stall",
             "--fault-rank", "30", "--fault-group", "pp")
    report = analyze_json(cli, tmp_path / "d")
    assert report["findings"]
    for finding in report["findings"]:
        assert "without timing" not in finding["summary"], finding["summary"]


def test_text_and_html_count_the_same_groups_with_problems(cli, tmp_path):
    """At 8 ranks the text said 3 groups with problems and the HTML 7: the HTML also counted
    every group whose members stood in more than one state (a pipeline always does)."""
    simulate(cli, tmp_path / "d", "--fault", "missing_send", "--fault-rank", "3",
             "--fault-group", "pp")
    text = subprocess.run([cli, "analyze", str(tmp_path / "d")], capture_output=True,
                          text=True).stdout
    done = subprocess.run([cli, "report", str(tmp_path / "d"), "-o", str(tmp_path / "r.html")],
                          capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    html = (tmp_path / "r.html").read_text()
    in_text = re.search(r"process groups: (\d+) with problems, (\d+) without", text)
    in_html = re.search(r"Process groups: (\d+) with problems, (\d+) without", html)
    assert in_text and in_html
    assert in_text.groups() == in_html.groups()
    # The culprit's pipeline group, where the send/recv waits for good, is one of them.
    assert int(in_text.group(1)) >= 1


def test_a_rank_that_did_not_issue_an_op_is_not_said_to_skip_the_one_it_issued(cli, tmp_path):
    """Rank 5 stops before DP collective #N: it issued #N-1. The HTML and rank_states_df said it
    "did not issue #N-1"."""
    _, _, out = simulate(cli, tmp_path / "d", "--fault", "stuck_before_op", "--fault-rank", "5")
    stuck_at = int(re.search(r"stuck before DP \w+ #(\d+)", out).group(1))
    done = subprocess.run([cli, "report", str(tmp_path / "d"), "-o", str(tmp_path / "r.html")],
                          capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    html = (tmp_path / "r.html").read_text()
    assert f"not issued _reduce_scatter_base #{stuck_at - 1}" not in html
    assert re.search(rf"\[5\] not issued \(last issued \w+ #{stuck_at - 1}\)", html)


def test_rank_states_df_keeps_the_last_issued_op_apart(cli, tmp_path):
    fr_analyze = pytest.importorskip("fr_analyze")
    pandas = pytest.importorskip("pandas")
    _, _, out = simulate(cli, tmp_path / "d", "--fault", "stuck_before_op", "--fault-rank", "5")
    stuck_at = int(re.search(r"stuck before DP \w+ #(\d+)", out).group(1))
    states = fr_analyze.analyze(str(tmp_path / "d")).rank_states_df()
    row = states[(states["rank"] == 5) & (states.pg_desc == "DP")].iloc[0]
    assert row["state"] == "not issued"
    assert pandas.isna(row["seq"]) and pandas.isna(row["op"])
    assert row["last_issued_seq"] == stuck_at - 1
    ranks = fr_analyze.analyze(str(tmp_path / "d")).ranks_df().set_index("rank")
    assert ranks.loc[5, "state:DP"] == f"not issued (last issued {row['last_issued_op']} " \
        f"#{stuck_at - 1})"


def test_a_gpu_stall_in_a_pipeline_recv_names_that_rank(cli, tmp_path):
    """Named p2p_unmatched [6, 14]: a group of only sends and recvs counted as having no timing
    (none of its collectives started), so a peer's op that its GPU never started was not seen."""
    failure_class, culprits, out = simulate(
        cli, tmp_path / "d", "--tp", "8", "--pp", "4", "--dp", "2", "--fault", "gpu_stall",
        "--fault-rank", "30", "--fault-group", "pp")
    # The stalled recv is named by its p2p seq (it was "PP recv #0", a collective seq).
    assert re.search(r"never starts PP recv p2p #[1-9]\d*", out), out
    verdict = analyze_json(cli, tmp_path / "d")["verdict"]
    assert (verdict["failure_class"], verdict["culprit_ranks"]) == (failure_class, culprits)


def test_a_head_that_rolled_out_of_the_ring_buffer_is_still_the_head(cli, tmp_path):
    """With 75-entry buffers ranks 3, 35 and 67 were named beside 99: their TP peers' oldest
    unfinished op had rolled out (pg_status: completed up to #832), so their heads were taken
    at a later op that a rank held behind its DP wait could not have issued yet."""
    failure_class, culprits, _ = simulate(
        cli, tmp_path / "d", "--tp", "8", "--pp", "4", "--dp", "4", "--buffer", "75", "--fault",
        "stuck_before_op", "--fault-rank", "99")
    verdict = analyze_json(cli, tmp_path / "d")["verdict"]
    assert (verdict["failure_class"], verdict["culprit_ranks"]) == (failure_class, culprits)


def test_an_op_that_rolled_out_of_every_buffer_is_still_named_as_a_collective(cli, tmp_path):
    """Every waiter kept enqueueing past the op it is stuck in, so no 75-entry buffer holds it:
    the text said "never issued  #833" and the chains "[ #833 in group 1 (TP) ...]"."""
    simulate(cli, tmp_path / "d", "--tp", "8", "--pp", "4", "--dp", "4", "--buffer", "75",
             "--fault", "stuck_before_op", "--fault-rank", "99")
    text = subprocess.run([cli, "analyze", str(tmp_path / "d")], capture_output=True,
                          text=True).stdout
    assert "never issued collective #" in text, text
    assert not re.search(r"[\[ ] #\d", text), text
