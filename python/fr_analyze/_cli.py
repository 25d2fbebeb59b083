"""The `fr-analyze` console command and `python -m fr_analyze`: run the C++ fr-analyze binary
that ships inside the package (same arguments, output and exit status)."""

from __future__ import annotations

import os
import sys
from typing import List, Optional

from fr_analyze.errors import Error


def binary_path() -> str:
    """The fr-analyze executable: FR_ANALYZE_CLI when set, else the one in the package."""
    override = os.environ.get("FR_ANALYZE_CLI")
    if override:
        return override
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "bin", "fr-analyze"),
                      os.path.join(here, os.pardir, os.pardir, "tools", "fr-analyze")):
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    raise Error(f"the fr-analyze executable is missing from {here}/bin; reinstall the package")


def main(argv: Optional[List[str]] = None) -> int:
    """Replaces this process with fr-analyze; returns only when that fails."""
    args = sys.argv[1:] if argv is None else argv
    try:
        path = binary_path()
        # The binary's Python helpers (`live`, `--dask`) run in this interpreter, which has the
        # package, rather than whatever python3 is first on PATH (a venv used without activating).
        os.environ.setdefault("FR_ANALYZE_PYTHON", sys.executable)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(path, [path, *args])
    except (Error, OSError) as error:
        print(f"fr-analyze: {error}", file=sys.stderr)
        return 2
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
