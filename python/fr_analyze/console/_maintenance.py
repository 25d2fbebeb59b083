"""Work on the whole store, outside any request: `fr-analyze serve --reanalyze` (every stored
analysis again with this fr-analyze) and the retention limits (--keep-days, --max-bytes).

It may run beside a live server on the same --data: one maintenance run at a time
(locks/maintenance.lock), and each analysis is re-run under its own lock, which the server's
re-run button takes too; an analysis the server is re-running is left to it and counted busy."""

from __future__ import annotations

import asyncio
import sys
from typing import Optional

from fr_analyze.console import _locks


def maintain(settings, *, reanalyze: bool, keep_days: Optional[float],
             max_bytes: Optional[int]) -> int:
    """Runs the maintenance asked for; the exit status (1: another maintenance run holds the
    store)."""
    try:
        with _locks.hold(_locks.lock_path(settings.data, "maintenance"),
                         "fr-analyze serve --reanalyze/--keep-days/--max-bytes"):
            _maintain(settings, reanalyze=reanalyze, keep_days=keep_days, max_bytes=max_bytes)
    except _locks.Busy as busy:
        print(f"fr-analyze serve: another maintenance run works on {settings.data}: "
              f"{busy.holder} holds {busy.path}; run this one when it is done", file=sys.stderr)
        return 1
    return 0


def _maintain(settings, *, reanalyze: bool, keep_days: Optional[float],
              max_bytes: Optional[int]) -> None:
    from fr_analyze.console._app import ConsoleApp
    from fr_analyze.console._uploads import UploadError

    console = ConsoleApp(settings, sweep_uploads=False)
    if keep_days is not None or max_bytes is not None:
        removed = console.store.retain(keep_days, max_bytes)
        print(f"fr-analyze serve: retention removed {removed} analyses", file=sys.stderr)
    if not reanalyze:
        return

    async def run_all():
        done = failed = skipped = busy = 0
        for analysis_id in console.store.all_ids():
            try:
                analysis = await console.rerun(analysis_id)
            except UploadError:
                skipped += 1  # a posted report: nothing to analyse again
                continue
            except _locks.Busy as held:
                busy += 1  # the server is re-running it now, with the same fr-analyze
                print(f"fr-analyze serve: analysis {analysis_id} left to {held.holder}",
                      file=sys.stderr)
                continue
            if analysis is not None and analysis.status == "done":
                done += 1
            else:
                failed += 1
        console.workers.close()
        print(f"fr-analyze serve: re-analysed {done}, failed {failed}, without inputs "
              f"{skipped}, busy {busy}", file=sys.stderr)

    asyncio.run(run_all())
