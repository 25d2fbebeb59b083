"""The diagnosis console: `fr-analyze serve`, a web page and JSON API where a team pastes logs or
drops jobs, reads who broke them, and keeps every diagnosis (SQLite or PostgreSQL) with a fleet
view of the hosts and GPUs that keep starting failures. docs/console.md is the guide.

Needs the `console` extra: pip install 'fr-analyze[console]'.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import List, Optional


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    text = text.strip().lower().rstrip("ib").rstrip("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def parser() -> argparse.ArgumentParser:
    from fr_analyze.console._uploads import Limits
    from fr_analyze.console._analysis import WorkerLimits

    limits, worker = Limits(), WorkerLimits()
    p = argparse.ArgumentParser(
        prog="fr-analyze serve",
        description="The diagnosis console: paste a log or drop a job's folder in a browser; "
                    "every analysis is kept (SQLite under --data, or PostgreSQL with --db).")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--data", default="fr-analyze-console",
                   help="folder for the SQLite database, stored inputs and outputs")
    p.add_argument("--db", help="database URL, e.g. postgresql://user@host/db "
                                "(default: SQLite file under --data)")
    p.add_argument("--token", help="every request must carry this token (Authorization: "
                                   "Bearer T, or open the page once with ?token=T)")
    p.add_argument("--reanalyze", action="store_true",
                   help="re-run every stored analysis with this fr-analyze, then exit")
    p.add_argument("--keep-days", type=float, help="delete analyses older than this")
    p.add_argument("--max-bytes", type=_size,
                   help="keep the stored inputs under this size (oldest analyses go first)")
    p.add_argument("--max-request-bytes", type=_size, default=limits.max_request_bytes)
    p.add_argument("--max-files", type=int, default=limits.max_files)
    p.add_argument("--max-unpacked-bytes", type=_size, default=limits.max_unpacked_bytes)
    p.add_argument("--max-ratio", type=float, default=limits.max_ratio,
                   help="largest unpacked/packed size of an archive (decompression bombs)")
    p.add_argument("--upload-idle-seconds", type=float, default=limits.idle_seconds,
                   help="answer 408 when an upload sends nothing for this long")
    p.add_argument("--analysis-seconds", type=float, default=worker.seconds,
                   help="stop an analysis that runs longer (it is marked failed)")
    p.add_argument("--analysis-memory", type=_size, default=worker.memory_bytes,
                   help="address-space limit of one analysis process")
    p.add_argument("--workers", type=int, default=worker.concurrent,
                   help="analyses run at the same time")
    p.add_argument("--log-level", default="warning")
    return p


def settings_from(args: argparse.Namespace):
    from fr_analyze.console._analysis import WorkerLimits
    from fr_analyze.console._app import Settings
    from fr_analyze.console._uploads import Limits

    return Settings(
        data=pathlib.Path(args.data).resolve(), db=args.db, token=args.token,
        keep_days=args.keep_days, max_bytes=args.max_bytes,
        limits=Limits(max_request_bytes=args.max_request_bytes, max_files=args.max_files,
                      max_unpacked_bytes=args.max_unpacked_bytes, max_ratio=args.max_ratio,
                      idle_seconds=args.upload_idle_seconds),
        worker=WorkerLimits(seconds=args.analysis_seconds, memory_bytes=args.analysis_memory,
                            concurrent=max(1, args.workers)))


def main(argv: Optional[List[str]] = None) -> int:
    try:
        import sqlalchemy  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as error:
        print(f"fr-analyze serve: {error.name} is missing: pip install 'fr-analyze[console]'",
              file=sys.stderr)
        return 2
    args = parser().parse_args(argv)
    settings = settings_from(args)
    if args.reanalyze or args.keep_days is not None or args.max_bytes is not None:
        # Retention first (then after every analysis while serving); --reanalyze then exits.
        from fr_analyze.console._maintenance import maintain

        status = maintain(settings, reanalyze=args.reanalyze, keep_days=args.keep_days,
                          max_bytes=args.max_bytes)
        if args.reanalyze or status != 0:
            return status
    from fr_analyze.console._app import build_app

    app = build_app(settings)
    print(f"fr-analyze console on http://{args.host}:{args.port}/ (data: {settings.data}, "
          f"database: {app.state.console.store.engine.dialect.name})", file=sys.stderr,
          flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                timeout_keep_alive=5, access_log=False)
    return 0
