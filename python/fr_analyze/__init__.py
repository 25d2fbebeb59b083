"""fr_analyze: read PyTorch flight-recorder dumps and find the rank that broke a distributed job.

    import fr_analyze
    report = fr_analyze.analyze("/checkpoints/job42/fr")   # a directory, a glob or a file list
    print(report)                          # the text report `fr-analyze DIR` prints
    report.verdict.culprit_ranks           # [37]
    report.to_json()                       # `fr-analyze analyze DIR --format json`
    report.ranks_df()                      # pandas: role and state of every rank
    report.root_cause                      # from logs beside the dumps: kind, ranks, evidence
    report.events_df()                     # pandas: every log event on the corrected clock
    fr_analyze.analyze_log(pasted_text)    # one pasted log, nothing else
    fr_analyze.live("node0:29500")         # a job that still hangs, from PyTorch's debug server
    fr_analyze.Console(url).post(path)     # record a job into a console (`fr-analyze serve`)
    fr_analyze.record("/ckpt/job42/fr")    # in the training script: every rank leaves a dump

    trace = fr_analyze.load("/checkpoints/job42/fr")       # the dumps, before analysis
    trace.entries_df()                     # pandas: one row per rank x entry
    trace.analyze()                        # the same Report

The work happens in C++ (fr_analyze._core). pandas, tqdm and IPython are optional: the features
that need them say what to install.
"""

from fr_analyze.errors import (
    DumpFormatError,
    DumpNotFoundError,
    Error,
    LiveError,
    MissingDependencyError,
    NoDumpsError,
)
from fr_analyze._report import Message
from fr_analyze._trace import RejectedFile, Report, Trace, analyze, analyze_log, load, loads


def __getattr__(name):
    # fr_analyze.live is imported on first use: `python -m fr_analyze._live` (what `fr-analyze
    # live` runs) imports this package first, and a _live already imported by it would run twice
    # (runpy's RuntimeWarning on every live run).
    if name == "live":
        from fr_analyze._live import live

        return live
    if name == "record":
        # Imported on use like live; record() itself imports torch, never `import fr_analyze`.
        from fr_analyze._record import record

        return record
    if name in ("Console", "ConsoleError"):
        # The console's client needs nothing beyond the standard library; imported on use.
        from fr_analyze.console import _client

        return getattr(_client, name)
    raise AttributeError(f"module 'fr_analyze' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"live", "record", "Console", "ConsoleError"})


__all__ = [
    "Error", "DumpFormatError", "DumpNotFoundError", "NoDumpsError", "MissingDependencyError",
    "Trace", "Report", "Message", "RejectedFile", "load", "loads", "analyze",
    "analyze_log", "live", "LiveError", "record", "Console", "ConsoleError",
]
__version__ = "0.1.0"
