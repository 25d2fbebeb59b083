#!/usr/bin/env python3
"""What a job launcher runs after a distributed job fails: find the rank that broke it.

    python examples/post_mortem.py DUMP_DIR [--json report.json] [--prefix nccl_trace_rank_]

Prints the text report (the same as `fr-analyze DUMP_DIR`), writes the JSON report when asked
(the same as `fr-analyze analyze DUMP_DIR --format json`), and exits like the CLI: 0 when no
failure was found, 1 when the report names a failure, 2 when nothing could be read.
"""

import argparse
import sys

import fr_analyze


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dumps", help="directory, glob or file of flight-recorder dumps")
    parser.add_argument("--json", help="write the JSON report to this file")
    parser.add_argument("--prefix", help="dump files are named PREFIX<rank>")
    args = parser.parse_args()
    try:
        report = fr_analyze.analyze(args.dumps, prefix=args.prefix, progress=False)
    except fr_analyze.Error as error:  # missing directory, no readable dump, bad pattern
        print(f"post_mortem: {error}", file=sys.stderr)
        return 2
    print(report)
    if args.json:
        with open(args.json, "w") as out:
            out.write(report.to_json() + "\n")
    if report.is_failure:
        verdict = report.verdict
        # One line for the launcher's log and alerting.
        print(f"post_mortem: {verdict.failure_class}: culprit ranks {verdict.culprit_ranks} in "
              f"group {verdict.process_group.name} ({verdict.process_group.desc}), "
              f"{verdict.op} #{verdict.collective_seq_id}", file=sys.stderr)
    return report.exit_status


if __name__ == "__main__":
    sys.exit(main())
