"""Work on the whole store, outside any request: `fr-analyze serve --reanalyze` (every stored
analysis again with this fr-analyze) and the retention limits (--keep-days, --max-bytes)."""

from __future__ import annotations

import asyncio
import sys
from typing import Optional


def maintain(settings, *, reanalyze: bool, keep_days: Optional[float],
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
        done = failed = skipped = 0
        for analysis_id in console.store.all_ids():
            try:
                analysis = await console.rerun(analysis_id)
            except UploadError:
                skipped += 1  # a posted report: nothing to analyse again
                continue
            if analysis is not None and analysis.status == "done":
                done += 1
            else:
                failed += 1
        console.workers.close()
        print(f"fr-analyze serve: re-analysed {done}, failed {failed}, without inputs "
              f"{skipped}", file=sys.stderr)

    asyncio.run(run_all())
