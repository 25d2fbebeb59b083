"""Every public function of the package, called with nonsense: it raises TypeError or ValueError
naming the argument (never pybind11's "incompatible function arguments", never an answer made up
from the nonsense), and a file name that is not UTF-8 is still a file name."""

import os
import shutil

import pytest

import fr_analyze


@pytest.fixture(scope="module")
def dump(example_job):
    return (example_job / "nccl_trace_rank_0").read_bytes()


@pytest.fixture(scope="module")
def trace(example_job):
    return fr_analyze.load(str(example_job))


@pytest.fixture(scope="module")
def report(trace):
    return trace.analyze()


LONE = "a\ud800b"  # a lone surrogate: no UTF-8 text holds it

# (call, exception, words the message must hold). `job` is the example job's directory.
CALLS = {
    "analyze_log(None)": (lambda job, **_: fr_analyze.analyze_log(None), TypeError, "text"),
    "analyze_log(int)": (lambda job, **_: fr_analyze.analyze_log(12), TypeError, "text"),
    "analyze_log(lone surrogate)": (lambda job, **_: fr_analyze.analyze_log(LONE), ValueError,
                                    "text"),
    "analyze(None)": (lambda job, **_: fr_analyze.analyze(None), TypeError, "path_or_paths"),
    "analyze(lone surrogate)": (lambda job, **_: fr_analyze.analyze(str(job) + LONE), ValueError,
                                "path_or_paths"),
    "load([])": (lambda job, **_: fr_analyze.load([]), ValueError, "path_or_paths"),
    "load([None])": (lambda job, **_: fr_analyze.load([None]), TypeError, "path_or_paths[0]"),
    "load(dict)": (lambda job, **_: fr_analyze.load({str(job): 1}), TypeError, "path_or_paths"),
    "load(prefix=int)": (lambda job, **_: fr_analyze.load(job, prefix=3), TypeError, "prefix"),
    "load(rank_pattern=lone)": (lambda job, **_: fr_analyze.load(job, rank_pattern=LONE),
                                ValueError, "rank_pattern"),
    "load(rank_pattern=int)": (lambda job, **_: fr_analyze.load(job, rank_pattern=1), TypeError,
                               "rank_pattern"),
    "load(jobs=-1)": (lambda job, **_: fr_analyze.load(job, jobs=-1), ValueError, "jobs"),
    "load(jobs=2000)": (lambda job, **_: fr_analyze.load(job, jobs=2000), ValueError, "0 to 1024"),
    "load(jobs=1.5)": (lambda job, **_: fr_analyze.load(job, jobs=1.5), TypeError, "jobs"),
    "load(progress=str)": (lambda job, **_: fr_analyze.load(job, progress="yes"), TypeError,
                           "progress"),
    "load(client=int)": (lambda job, **_: fr_analyze.load(job, client=3), TypeError, "client"),
    "analyze(jobs=True)": (lambda job, **_: fr_analyze.analyze(job, jobs=True), TypeError, "jobs"),
    "loads(None)": (lambda job, **_: fr_analyze.loads(None), TypeError, "dumps"),
    "loads(rank -1)": (lambda job, dump, **_: fr_analyze.loads({-1: dump}), ValueError,
                       "dumps: rank -1 is out of range: it needs a number from 0 to 2147483647"),
    "loads(rank 2**40)": (lambda job, dump, **_: fr_analyze.loads({2**40: dump}), ValueError,
                          "dumps: rank 1099511627776 is out of range"),
    "loads(rank str)": (lambda job, dump, **_: fr_analyze.loads({"0": dump}), TypeError, "dumps"),
    "loads(value str)": (lambda job, **_: fr_analyze.loads({0: "not bytes"}), TypeError,
                         "dumps[0]"),
    "loads(jobs=-2)": (lambda job, dump, **_: fr_analyze.loads({0: dump}, jobs=-2), ValueError,
                       "jobs"),
    "Trace.analyze(pg_filter=int)": (lambda job, trace, **_: trace.analyze(pg_filter=3),
                                     TypeError, "pg_filter"),
    "Trace.analyze(pg_filter=[lone])": (lambda job, trace, **_: trace.analyze(pg_filter=[LONE]),
                                        ValueError, "pg_filter[0]"),
    "Trace.analyze(dump_time_ns=-5)": (lambda job, trace, **_: trace.analyze(dump_time_ns=-5),
                                       ValueError, "dump_time_ns"),
    "Trace.analyze(dump_time_ns=str)": (lambda job, trace, **_: trace.analyze(dump_time_ns="1"),
                                        TypeError, "dump_time_ns"),
    "Trace.rank(str)": (lambda job, trace, **_: trace.rank("3"), TypeError, "rank"),
    "Trace.write_timeline(None)": (lambda job, trace, **_: trace.write_timeline(None), TypeError,
                                   "path"),
    "Trace.write_timeline(format=None)": (
        lambda job, trace, tmp_path, **_: trace.write_timeline(str(tmp_path / "t"), format=None),
        ValueError, "format"),
    "Report.to_html(fragment=str)": (lambda job, report, **_: report.to_html(fragment="no"),
                                     TypeError, "fragment"),
    "Report.write_html(None)": (lambda job, report, **_: report.write_html(None), TypeError,
                                "path"),
}


@pytest.mark.parametrize("name", CALLS)
def test_nonsense_raises_an_error_naming_the_argument(name, example_job, dump, trace, report,
                                                      tmp_path):
    call, error, words = CALLS[name]
    with pytest.raises(error) as raised:
        call(example_job, dump=dump, trace=trace, report=report, tmp_path=tmp_path)
    message = str(raised.value)
    assert words in message
    assert "incompatible function arguments" not in message


def test_ranks_in_range_are_loaded_as_given(dump):
    trace = fr_analyze.loads({0: dump, 2**31 - 1: dump})
    assert trace.rank_ids == [0]  # the other names a rank its own groups do not list
    assert fr_analyze.loads({0: bytearray(dump)}).rank_ids == [0]


def test_a_log_as_str_or_bytes_gives_the_same_report():
    line = ("[Thu May 29 12:25:58 2025] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the "
            "bus\n")
    from_text = fr_analyze.analyze_log(line)
    assert from_text.root_cause.kind == "xid"
    assert fr_analyze.analyze_log(line.encode()).to_json() == from_text.to_json()
    assert fr_analyze.analyze_log(line.encode("utf-16")).root_cause.kind == "xid"


def test_a_directory_whose_name_is_not_utf8_is_read(example_job, tmp_path):
    # Python spells such a name with surrogate escapes (os.fsdecode); they are file names, not
    # lone surrogates to refuse.
    directory = os.path.join(os.fsencode(tmp_path), b"job-\xff")
    shutil.copytree(os.fsencode(example_job), directory)
    for given in (os.fsdecode(directory), directory,
                  [os.path.join(os.fsdecode(directory), name)
                   for name in os.listdir(os.fsdecode(directory))]):
        assert fr_analyze.analyze(given).verdict.culprit_ranks == [5]
    trace = fr_analyze.load(os.fsdecode(directory))
    assert os.fsencode(trace.ranks[0].path) == os.path.join(directory, b"nccl_trace_rank_0")
    assert trace.analyze().inputs.source.endswith("job-\ufffd")  # the report is UTF-8


def test_any_iterable_of_paths_is_a_list_of_paths(example_job):
    # Path.glob() gives a generator: as good as a list.
    report = fr_analyze.analyze(example_job.glob("nccl_trace_rank_*"))
    assert report.verdict.culprit_ranks == [5]
    assert report.inputs.ranks_loaded == list(range(8))
