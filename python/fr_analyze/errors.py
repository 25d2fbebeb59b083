"""Exceptions raised by fr_analyze. Every error from the C++ core is one of these.

    Error                     base class; catch this to catch everything fr_analyze raises
    +-- DumpFormatError       a file is not a readable dump (names the file and byte offset), or
                              a pasted log holds no log's text (empty, blank, binary)
    +-- DumpNotFoundError     the path does not exist (also a FileNotFoundError)
    +-- NoDumpsError          nothing readable to analyse (the CLI's exit status 2)
    +-- MissingDependencyError  an optional package (pandas, tqdm, matplotlib) is not installed
    +-- LiveError             live(): the job's store or debug server cannot be reached, or
                              an argument is of the wrong type or out of range
    +-- OutputIsInputError    a writer was given an input file (a dump, a log) as its output
"""


class Error(Exception):
    """Base class of every fr_analyze error."""


class DumpFormatError(Error):
    """A file is not a readable flight-recorder dump; the message names the file and byte offset."""


class DumpNotFoundError(Error, FileNotFoundError):
    """The path given does not exist, or a glob or list of paths matched no file."""


class NoDumpsError(Error):
    """No readable flight-recorder dump was found, so there is nothing to analyse."""


class MissingDependencyError(Error, ImportError):
    """A feature needs an optional package that is not installed; the message says which."""


class LiveError(Error):
    """live(): the job's store cannot be reached, no rank registered a debug server, or an
    argument is of the wrong type or out of range (world_size, timeout, byte limits, host_map).
    A rank that answers badly is never an error: the report names it."""


class OutputIsInputError(Error, FileExistsError):
    """write_html / write_timeline: the output path is one of the analysed inputs (or a link to
    one); nothing was written."""


def require(module: str, feature: str, debian_package: str):
    """Imports `module` for `feature`, or raises MissingDependencyError saying what to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingDependencyError(
            f"{feature} needs {module}, which is not installed: "
            f"apt-get install {debian_package} (or pip install {module})"
        ) from error
