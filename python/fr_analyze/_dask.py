"""Reading a job's dumps on a Dask cluster: discovery here, each file read, decoded and
normalized by the C++ core on whichever worker runs its task (where the file system is), only the
per-file summaries (bytes) sent back, and the trace assembled here exactly as a local load
assembles it, so the report is the same.

    from distributed import Client
    report = fr_analyze.analyze("/checkpoints/job42/fr", client=Client("tcp://scheduler:8786"))

Every worker needs this package (the same version: summaries carry a schema number) and must see
the dump files at the same paths as this process. A worker that dies mid-run loses only its
tasks, which Dask runs again elsewhere; a file that cannot be read is that file's error in the
report, never a failed run.
"""

from __future__ import annotations

import os
from typing import Any, Callable, List, Sequence, Tuple

from fr_analyze import _core
from fr_analyze.errors import Error

Task = Tuple[str, str, int, bool]  # (path, open_path, rank, hash_content)

# Files per Dask task: enough that the scheduler's per-task cost (a few hundred microseconds) is
# small beside reading them, few enough that a thousand-rank job still spreads over every worker.
FILES_PER_TASK = 16


def summarize_files(tasks: Sequence[Task]) -> List[bytes]:
    """Runs on a worker: one summary per file, in order."""
    # Paths travel as Python spells file names (surrogate escapes for bytes that are not UTF-8).
    return [_core.summarize_file(os.fsencode(path), os.fsencode(open_path), rank, hash_content)
            for path, open_path, rank, hash_content in tasks]


def load_on_cluster(client: Any, root: str, prefix: str, rank_pattern: str,
                    files: Sequence[str], files_per_task: int = FILES_PER_TASK,
                    summarize: Callable[[Sequence[Task]], List[bytes]] = summarize_files):
    """The _core.LoadedTrace of `root`, with the files read on `client`'s workers by
    `summarize` (summarize_files; a test wraps it to kill the worker it runs on)."""
    discovery = _core.discover(root, prefix, rank_pattern, list(files), False)
    summaries = summarize_on_cluster(client, discovery.tasks, files_per_task, summarize)
    return _core.assemble(root, discovery, summaries)


def summarize_on_cluster(client: Any, tasks: Sequence[Task], files_per_task: int = FILES_PER_TASK,
                         summarize: Callable[[Sequence[Task]], List[bytes]] = summarize_files
                         ) -> List[bytes]:
    """One summary per task, in order, computed on `client`'s workers."""
    chunks = [tasks[i:i + files_per_task] for i in range(0, len(tasks), files_per_task)]
    # pure=False: a file may have changed since an earlier run with the same arguments, so a
    # cached result must not be reused.
    summaries: List[bytes] = []
    for chunk in client.gather(client.map(summarize, chunks, pure=False)):
        summaries.extend(chunk)
    return summaries


def write_bundle(path: str, summaries: Sequence[bytes]) -> None:
    """Summaries one after another, each after its length (8 bytes, little-endian): what
    `fr-analyze ... --dask ADDR` reads back (tools/dask_load.cc)."""
    with open(path, "wb") as f:
        for summary in summaries:
            f.write(len(summary).to_bytes(8, "little"))
            f.write(summary)


def main(argv: Sequence[str] = ()) -> int:
    """`python -m fr_analyze._dask --scheduler ADDR --output BUNDLE DIR`: the summaries of DIR's
    dumps, read on the cluster, written to BUNDLE. The fr-analyze command runs this for --dask."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m fr_analyze._dask")
    parser.add_argument("--scheduler", required=True, help="tcp://host:8786")
    parser.add_argument("--output", required=True)
    parser.add_argument("--prefix", default="")
    parser.add_argument("--rank-pattern", default="")
    parser.add_argument("--follow-links", action="store_true")
    parser.add_argument("root")
    args = parser.parse_args(list(argv) or None)
    try:
        from distributed import Client
    except ImportError:
        print("fr-analyze: --dask needs the distributed package (pip install distributed)",
              file=sys.stderr)
        return 2
    try:
        with Client(args.scheduler, timeout="10s") as client:
            discovery = _core.discover(args.root, args.prefix, args.rank_pattern, [],
                                       args.follow_links)
            summaries = summarize_on_cluster(client, discovery.tasks)
    except (OSError, TimeoutError) as error:
        print(f"fr-analyze: the Dask scheduler at {args.scheduler}: {error}", file=sys.stderr)
        return 2
    except Error as error:
        print(f"fr-analyze: {error}", file=sys.stderr)
        return 2
    write_bundle(args.output, summaries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
