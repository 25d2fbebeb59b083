"""`fr-analyze analyze DIR --post URL` runs this: python -m fr_analyze.console._post URL PATH.
Uploads PATH (a folder or file) to the console, which analyses and keeps it; prints where.
Exit status 0 when recorded, 2 otherwise (the reason on stderr). FR_ANALYZE_CONSOLE_TOKEN: the
console's token, when it has one."""

from __future__ import annotations

import os
import sys


def main(argv: list) -> int:
    if len(argv) != 2:
        print("usage: python -m fr_analyze.console._post URL PATH", file=sys.stderr)
        return 2
    from fr_analyze.console._client import Console
    from fr_analyze.errors import Error

    url, path = argv
    try:
        console = Console(url, token=os.environ.get("FR_ANALYZE_CONSOLE_TOKEN") or None)
        answer = console.post(path, name=os.path.basename(os.path.normpath(path)))
    except (Error, ValueError) as error:
        print(f"fr-analyze: --post: {error}", file=sys.stderr)
        return 2
    print(f"fr-analyze: recorded as {console.url}/analyses/{answer['id']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
