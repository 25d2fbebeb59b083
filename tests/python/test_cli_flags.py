"""The command line's flags, help, version and colour, through the built fr-analyze binary."""

import os
import pty
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ESC = "\x1b["


def run(cli, *args, **kwargs):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, **kwargs)


def run_on_terminal(cli, *args, env=None):
    """Runs fr-analyze with its stdout on a pseudo-terminal; returns (exit status, stdout)."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen([cli, *map(str, args)], stdout=follower,
                                   stderr=subprocess.PIPE, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
    finally:
        os.close(leader)
    # The terminal turns "\n" into "\r\n".
    return process.returncode, b"".join(chunks).decode().replace("\r\n", "\n")


def environment(**overrides):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(overrides)
    return env


@pytest.fixture(scope="module")
def healthy_job(cli, tmp_path_factory):
    directory = tmp_path_factory.mktemp("healthy") / "dumps"
    subprocess.run([cli, "example", str(directory), "--stuck-rank", "-1"], check=True,
                   capture_output=True)
    return directory


# Help and version.

@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"]])
def test_the_overview_lists_every_command_on_stdout(cli, args):
    result = run(cli, *args)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("usage:")
    for command in ("analyze", "load", "entries", "dump", "example", "simulate", "version"):
        assert re.search(rf"^  {command}\b", result.stdout, re.M), command


@pytest.mark.parametrize("command,flags", [
    ("analyze", ["--format", "--dump-time", "--jobs", "--just_print_entries", "--color",
                 "--print_stack_trace", "--allow-incomplete-ranks", "--pg-filters"]),
    ("load", ["--format", "--rank-pattern", "--follow-links"]),
    ("entries", ["--ranks", "--selected-ranks", "--last", "--pg-filter"]),
    ("dump", ["--format", "--output"]),
    ("example", ["--world-size", "--stuck-rank", "--dump-version"]),
    ("simulate", ["--tp", "--fault", "--fault-group", "--no-timing", "--json"]),
])
def test_each_command_has_its_own_help(cli, command, flags):
    for spelling in (["--help"], ["-h"]):
        result = run(cli, command, *spelling)
        assert result.returncode == 0 and result.stderr == ""
        assert result.stdout.startswith(f"usage: fr-analyze {command} ")
        for flag in flags:
            assert flag in result.stdout, (command, flag)
    assert run(cli, "help", command).stdout == run(cli, command, "--help").stdout


def test_analyze_help_is_also_what_a_bare_directory_gets(cli, healthy_job):
    assert run(cli, healthy_job, "--help").stdout == run(cli, "analyze", "--help").stdout
    # The fault kinds come from the simulator, so the help cannot miss one.
    assert "transport_stall" in run(cli, "simulate", "--help").stdout


def test_help_for_an_unknown_command_is_a_usage_error(cli):
    result = run(cli, "help", "bogus")
    assert result.returncode == 2
    assert "no command bogus" in result.stderr and "usage:" in result.stderr


def test_version_comes_from_the_python_package(cli):
    with open(os.path.join(ROOT, "python", "fr_analyze", "__init__.py")) as f:
        version = re.search(r'^__version__ = "([0-9.]+)"', f.read(), re.M).group(1)
    for spelling in ("--version", "version"):
        result = run(cli, spelling)
        assert result.returncode == 0
        assert result.stdout == f"fr-analyze {version}\n"


# Usage errors: exit 2, what is wrong, and the command's usage on stderr.

def test_entries_refuses_json_naming_the_format_it_has(cli, example_job):
    result = run(cli, "entries", example_job, "--format", "json")
    assert result.returncode == 2 and result.stdout == ""
    assert "unknown format json" in result.stderr and "takes text" in result.stderr
    assert "usage: fr-analyze entries" in result.stderr
    assert run(cli, "entries", example_job, "--format", "text").returncode == 0


@pytest.mark.parametrize("args,owner", [
    (["analyze", "DIR", "--last", "3"], "entries"),
    (["DIR", "--selected-ranks", "1"], "entries"),
    (["load", "DIR", "--dump-time", "5"], "analyze, timeline and report"),
    (["entries", "DIR", "--timings"], "analyze"),
    (["dump", "DIR", "--world-size", "2"], "live and example"),
])
def test_a_flag_of_another_command_is_a_usage_error(cli, example_job, args, owner):
    args = [example_job if a == "DIR" else a for a in args]
    command = args[0] if isinstance(args[0], str) and not args[0].startswith("-") else "analyze"
    result = run(cli, *args)
    assert result.returncode == 2 and result.stdout == ""
    flag = next(a for a in args if isinstance(a, str) and a.startswith("--"))
    assert f"{flag} is an option of {owner}, not of {command}" in result.stderr
    assert f"options of {command}: --format" in result.stderr
    assert f"usage: fr-analyze {command}" in result.stderr


def test_an_unknown_option_names_the_commands_options(cli, example_job):
    result = run(cli, "load", example_job, "--bogus")
    assert result.returncode == 2
    assert ("unknown option --bogus (options of load: --format, --output, --prefix, "
            "--rank-pattern, --jobs, --follow-links, --dask)") in result.stderr


@pytest.mark.parametrize("args,message", [
    (["--dump-time", "99999999999999999999999"],
     "--dump-time 99999999999999999999999 is out of range"),
    (["--dump-time", "-1"], "--dump-time -1 is out of range"),
    (["--jobs", "1025"], "--jobs 1025 is out of range: it needs a number from 0 to 1024"),
    (["--jobs", "+2"], "--jobs needs a number from 0 to 1024, not '+2'"),
    (["--jobs", " 2"], "--jobs needs a number from 0 to 1024, not ' 2'"),
    (["--jobs", "2x"], "--jobs needs a number"),
    (["--follow-links=yes"], "--follow-links takes no value"),
    (["--color", "sometimes"], "unknown colour choice sometimes"),
])
def test_bad_values_are_usage_errors_that_say_why(cli, example_job, args, message):
    result = run(cli, example_job, *args)
    assert result.returncode == 2 and result.stdout == ""
    assert message in result.stderr, result.stderr
    assert "usage: fr-analyze analyze" in result.stderr


def test_no_arguments_shows_the_overview_on_stderr(cli):
    result = run(cli)
    assert result.returncode == 2 and result.stdout == ""
    assert "no directory given" in result.stderr
    assert "usage: fr-analyze [COMMAND]" in result.stderr


def test_a_failed_output_names_the_path_and_the_reason(cli, example_job, tmp_path):
    target = tmp_path / "no-such-dir" / "report.txt"
    result = run(cli, example_job, "-o", target)
    assert result.returncode == 2
    assert f"cannot write the output to {target}: No such file or directory" in result.stderr


# The syntax every flag shares.

def test_values_may_be_attached_with_equals(cli, example_job):
    spaced = run(cli, "analyze", example_job, "--format", "json", "--jobs", "2")
    attached = run(cli, "analyze", example_job, "--format=json", "--jobs=2")
    assert spaced.returncode == attached.returncode == 1
    assert spaced.stdout == attached.stdout


def test_a_double_dash_ends_the_options(cli, example_job, tmp_path):
    job = tmp_path / "-job"
    os.symlink(example_job, job, target_is_directory=True)
    result = run(cli, "load", "--format", "json", "--", "-job", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_lists_are_comma_separated_or_torchfrtrace_style(cli, example_job):
    commas = run(cli, "entries", example_job, "--ranks", "1,5", "--pg-filters", "DP")
    words = run(cli, "entries", example_job, "--selected-ranks", "1", "5", "--pg-filter", "DP")
    assert commas.returncode == words.returncode == 0
    assert commas.stdout == words.stdout
    assert "rank 1" in commas.stdout and "rank 5" in commas.stdout
    assert "rank 3" not in commas.stdout


def test_the_last_rows_per_group(cli, example_job):
    result = run(cli, "entries", example_job, "--pg-filter", "DP", "--last", "2")
    rows = [line for line in result.stdout.splitlines() if line.startswith("#")]
    assert result.returncode == 0 and rows and len(rows) <= 2 * result.stdout.count("group ")
    assert run(cli, "entries", example_job, "--last", "0").returncode == 2


# torchfrtrace's flags.

def test_dash_j_alone_prints_entries_as_torchfrtrace_does(cli, example_job):
    entries = run(cli, "entries", example_job, "--selected-ranks", "1", "5")
    assert entries.returncode == 0
    for args in ([example_job, "-j"], ["-j", example_job], ["analyze", example_job, "-j"],
                 [example_job, "--just_print_entries"]):
        result = run(cli, *args, "--selected-ranks", "1", "5")
        assert result.returncode == 0, (args, result.stderr)
        assert result.stdout == entries.stdout, args
    # With -j the words are entries': --last belongs there, --dump-time does not.
    assert run(cli, example_job, "-j", "--last", "3").returncode == 0
    result = run(cli, example_job, "-j", "--dump-time", "5")
    assert result.returncode == 2 and "not of entries" in result.stderr


def test_dash_j_with_a_number_is_still_the_thread_count(cli, example_job):
    # Scripts written before -j meant just-print-entries pass "-j N"; a number after -j keeps
    # meaning threads (and an out-of-range one is still refused).
    threads = run(cli, example_job, "-j", "2", "--format", "json")
    assert threads.returncode == 1 and threads.stdout.startswith("{")
    assert threads.stdout == run(cli, example_job, "--jobs", "2", "--format", "json").stdout
    assert run(cli, example_job, "-j=2", "--format", "json").stdout == threads.stdout
    result = run(cli, example_job, "-j", "100000")
    assert result.returncode == 2 and "--jobs 100000 is out of range" in result.stderr


def test_torchfrtrace_flags_that_change_nothing_are_accepted(cli, example_job):
    plain = run(cli, example_job)
    for flag in ("--print_stack_trace", "--allow-incomplete-ranks"):
        result = run(cli, example_job, flag)
        assert result.returncode == plain.returncode == 1
        assert result.stdout == plain.stdout
    assert "stack of rank 5" in plain.stdout  # what --print_stack_trace asks for, always there


def test_a_pasted_log_on_stdin_still_works(cli):
    log = ("[rank3]:[E ProcessGroupNCCL.cpp:1234] [PG 0 Rank 3] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 "
           "milliseconds before timing out.\n")
    result = run(cli, "analyze", "-", "--format", "json", input=log)
    assert result.returncode in (0, 1), result.stderr
    assert result.stdout.startswith("{")


# Colour.

def test_no_colour_unless_on_a_terminal(cli, example_job, tmp_path):
    assert ESC not in run(cli, example_job).stdout  # a pipe
    out = tmp_path / "report.txt"
    status, shown = run_on_terminal(cli, example_job, "-o", out, env=environment())
    assert status == 1 and shown == ""
    assert ESC not in out.read_text()


def test_the_headline_is_red_for_a_failure_on_a_terminal(cli, example_job):
    status, shown = run_on_terminal(cli, example_job, env=environment())
    assert status == 1
    first, rest = shown.split("\n", 1)
    assert first.startswith("\x1b[1;31mfr-analyze: missing_participant")
    assert first.endswith("\x1b[0m")
    assert ESC not in rest
    # Without the colour, the bytes are exactly the report's.
    plain = run(cli, example_job).stdout
    assert shown.replace("\x1b[1;31m", "").replace("\x1b[0m", "") == plain


def test_the_headline_is_green_for_a_healthy_job(cli, healthy_job):
    status, shown = run_on_terminal(cli, healthy_job, env=environment())
    assert status == 0
    assert shown.startswith("\x1b[1;32mfr-analyze: ")


@pytest.mark.parametrize("value", ["1", "0", "false"])
def test_no_color_set_to_anything_turns_it_off(cli, example_job, value):
    _, shown = run_on_terminal(cli, example_job, env=environment(NO_COLOR=value))
    assert ESC not in shown


def test_an_empty_no_color_leaves_it_on(cli, example_job):
    _, shown = run_on_terminal(cli, example_job, env=environment(NO_COLOR=""))
    assert shown.startswith(ESC)


def test_the_color_flag(cli, example_job):
    _, shown = run_on_terminal(cli, example_job, "--color=never", env=environment())
    assert ESC not in shown
    # "always" is an explicit request: it wins over a pipe and NO_COLOR.
    forced = run(cli, example_job, "--color", "always", env=environment(NO_COLOR="1"))
    assert forced.stdout.startswith("\x1b[1;31mfr-analyze: ")
    # JSON and proto are data, never coloured.
    for fmt in ("json", "proto"):
        result = subprocess.run([cli, str(example_job), "--format", fmt, "--color=always"],
                                capture_output=True)
        assert result.returncode == 1 and b"\x1b" not in result.stdout
