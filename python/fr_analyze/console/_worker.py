"""One analysis, in its own process:
`python -m fr_analyze.console._worker INPUT OUTPUT [--paste] [--outputs NAME,...]`, run in the
upload's folder with INPUT relative to it, so that the report names the files as they were
uploaded (job/logs/node1.log), never the server's temporary folder. The console starts it as
`python -m fr_analyze.console._worker --wait UPLOADS` ahead of need: it imports fr_analyze, then
reads its one job from stdin, a JSON line {"folder", "source", "output", "paste", "outputs"},
moves into the folder and runs as above. Before the job, while an upload is still being unpacked,
the console may send lines {"file": PATH}, one per file of the upload as soon as it is written
(absolute paths): the worker reads those files on its threads at once (_core.EarlyReads), and
the job's load takes what was read instead of reading it again, so that the decoding overlaps
the unpacking. With `--held-fd N` (a pipe's read end), a line {"held": true} makes it read the
archive members the console holds in memory from that pipe instead (frames: EarlyReads.read_held;
paths relative to the upload's folder), until the console closes it: those members are on no
disk until the console has answered. The report is the same either way.

The console starts one per analysis with limits on its time and memory (_analysis.py), so a
large or crafted upload costs that process, never the server. Without --outputs it writes what
an upload's answer needs: report.json (exactly `fr-analyze analyze --format json`) and report.pb
(`--format proto`). With --outputs it writes only the outputs named, which the console makes on
their first download from the stored inputs: report.html (`fr-analyze report`), report.pb, and
timeline.perfetto-trace (Perfetto; only when dumps were read). When there is nothing to analyse
it writes error.json ({"error": ...}) instead. Exit status 0 either way; any other status means
the process itself failed (killed, out of memory).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
from typing import Optional

ANSWER = ("report.json", "report.pb")
LATER = ("report.html", "report.pb", "timeline.perfetto-trace")


def run(source: pathlib.Path, output: pathlib.Path, paste: bool, outputs=ANSWER,
        early=None) -> None:
    import fr_analyze
    from fr_analyze import _trace
    from fr_analyze.errors import Error

    output.mkdir(parents=True, exist_ok=True)
    try:
        if paste:
            report = fr_analyze.analyze_log(source.read_bytes())
            trace = None
        else:
            if early is not None:
                trace = _trace.load_read_early(str(source), early)
            else:
                trace = fr_analyze.load(str(source), progress=False)
            report = trace.analyze()
    except Error as error:
        # SOURCE is relative to the upload's folder (the console runs this there), so the
        # message names the files as they were uploaded.
        (output / "error.json").write_text(json.dumps({"error": str(error)}))
        return
    if "report.json" in outputs:
        _write(output / "report.json", report.to_json().encode())
    if "report.pb" in outputs:
        _write(output / "report.pb", report.to_proto_bytes())
    if "report.html" in outputs:
        _write(output / "report.html", report.to_html().encode())
    if "timeline.perfetto-trace" in outputs and trace is not None and trace.rank_ids:
        # The timeline is the largest output by far (hundreds of MB for a 512-rank job):
        # written to its temporary name directly, never held twice.
        temporary = output / "timeline.perfetto-trace.part"
        trace.write_timeline(str(temporary))
        os.replace(temporary, output / "timeline.perfetto-trace")


def _write(path: pathlib.Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".part")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def wait_for_job(held_fd: Optional[int] = None) -> int:
    """Imports what an analysis needs, then waits for the job on stdin (the console hands it
    over when an upload is in). No job (stdin closed: the server stopped) is no error.
    `held_fd`: the pipe of held members, read once {"held": true} comes."""
    from fr_analyze import _core  # the import is what is done ahead of the job

    early = None
    while True:
        line = sys.stdin.readline()
        if not line.strip():
            return 0
        message = json.loads(line)
        if "file" not in message and "held" not in message:
            break
        if early is None:
            # One thread at the lowest priority: on a few cores the server's unpacking is
            # what the answer waits for, and reads that slow it gain nothing (measured on 2
            # cores: docs/benchmarks.md).
            early = _core.EarlyReads(jobs=1, background=True)
        if "file" in message:
            early.file_complete(os.fsencode(message["file"]))
        elif held_fd is not None:
            early.read_held(held_fd)  # it closes the descriptor at the pipe's end
            held_fd = None
    if held_fd is not None:
        os.close(held_fd)
    job = message
    os.chdir(job["folder"])
    outputs = tuple(job.get("outputs") or ()) or ANSWER
    output = pathlib.Path(job["output"])
    run(pathlib.Path(job["source"]), output, bool(job["paste"]), outputs, early)
    if early is not None and output.is_dir():
        # What the early reads saved (the console's benchmark and tests read it).
        (output / "early-reads.json").write_text(json.dumps(
            {"files_read": early.files_read, "files_used": early.files_used}))
    return 0


def main(argv: list) -> int:
    usage = "usage: python -m fr_analyze.console._worker INPUT OUTPUT [--paste] [--outputs N,...]"
    if len(argv) == 2 and argv[0] == "--wait":
        return wait_for_job()
    if len(argv) == 4 and argv[0] == "--wait" and argv[2] == "--held-fd":
        return wait_for_job(int(argv[3]))
    if len(argv) < 2:
        print(usage, file=sys.stderr)
        return 2
    source, output, rest = pathlib.Path(argv[0]), pathlib.Path(argv[1]), argv[2:]
    paste = "--paste" in rest
    rest = [a for a in rest if a != "--paste"]
    outputs = ANSWER
    if len(rest) == 2 and rest[0] == "--outputs":
        outputs = tuple(rest[1].split(","))
        if not outputs or any(name not in LATER for name in outputs):
            print(f"--outputs takes {', '.join(LATER)}", file=sys.stderr)
            return 2
    elif rest:
        print(usage, file=sys.stderr)
        return 2
    run(source, output, paste, outputs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
