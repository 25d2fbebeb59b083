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

from typing import Any, Callable, List, Sequence, Tuple

from fr_analyze import _core

Task = Tuple[str, str, int, bool]  # (path, open_path, rank, hash_content)

# Files per Dask task: enough that the scheduler's per-task cost (a few hundred microseconds) is
# small beside reading them, few enough that a thousand-rank job still spreads over every worker.
FILES_PER_TASK = 16


def summarize_files(tasks: Sequence[Task]) -> List[bytes]:
    """Runs on a worker: one summary per file, in order."""
    return [_core.summarize_file(path, open_path, rank, hash_content)
            for path, open_path, rank, hash_content in tasks]


def load_on_cluster(client: Any, root: str, prefix: str, rank_pattern: str,
                    files: Sequence[str], files_per_task: int = FILES_PER_TASK,
                    summarize: Callable[[Sequence[Task]], List[bytes]] = summarize_files):
    """The _core.LoadedTrace of `root`, with the files read on `client`'s workers by
    `summarize` (summarize_files; a test wraps it to kill the worker it runs on)."""
    discovery = _core.discover(root, prefix, rank_pattern, list(files), False)
    tasks = discovery.tasks
    chunks = [tasks[i:i + files_per_task] for i in range(0, len(tasks), files_per_task)]
    # pure=False: a file may have changed since an earlier run with the same arguments, so a
    # cached result must not be reused.
    futures = client.map(summarize, chunks, pure=False)
    summaries: List[bytes] = []
    for chunk in client.gather(futures):
        summaries.extend(chunk)
    return _core.assemble(root, discovery, summaries)
