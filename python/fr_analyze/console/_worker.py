"""One analysis, in its own process: `python -m fr_analyze.console._worker INPUT OUTPUT [--paste]`,
run in the upload's folder with INPUT relative to it, so that the report names the files as they
were uploaded (job/logs/node1.log), never the server's temporary folder.

The console starts one per analysis with limits on its time and memory (analysis.py), so a large
or crafted upload costs that process, never the server. It writes into OUTPUT what the analysis
pages serve: report.json (exactly `fr-analyze analyze --format json`), report.pb (`--format
proto`), report.html (`fr-analyze report`) and, when dumps were read, timeline.perfetto-trace (Perfetto);
or error.json ({"error": ...}) when there was nothing to analyse. Exit status 0 either way; any
other status means the process itself failed (killed, out of memory).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys


def run(source: pathlib.Path, output: pathlib.Path, paste: bool) -> None:
    import fr_analyze
    from fr_analyze.errors import Error

    output.mkdir(parents=True, exist_ok=True)
    try:
        if paste:
            report = fr_analyze.analyze_log(source.read_bytes())
            trace = None
        else:
            trace = fr_analyze.load(str(source), progress=False)
            report = trace.analyze()
    except Error as error:
        # SOURCE is relative to the upload's folder (the console runs this there), so the
        # message names the files as they were uploaded.
        (output / "error.json").write_text(json.dumps({"error": str(error)}))
        return
    _write(output / "report.json", report.to_json().encode())
    _write(output / "report.pb", report.to_proto_bytes())
    _write(output / "report.html", report.to_html().encode())
    if trace is not None and trace.rank_ids:
        trace.write_timeline(str(output / "timeline.perfetto-trace"))


def _write(path: pathlib.Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".part")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def main(argv: list) -> int:
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--paste"):
        print("usage: python -m fr_analyze.console._worker INPUT OUTPUT [--paste]",
              file=sys.stderr)
        return 2
    run(pathlib.Path(argv[0]), pathlib.Path(argv[1]), len(argv) == 3)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
