"""fr_analyze: read PyTorch flight-recorder dumps and find the rank that broke a distributed job.

    import fr_analyze
    trace = fr_analyze.load("/checkpoints/job42/fr")
    print(trace)                      # ranks loaded and missing, groups, rejected files
    for dump in trace.ranks:
        for entry in dump.entry_dicts():
            ...

The work happens in C++ (fr_analyze._core); this package adds Python conveniences.
"""

from fr_analyze.errors import DumpFormatError, DumpNotFoundError, Error
from fr_analyze._trace import Trace, load, loads

__all__ = ["Error", "DumpFormatError", "DumpNotFoundError", "Trace", "load", "loads"]
__version__ = "0.1.0"
