"""fr_analyze.analyze and Report, against simulated jobs the CLI wrote: the Python objects must
say exactly what the command line says."""

import json
import os
import subprocess
import sys

import pytest

import fr_analyze


def cli_output(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True)


def test_report_matches_the_cli_in_every_format(cli, simulated_job):
    report = fr_analyze.analyze(simulated_job)
    as_json = cli_output(cli, "analyze", simulated_job, "--format", "json")
    assert as_json.returncode == 1
    assert (report.to_json() + "\n").encode() == as_json.stdout
    assert str(report).encode() == cli_output(cli, simulated_job).stdout
    assert report.to_proto_bytes() == cli_output(cli, "analyze", simulated_job, "--format",
                                                 "proto").stdout
    assert report.is_failure and report.exit_status == 1


def test_attribute_access_mirrors_the_schema(simulated_job):
    report = fr_analyze.load(simulated_job).analyze()
    verdict = report.verdict
    assert verdict.failure_class == "missing_participant"
    assert verdict.culprit_ranks == [5]
    assert verdict.process_group.desc == "DP" and 5 in verdict.process_group.ranks
    assert verdict.chains and verdict.chains[0].edges[-1].waits_for == 5
    assert report.schema_version == 1
    assert report.inputs.ranks_loaded == list(range(8))
    assert isinstance(report.inputs.dump_time_ns, int)
    assert report.to_dict()["verdict"]["culprit_ranks"] == [5]
    assert report.to_dict() == report.to_dict() and report.to_dict() is not report.to_dict()
    with pytest.raises(AttributeError, match="no field 'culprit'"):
        verdict.culprit
    with pytest.raises(AttributeError):
        verdict.failure_class = "none"


@pytest.mark.parametrize("fault,expected", [("op_mismatch", "op_mismatch"),
                                            ("crashed_rank", "missing_participant"),
                                            ("none", "none")])
def test_failure_classes_from_simulated_faults(cli, tmp_path, fault, expected):
    job = tmp_path / fault
    made = cli_output(cli, "simulate", job, "--fault", fault)
    assert made.returncode == 0, made.stderr
    report = fr_analyze.analyze(job)
    assert report.verdict.failure_class == expected
    assert report.exit_status == (0 if expected == "none" else 1)


def test_ranks_df_agrees_with_the_verdict(simulated_job):
    report = fr_analyze.analyze(simulated_job)
    ranks = report.ranks_df()
    assert list(ranks["rank"]) == list(range(8))
    assert str(ranks["rank"].dtype) == "int32" and str(ranks["role"].dtype) == "category"
    culprits = sorted(ranks.loc[ranks.role == "culprit", "rank"])
    assert culprits == report.verdict.culprit_ranks
    assert sorted(ranks.loc[ranks.role == "victim", "rank"]) == report.verdict.victim_ranks
    dp = ranks.set_index("rank")["state:DP"]
    assert dp[5].startswith("not issued")
    assert {"state:TP", "state:PP", "state:DP", "state:default_pg"} <= set(ranks.columns)


def test_rank_states_df_is_the_long_table_of_where_each_rank_stands(simulated_job):
    """The simulated job (TP2 x PP2 x DP2, rank 5 stuck before a DP collective): every rank is in
    one group of each kind, so 8 ranks x 4 kinds of group; rank 5 never issued the DP op its
    peer waits in, at the verdict's seq."""
    report = fr_analyze.analyze(simulated_job)
    states = report.rank_states_df()
    assert list(states.columns) == ["rank", "process_group", "pg_desc", "state", "op", "seq",
                                    "last_issued_op", "last_issued_seq"]
    assert str(states["seq"].dtype) == "Int64" and str(states["state"].dtype) == "category"
    assert len(states) == 8 * 4
    assert states.groupby("rank").size().tolist() == [4] * 8
    dp = states[(states.pg_desc == "DP") & (states.process_group == report.verdict.process_group.name)]
    by_rank = dp.set_index("rank")
    assert by_rank.loc[5, "state"] == "not issued"
    peer = [r for r in report.verdict.process_group.ranks if r != 5][0]
    assert by_rank.loc[peer, "seq"] == report.verdict.collective_seq_id
    assert by_rank.loc[peer, "state"] in ("started", "scheduled")


def test_findings_df_lists_the_culprit_with_its_stack(simulated_job):
    report = fr_analyze.analyze(simulated_job)
    findings = report.findings_df()
    assert len(findings) == len(report.findings)
    first = findings.iloc[0]
    assert first["kind"] == "missing_participant" and first["ranks"] == [5]
    assert first["collective_seq_id"] == report.verdict.collective_seq_id
    assert first["stack"] == "\n".join(report.findings[0].stack)


def test_collectives_df_shows_who_never_issued(simulated_job):
    report = fr_analyze.analyze(simulated_job)
    table = report.collectives_df()
    verdict = report.verdict
    row = table[(table.process_group == verdict.process_group.name)
                & (table.seq == verdict.collective_seq_id)]
    assert len(row) == 1
    row = row.iloc[0]
    assert row["not_issued"] == [5] and 5 not in row["issued"]
    assert row["op"] == verdict.op and bool(row["first_divergence"])
    assert set(row["issued"]) | set(row["not_issued"]) | set(row["dump_missing"]) == set(
        verdict.process_group.ranks)
    # Everywhere: completed within started within issued, counts match the lists.
    for r in table.itertuples():
        assert set(r.completed) <= set(r.started) <= set(r.issued)
        assert r.n_issued + r.n_not_issued + r.n_dump_missing == r.members


def test_entries_df_has_one_row_per_rank_and_entry(simulated_job):
    trace = fr_analyze.load(simulated_job)
    entries = trace.entries_df()
    assert len(entries) == sum(len(d.entries) for d in trace.ranks)
    assert entries["collective_seq_id"].dtype.name == "Int64"
    assert entries["op"].dtype.name == "category" and entries["state"].dtype.name == "category"
    rank3 = entries[entries["rank"] == 3].reset_index(drop=True)
    dicts = trace.rank(3).entry_dicts()
    assert list(rank3["op"]) == [d["op"] for d in dicts]
    assert rank3.loc[0, "frames"].split("\n")[0].startswith(dicts[0]["frames"][0][0])
    # Times are timestamps (UTC), the same instants the entries recorded.
    assert str(entries["time_created"].dtype) == "datetime64[ns, UTC]"
    assert [t.value for t in rank3["time_created"]] == [d["time_created_ns"] for d in dicts]
    assert list(rank3["input_sizes"].astype(str)) == [str(d["input_sizes"]) for d in dicts]


def test_html_puts_the_verdict_first_with_collapsible_stacks(simulated_job):
    trace = fr_analyze.load(simulated_job)
    html = trace.analyze()._repr_html_()
    assert html.index('id="failure-class">missing_participant<') < html.index('id="process-groups"')
    assert '<details class="stack"><summary>Stack of rank 5' in html
    assert "<script" not in html and "http" not in html
    assert "ranks loaded" in trace._repr_html_()


def test_glob_and_file_lists_load_only_those_files(simulated_job):
    files = sorted(str(p) for p in simulated_job.iterdir())
    trace = fr_analyze.load([f for f in files if f.endswith(("_1", "_5"))])
    assert trace.rank_ids == [1, 5]
    trace = fr_analyze.load(os.path.join(simulated_job, "nccl_trace_rank_[0-3]"))
    assert trace.rank_ids == [0, 1, 2, 3] and 7 in trace.missing_ranks


def test_bad_input_raises_typed_errors(tmp_path, simulated_job):
    with pytest.raises(fr_analyze.DumpNotFoundError, match="matched no file"):
        fr_analyze.load(tmp_path / "nothing-*")
    with pytest.raises(fr_analyze.DumpNotFoundError, match="does not exist"):
        fr_analyze.analyze(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(fr_analyze.NoDumpsError, match="no readable flight-recorder dump"):
        fr_analyze.analyze(empty)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "nccl_trace_rank_0").write_bytes(b"\x80\x02}q\x00")
    with pytest.raises(fr_analyze.NoDumpsError, match="nccl_trace_rank_0"):
        fr_analyze.analyze(bad)
    # A text file beside the unreadable dump does not make the job healthy.
    (bad / "notes.txt").write_text("nothing to see here\n")
    with pytest.raises(fr_analyze.NoDumpsError, match="nccl_trace_rank_0"):
        fr_analyze.analyze(bad)
    with pytest.raises(fr_analyze.Error):
        fr_analyze.load(simulated_job, rank_pattern="(unclosed")


def test_a_failing_progress_callback_stops_the_load(simulated_job):
    def progress(done, total):
        raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        fr_analyze.load(simulated_job, progress=progress, jobs=1)


def test_ctrl_c_interrupts_a_load(simulated_job):
    # SIGINT arrives while the C++ loader runs; the load must stop with KeyboardInterrupt.
    # Python keeps SIGINT ignored when it inherits it so (a background job of a non-interactive
    # shell, as CI may run the tests): install the handler an interactive session has.
    script = (
        "import os, signal, fr_analyze\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "def progress(done, total):\n"
        "    if done == 1: os.kill(os.getpid(), signal.SIGINT)\n"
        "try:\n"
        f"    fr_analyze.load({str(simulated_job)!r}, progress=progress, jobs=1)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.strip() == "interrupted", result.stderr


def test_progress_true_draws_a_tqdm_bar(simulated_job, capsys):
    pytest.importorskip("tqdm")
    fr_analyze.load(simulated_job, progress=True)
    assert "fr-analyze: loading" in capsys.readouterr().err


def test_fields_that_do_not_apply_read_as_none(tmp_path, cli):
    # A healthy job: the verdict names no group, and no finding has a majority stack.
    directory = tmp_path / "healthy"
    subprocess.run([cli, "simulate", str(directory), "--fault", "none"], check=True,
                   capture_output=True)
    report = fr_analyze.analyze(directory)
    assert report.verdict.failure_class == "none"
    assert report.verdict.process_group is None
    assert report.verdict.culprit_ranks == []
    # What may be absent comes from the schema, not from a list kept beside it: the typed
    # message says the same, and every finding's majority_rank (an optional field) reads None
    # exactly where the message has none.
    assert not report.message.verdict.HasField("process_group")
    for finding, typed in zip(report.findings, report.message.findings):
        assert (finding.majority_rank is None) == (not typed.HasField("majority_rank"))


def test_the_report_reaches_python_as_its_typed_message(simulated_job):
    """Python reads the protobuf message from its bytes (no JSON text in between): the same
    fields and values as `--format json`, 64-bit integers as ints, maps as dicts."""
    import json

    report = fr_analyze.analyze(simulated_job)
    message = report.message
    assert type(message).DESCRIPTOR.full_name == "fr.report.Report"
    assert message.SerializeToString() == report.to_proto_bytes()
    assert message.verdict.culprit_ranks == [5]
    assert report.to_dict() == json.loads(report.to_json())
    assert isinstance(report.inputs.dump_time_ns, int)
    assert isinstance(report.stats.counters, dict) and all(
        isinstance(v, int) for v in report.stats.counters.values())


def test_entries_are_a_view_that_keeps_its_dump_alive(simulated_job):
    trace = fr_analyze.load(simulated_job)
    dump = trace.ranks[0]
    entries = dump.entries
    assert len(entries) == len(dump.entry_dicts()) > 0
    assert entries[-1].record_id == dump.entry_dicts()[-1]["record_id"]
    with pytest.raises(IndexError):
        entries[len(entries)]
    entry, iterator = entries[3], iter(trace.ranks[1].entries)
    expected = dump.entry_dicts()[3]["record_id"]
    del entries, dump, trace
    import gc

    gc.collect()
    # The entry and the iterator still read their dumps: the view kept them alive.
    assert entry.record_id == expected
    assert next(iterator).record_id >= 0


def test_python_loads_lists_without_links_and_never_follows_links_out_of_a_directory(
        tmp_path, simulated_job):
    # A list of files is read as named, from where they are.
    files = [str(simulated_job / "nccl_trace_rank_1"), str(simulated_job / "nccl_trace_rank_5")]
    trace = fr_analyze.load(files)
    assert trace.rank_ids == [1, 5]
    assert all(d.path.startswith(str(simulated_job)) for d in trace.ranks)
    # A directory whose dump is a link to a file outside it: the link is not followed.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("root:x:0:0\n")
    job = tmp_path / "job"
    job.mkdir()
    os.symlink(simulated_job / "nccl_trace_rank_0", job / "nccl_trace_rank_0")
    os.symlink(outside / "secret", job / "nccl_trace_rank_1")
    trace = fr_analyze.load(job)
    assert 1 not in trace.rank_ids
    assert "root:x" not in str(trace)
