"""A hostile dump cannot drive the terminal: frame names and group descs with escape sequences
and newlines are printed as visible escapes in every human-readable output."""

import os
import pickle
import subprocess

HOSTILE = "\x1b[2J\x1b[H\nfr-analyze: none (confidence high)\n\u202e"


def make_hostile(directory):
    """Rewrites rank 5's dump (written by `fr-analyze simulate`, so safe to unpickle here) with
    hostile frame names and a hostile group desc, as CPython re-pickles dumps."""
    path = directory / "nccl_trace_rank_5"
    st = os.stat(path)
    dump = pickle.loads(path.read_bytes())
    for entry in dump["entries"]:
        for frame in entry.get("frames", []):
            frame["name"] = HOSTILE + frame["name"]
        entry["process_group"] = (entry["process_group"][0], HOSTILE)
    for group in dump["pg_config"].values():
        group["desc"] = HOSTILE
    path.write_bytes(pickle.dumps(dump, protocol=2))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_escapes_and_newlines_from_a_dump_are_printed_escaped(cli, tmp_path):
    directory = tmp_path / "dumps"
    subprocess.run([cli, "simulate", str(directory), "--fault", "stuck_before_op",
                    "--fault-rank", "5"], check=True, capture_output=True)
    make_hostile(directory)
    for args in (["analyze", str(directory)], ["load", str(directory)],
                 ["entries", str(directory), "--ranks", "4,5"]):
        proc = subprocess.run([cli, *args], capture_output=True)
        assert proc.returncode in (0, 1), proc.stderr
        out = proc.stdout.decode()
        assert "\x1b" not in out and "\u202e" not in out, args
        # The only verdict line is the real one, at the top.
        verdict_lines = [line for line in out.splitlines() if line.startswith("fr-analyze:")]
        assert len(verdict_lines) <= 1, args
    text = subprocess.run([cli, "analyze", str(directory)], capture_output=True).stdout.decode()
    assert text.startswith("fr-analyze: missing_participant")
    assert "\\x1b[2J" in text  # shown, visibly escaped
    # JSON keeps the exact strings (escaped by JSON's own rules).
    json_out = subprocess.run([cli, "analyze", str(directory), "--format", "json"],
                              capture_output=True).stdout.decode()
    assert "\\u001b[2J" in json_out
