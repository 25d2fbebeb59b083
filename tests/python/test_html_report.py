"""The HTML report (`fr-analyze report DIR -o report.html`) rendered by a real browser: Debian's
headless Chromium loads each page offline (every host name resolves to nothing), with its console
logged, then prints the DOM it built and takes a screenshot. A page passes when the browser saw no
console message and the parts a reader looks for are in the DOM it parsed. Screenshots are kept
under build/test-artifacts/html/ (or $FR_TEST_ARTIFACTS) to look at.

The jobs are a simulated hang, a real PyTorch capture and dumps with the job's logs beside them;
expected culprits come from what each job was set up with.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "logsim"))
import logsim  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCH_DATA = ROOT / "tests" / "data" / "torch"
ARTIFACTS = pathlib.Path(os.environ.get("FR_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))


@pytest.fixture(scope="session")
def browser():
    for name in ("chromium-headless-shell", "chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no headless Chromium: scripts/install-deps.sh installs chromium-headless-shell")


def render(browser, page, screenshot=None, tmp_path=None):
    """Loads `page` in Chromium offline; returns (the DOM it built, its console messages)."""
    base = [browser, "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"]
    if tmp_path is not None:
        base.append(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    proc = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        shot = subprocess.run(base + ["--window-size=1280,2000", f"--screenshot={screenshot}",
                                      page.as_uri()], capture_output=True, text=True, timeout=120)
        assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-2000:]
        assert screenshot.stat().st_size > 20000, "a blank screenshot is a few KB"
    return proc.stdout, console


def write_report(cli, directory, out):
    proc = subprocess.run([cli, "report", str(directory), "-o", str(out)], capture_output=True,
                          text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return out.read_text()


def text_of(dom, element_id):
    """The text inside the element with this id, tags removed."""
    match = re.search(r'id="%s"[^>]*>(.*?)</' % re.escape(element_id), dom, re.S)
    assert match, f"no element #{element_id} in the page"
    return re.sub(r"<[^>]+>", "", match.group(1)).strip()


def test_the_console_check_catches_a_broken_page(browser, tmp_path):
    """The check below can fail: a page with a script error is caught."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><title>x</title><script>console.error('boom');</script>")
    _, console = render(browser, page, tmp_path=tmp_path)
    assert any("boom" in line for line in console)


def test_simulated_hang_renders_with_the_culprit_first(cli, browser, tmp_path):
    dumps = tmp_path / "dumps"
    subprocess.run([cli, "simulate", str(dumps), "--tp", "2", "--pp", "2", "--dp", "4",
                    "--fault", "stuck_before_op", "--fault-rank", "11"], check=True,
                   capture_output=True)
    page = tmp_path / "report.html"
    write_report(cli, dumps, page)
    dom, console = render(browser, page, ARTIFACTS / "html" / "simulated_hang.png", tmp_path)
    assert console == []
    assert text_of(dom, "failure-class") == "missing_participant"
    assert text_of(dom, "culprits") == "11"
    for part in ("wait-graph-svg", "timeline-svg", "process-groups", "findings", "inputs"):
        assert f'id="{part}"' in dom, part
    # The culprit is the graph's sink and has its own outlined row in the timeline.
    assert 'class="node culprit-node"><title>rank 11\n' in dom
    assert 'class="row culprit-row"><title>rank 11:' in dom
    # The stacks are there, folded.
    assert "<details class=\"stack\"><summary>Stack of rank 11" in dom


def test_real_pytorch_capture_renders(cli, browser, tmp_path):
    case = TORCH_DATA / "2.13.0" / "stuck_before_op"
    expected = json.loads((case / "expected.json").read_text())
    dumps = tmp_path / "dumps"
    shutil.copytree(case / "dumps", dumps)
    for name, ns in json.loads((case / "file_times.json").read_text()).items():
        os.utime(dumps / name, ns=(ns, ns))
    page = tmp_path / "report.html"
    write_report(cli, dumps, page)
    dom, console = render(browser, page, ARTIFACTS / "html" / "torch_stuck_before_op.png",
                          tmp_path)
    assert console == []
    assert text_of(dom, "culprits") == ",".join(map(str, expected["culprit_ranks"]))
    assert text_of(dom, "failure-class") == expected["failure_class"]


def test_dumps_with_logs_mark_the_initiating_event(cli, browser, tmp_path):
    job = tmp_path / "job"
    subprocess.run([cli, "simulate", str(job / "dumps"), "--fault", "crashed_rank",
                    "--fault-rank", "5"], check=True, capture_output=True)
    logsim.simulate(str(job / "logs"), 8, "xid", "torchrun_logdir", seed=4, culprit_rank=5,
                    gpus_per_host=4)
    page = tmp_path / "report.html"
    write_report(cli, job, page)
    dom, console = render(browser, page, ARTIFACTS / "html" / "dumps_and_logs_xid.png", tmp_path)
    assert console == []
    assert 'id="root-cause"' in dom
    assert "Root cause from the logs:" in dom and ">xid<" in dom
    # The evidence lines of the root cause are listed, each with its file and line.
    evidence = re.search(r'<table id="evidence">(.*?)</table>', dom, re.S)
    assert evidence and evidence.group(1).count("<tr>") >= 2


def test_report_of_many_ranks_stays_small(cli, browser, tmp_path):
    """512 ranks (TP 8 x PP 4 x DP 16): rows and boxes are aggregated, not drawn per rank."""
    dumps = tmp_path / "dumps"
    subprocess.run([cli, "simulate", str(dumps), "--tp", "8", "--pp", "4", "--dp", "16",
                    "--steps", "6", "--buffer", "200", "--fault", "stuck_before_op",
                    "--fault-rank", "77", "--fault-step", "4"], check=True, capture_output=True)
    page = tmp_path / "report.html"
    html = write_report(cli, dumps, page)
    assert len(html.encode()) < 1_000_000
    dom, console = render(browser, page, ARTIFACTS / "html" / "simulated_512_ranks.png", tmp_path)
    assert console == []
    assert text_of(dom, "culprits") == "77"
    timeline = re.search(r'<svg id="timeline-svg".*?</svg>', dom, re.S).group(0)
    assert timeline.count('<g class="row') <= 40
    # The DP and PP groups (ranks 32 and 8 apart) read as strided ranges, not lists of numbers.
    assert re.search(r"\b\d+-\d+ step (8|32)\b", dom)
    assert not re.search(r"\b\d+,\d+,\d+,\d+,\d+,\d+\b", dom)
    # Nothing runs off the right edge: a copy of the page measures itself in the browser.
    measured = tmp_path / "measured.html"
    measured.write_text(html.replace(
        "</body>", "<script>document.title = 'width=' + "
                   "document.documentElement.scrollWidth;</script></body>"))
    proc = subprocess.run([browser, "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1280,2000", f"--user-data-dir={tmp_path / 'measure'}",
                           "--dump-dom", measured.as_uri()], capture_output=True, text=True,
                          timeout=120)
    width = int(re.search(r"<title>width=(\d+)</title>", proc.stdout).group(1))
    assert width <= 1280, f"the page is {width} px wide in a 1280 px window"


def test_python_report_is_the_cli_report_and_the_notebook_shows_it(cli, browser, tmp_path):
    """report.to_html() is byte for byte what `fr-analyze report` writes for the same directory;
    a notebook shows the same sections as a fragment, which renders cleanly inside a page."""
    import fr_analyze

    dumps = tmp_path / "dumps"
    subprocess.run([cli, "simulate", str(dumps), "--fault", "stuck_before_op", "--fault-rank",
                    "3"], check=True, capture_output=True)
    page = tmp_path / "report.html"
    cli_html = write_report(cli, dumps, page)
    report = fr_analyze.analyze(str(dumps))
    assert report.to_html() == cli_html
    assert report.write_html(str(tmp_path / "py.html")) == len(cli_html.encode())
    fragment = report._repr_html_()
    assert fragment.startswith('<div class="fr-report">') and "<html" not in fragment
    assert '<dd id="culprits" class="culprit">3</dd>' in fragment
    # Its style is scoped: no rule can restyle the notebook around it.
    style = re.search(r"<style>(.*?)</style>", fragment, re.S).group(1)
    rules = [r.strip() for r in re.findall(r"([^{}]+)\{", style)]
    assert rules and all(all(part.strip().startswith(".fr-report") for part in r.split(","))
                         for r in rules), rules
    host = tmp_path / "notebook.html"
    host.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>cell</title></head>"
                    "<body><h1>A notebook</h1>" + fragment + "</body></html>")
    dom, console = render(browser, host, ARTIFACTS / "html" / "notebook_fragment.png", tmp_path)
    assert console == []
    assert text_of(dom, "culprits") == "3"


def test_a_pasted_log_has_the_same_notebook_view_without_dumps(cli):
    """A report of a pasted log has no dumps: the notebook shows the HTML report's fragment
    (one renderer), with the log's root cause and no section that needs dumps."""
    import fr_analyze

    report = fr_analyze.analyze_log(
        "[rank3]:[E1201 12:03:04.123456 1234 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=25, OpType=ALLREDUCE, NumelIn=8, "
        "NumelOut=8, Timeout(ms)=600000) ran for 600009 milliseconds before timing out.\n")
    html = report._repr_html_()
    assert html.startswith('<div class="fr-report">') and "<html" not in html
    # One victim's timeout: who never reached the collective is not in the paste (unknown).
    assert 'id="root-cause"' in html and report.root_cause.kind == "unknown"
    assert "unknown" in html and "flight-recorder dump" in html
    assert report.to_html().startswith("<!DOCTYPE html>")


def test_timeline_command_writes_both_formats(cli, tmp_path):
    dumps = tmp_path / "dumps"
    subprocess.run([cli, "simulate", str(dumps), "--fault", "stuck_before_op", "--fault-rank",
                    "5"], check=True, capture_output=True)
    chrome = tmp_path / "job.json"
    proc = subprocess.run([cli, "timeline", str(dumps), "--format", "chrome-json", "-o",
                           str(chrome)], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr  # a failure verdict, as `analyze` says
    events = json.loads(chrome.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "rank 5 (culprit)" in names and len(names) == 8
    perfetto = tmp_path / "job.perfetto-trace"
    proc = subprocess.run([cli, "timeline", str(dumps), "-o", str(perfetto)], capture_output=True)
    assert proc.returncode == 1 and perfetto.read_bytes()[:1] == b"\x0a"
    # The Perfetto trace is binary: without -o it goes to a pipe, never a terminal's screen.
    piped = subprocess.run([cli, "timeline", str(dumps)], capture_output=True)
    assert piped.stdout == perfetto.read_bytes()
    unknown = subprocess.run([cli, "timeline", str(dumps), "--format", "svg"], capture_output=True,
                             text=True)
    assert unknown.returncode == 2 and "svg" in unknown.stderr


def render_golden(cli, browser, case, tmp_path):
    """A captured torchrun job staged as it was left (file times restored), its HTML report
    written by the CLI and rendered: (DOM, console messages). The screenshot is
    torchrun_<case>.png among the artifacts."""
    job = tmp_path / "job"
    shutil.copytree(case, job, ignore=shutil.ignore_patterns("expected.json", "file_times.json"))
    for name, ns in json.loads((case / "file_times.json").read_text()).items():
        os.utime(job / name, ns=(ns, ns))
    page = tmp_path / "report.html"
    write_report(cli, job, page)
    return render(browser, page, ARTIFACTS / "html" / f"torchrun_{case.name}.png", tmp_path)


def test_a_real_torchrun_job_names_its_launcher_and_the_line_on_the_death(cli, browser, tmp_path):
    """A real torchrun job (torch 2.13.0, rank 2 SIGSEGV, tests/data/torchrun): the page says
    torchrun ran it and quotes torchrun's own report of rank 2's death."""
    case = ROOT / "tests" / "data" / "torchrun" / "2.13.0" / "segfault"
    expected = json.loads((case / "expected.json").read_text())
    dom, console = render_golden(cli, browser, case, tmp_path)
    assert console == []
    launcher = re.search(r"<dt>launcher</dt><dd>([^<]*)</dd>", dom)
    assert launcher and launcher.group(1) == "torchrun", dom[:3000]
    death = re.search(r"<dt>its report of the death</dt><dd[^>]*>([^<]*)</dd>", dom)
    assert death and f"rank: {expected['fault_rank']} " in death.group(1), death


def test_a_real_exception_shows_where_the_rank_raised(cli, browser, tmp_path):
    """A real torchrun job (torch 2.13.0) whose rank 2 raises ValueError in the harness's
    inject(): the page shows that rank's stack where it raised, innermost first, from its
    traceback in the logs."""
    case = ROOT / "tests" / "data" / "torchrun" / "2.13.0" / "exception"
    dom, console = render_golden(cli, browser, case, tmp_path)
    assert console == []
    listed = dom.split('id="raised-stack"', 1)[-1].split("</ol>")[0]
    frames = re.findall(r"<li>([^<]*)</li>", listed)
    assert frames and frames[0].startswith("inject (") and "torchrun_job.py:" in frames[0], frames
    # Said above the frames: which exception, and the line of the log it was read from.
    assert "ValueError at " in dom.split('id="raised-stack"')[0][-400:]
