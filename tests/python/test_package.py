"""fr_analyze from Python, against real files the CLI wrote."""

import pickle

import pytest

import fr_analyze


def test_load_returns_per_rank_dumps_with_resolved_entries(example_job):
    trace = fr_analyze.load(example_job)
    assert [d.rank for d in trace.ranks] == list(range(8))
    assert trace.missing_ranks == [] and trace.rejected == []
    dump = trace.rank(3)
    with open(example_job / "nccl_trace_rank_3", "rb") as f:
        raw = pickle.load(f)
    entries = dump.entry_dicts()
    assert len(entries) == len(raw["entries"])
    for got, want in zip(entries, raw["entries"]):
        assert got["collective_seq_id"] == want["collective_seq_id"]
        assert got["profiling_name"] == want["profiling_name"]
        assert got["input_sizes"] == want["input_sizes"]
        assert got["state"] == want["state"]
        assert [f[0] for f in got["frames"]] == [f["name"] for f in want["frames"]]
    assert "loaded 8 of 8 ranks" in str(trace)


def test_loads_reads_bytes_and_reports_bad_ones(example_job):
    good = (example_job / "nccl_trace_rank_0").read_bytes()
    trace = fr_analyze.loads({0: good, 1: b"\x80\x02}q\x00"})
    assert [d.rank for d in trace.ranks] == [0]
    assert [r.rank for r in trace.rejected] == [1]
    assert "byte" in trace.rejected[0].error


def test_missing_path_raises_a_typed_error(tmp_path):
    with pytest.raises(fr_analyze.DumpNotFoundError):
        fr_analyze.load(tmp_path / "nope")
    with pytest.raises(fr_analyze.Error):
        fr_analyze.load(tmp_path, rank_pattern="(unclosed")


def test_progress_callback_sees_every_file(example_job):
    seen = []
    fr_analyze.load(example_job, progress=lambda done, total: seen.append((done, total)))
    assert sorted(seen)[-1] == (8, 8) and len(seen) == 8
