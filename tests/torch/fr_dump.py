"""The flight-recorder dump that the launcher job scripts (torchrun_job.py, accelerate_job.py,
lightning_job.py, ray_job.py) write when a rank fails, written once:

    import fr_dump   # beside the script: the script's own folder is first on sys.path
    try:
        train(...)
    except BaseException:
        fr_dump.dump(args.dumps, rank)   # DUMPS/nccl_trace_rank_<rank>
        raise

Each launcher runs the script as a file (torchrun, `accelerate launch`, Lightning running it again
for its other ranks, mpirun, deepspeed), so Python puts the script's folder first on sys.path and
`import fr_dump` finds this file; Ray's workers, which run a function and not the script, put
that folder on sys.path themselves before importing it.
"""

import os
import sys

from torch._C import _distributed_c10d as c10d

DUMP_PREFIX = "nccl_trace_rank_"


def dump(folder, rank, why=None, announce=True):
    """Writes this process's flight recorder through PyTorch's own _dump_fr_trace (pickle, every
    entry, with stacks) to FOLDER/nccl_trace_rank_<rank>: to a temporary name first, then renamed,
    so that a reader never sees half a file. With `announce`, says so on stderr ("flight recorder
    dumped to PATH (WHY)"), as the job's console then shows. Returns the path."""
    data = c10d._dump_fr_trace(includeCollectives=True, includeStackTraces=True,
                               onlyActive=False)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{DUMP_PREFIX}{rank}")
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    if announce:
        suffix = f" ({why})" if why else ""
        print(f"flight recorder dumped to {path}{suffix}", file=sys.stderr, flush=True)
    return path
