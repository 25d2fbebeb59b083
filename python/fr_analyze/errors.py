"""Exceptions raised by fr_analyze. Every error from the C++ core is one of these."""


class Error(Exception):
    """Base class of every fr_analyze error."""


class DumpFormatError(Error):
    """A file is not a readable flight-recorder dump; the message names the file and byte offset."""


class DumpNotFoundError(Error, FileNotFoundError):
    """The path given does not exist."""
