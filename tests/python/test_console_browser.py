"""The console (`fr-analyze serve`) driven by a real browser: Debian's headless Chromium, through
Playwright, against the console started as a user starts it, on a free port with its own data
folder.

A user pastes a real log, picks a real torchrun job's folder, picks an archive of another, and
reads the culprit on the page; a team's CI records the same host's failures, and the fleet page
names that host; a browser without JavaScript gets the same answers. No page may log a console
message or break its Content-Security-Policy. The expected culprits come from what each input
was set up with: the world corpus's truth.json, the torchrun captures' expected.json, the log
simulator's expected.json. Screenshots are kept under build/test-artifacts/console/ (or
$FR_TEST_ARTIFACTS).
"""

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "logsim"))
import logsim  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORLD = ROOT / "tests" / "data" / "world"
TORCHRUN = ROOT / "tests" / "data" / "torchrun" / "2.13.0"
ARTIFACTS = pathlib.Path(os.environ.get("FR_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))
SHOTS = ARTIFACTS / "console"
CHROMIUM = "/usr/bin/chromium-headless-shell"
WIDTH = 1280

try:
    from playwright import sync_api
except ImportError:  # the chromium fixture says what to install
    sync_api = None


# --- the console and the browser ------------------------------------------------------------

class Server:
    """`fr-analyze serve` on a free port; stopped with its process group."""

    def __init__(self, cli, data):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(data.parent / "serve.log", "wb")
        # fr-analyze runs the console as a child; a session of its own lets both be stopped.
        # The console runs in this interpreter (it has the console extra), as
        # console_fixtures.start_server does; FR_ANALYZE_PYTHON overrides it.
        env = {**os.environ}
        env.setdefault("FR_ANALYZE_PYTHON", sys.executable)
        self.process = subprocess.Popen(
            [cli, "serve", "--port", str(port), "--data", str(data)], stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True, env=env)
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(self.url + "/", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("the console did not answer: "
                            + (data.parent / "serve.log").read_text(errors="replace")[-2000:])
            time.sleep(0.1)

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


@pytest.fixture(scope="module")
def server(cli, tmp_path_factory):
    console = Server(cli, tmp_path_factory.mktemp("console") / "data")
    yield console
    console.stop()


@pytest.fixture(scope="module")
def chromium():
    if sync_api is None:
        pytest.fail("Playwright is missing: pip install playwright (its browsers are not needed)")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no {CHROMIUM}: scripts/install-deps.sh installs chromium-headless-shell")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


class Tab:
    """A page in a fresh browser context, with every console message and page error it saw."""

    def __init__(self, browser, javascript=True):
        self.context = browser.new_context(viewport={"width": WIDTH, "height": 900},
                                           java_script_enabled=javascript)
        self.page = self.context.new_page()
        self.messages = []
        self.page.on("console", lambda m: self.messages.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.messages.append(f"pageerror: {e}"))

    def quiet(self):
        """No console message (a CSP violation is logged as one) and no page error."""
        assert self.messages == [], self.messages

    def close(self):
        self.context.close()


@pytest.fixture
def tab(chromium):
    t = Tab(chromium)
    yield t
    t.close()


def text(page, selector):
    return page.inner_text(selector).strip()


def wait_for_analysis(page):
    """The analysis page replaces the "Analysing" page once the analysis is stored. A refusal
    is a page of its own (#error) or, outside the pages, bare JSON (shown in a <pre>)."""
    page.wait_for_selector("#verdict, #error, body > pre", timeout=60_000)
    assert page.locator("#error, body > pre").count() == 0, text(page, "body")
    assert "/analyses/" in page.url


def screenshot(page, name):
    """A full-page screenshot under SHOTS; the page must fit the window's width."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 20_000, f"{name}: a blank page is a few KB"
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= WIDTH, f"{name}: the page is {wide} px wide in a {WIDTH} px window"
    return path


def world_case(name):
    """A world log and its truth; only dev cases (the held-out ones score the analyzer)."""
    truth = json.loads((WORLD / name / "truth.json").read_text())
    assert truth["split"] == "dev", name
    return (WORLD / name / "log.txt").read_text(), truth


def torchrun_job(case, into):
    """A torchrun capture as the job left it: the harness's expected.json and file times stay
    behind (the browser sends neither)."""
    expected = json.loads((TORCHRUN / case / "expected.json").read_text())
    job = into / case
    shutil.copytree(TORCHRUN / case, job,
                    ignore=shutil.ignore_patterns("expected.json", "file_times.json"))
    return job, expected


# --- the tests --------------------------------------------------------------------------------

def test_a_pasted_log_names_its_culprit_host(server, tab):
    log, truth = world_case("nccl_ib_vendor_err_129")
    page = tab.page
    page.goto(server.url + "/")
    assert "Which rank broke the job?" in text(page, "h1")
    screenshot(page, "index.png")
    page.fill("textarea[name=log]", log)
    page.fill("input[name=name]", "ib-vendor-err-paste")
    page.click("button[type=submit]")
    wait_for_analysis(page)
    assert text(page, "h1") == "ib-vendor-err-paste"
    assert text(page, "#failure-class") not in ("none", "")
    hosts = text(page, "#culprit-hosts")
    for host in truth["hosts"]:
        assert host in hosts, (host, hosts)
    # The pasted log is kept as the analysis's one input, and the history lists the job.
    assert "pasted.log" in text(page, "#inputs")
    screenshot(page, "analysis-paste.png")
    page.click("header >> text=History")
    row = page.locator("#history tr", has_text="ib-vendor-err-paste")
    assert row.count() == 1
    assert truth["hosts"][0] in row.inner_text()
    tab.quiet()


def test_a_torchrun_folder_names_its_culprit_rank(server, tab, tmp_path):
    job, expected = torchrun_job("exception", tmp_path)
    page = tab.page
    page.goto(server.url + "/")
    # The folder picker (webkitdirectory): every file, sent with its path inside the folder.
    page.set_input_files("input[webkitdirectory]", str(job))
    page.click("button[type=submit]")
    wait_for_analysis(page)
    assert text(page, "#failure-class") == expected["failure_class"]
    assert text(page, "#culprits") == ",".join(map(str, expected["culprit_ranks"]))
    assert text(page, "#root-kind") == expected["root_cause_kind"]
    inputs = text(page, "#inputs")
    sent = sorted(p for p in job.rglob("*") if p.is_file())
    assert f"Inputs ({len(sent)})" in page.inner_text("main")
    for path in sent:
        assert path.relative_to(job.parent).as_posix() in inputs
    # The job's name is the folder's when none was typed.
    assert text(page, "h1") == job.name
    # The full report is shown inside the page, and it names the same culprit.
    frame = page.frame_locator("iframe[title=report]")
    assert frame.locator("#culprits").inner_text().strip() == text(page, "#culprits")
    screenshot(page, "analysis.png")
    # Re-run (a plain form post): the same analysis, read again, names the same culprit.
    url = page.url
    page.click("text=Re-run with this fr-analyze")
    wait_for_analysis(page)
    assert page.url == url
    assert text(page, "#culprits") == ",".join(map(str, expected["culprit_ranks"]))
    tab.quiet()


def test_an_archive_names_its_culprit_rank(server, tab, tmp_path):
    # Two agents (node0/, node1/): the culprit is global rank 6 on the second node.
    job, expected = torchrun_job("two_agents_second_capture", tmp_path / "job")
    archive = tmp_path / "two_agents.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(job, arcname=job.name)
    page = tab.page
    page.goto(server.url + "/")
    page.set_input_files("input[name=files]:not([webkitdirectory])", str(archive))
    page.fill("input[name=label]", "cluster-a")
    page.click("button[type=submit]")
    wait_for_analysis(page)
    assert text(page, "#failure-class") == expected["failure_class"]
    assert text(page, "#culprits") == ",".join(map(str, expected["culprit_ranks"]))
    # The archive was unpacked: its members are the inputs, under a folder named after it.
    inputs = text(page, "#inputs")
    for path in sorted(p for p in job.rglob("*") if p.is_file()):
        assert "two_agents/" + path.relative_to(job.parent).as_posix() in inputs, path
    assert text(page, "h1") == "two_agents"
    assert "cluster-a" in text(page, "#meta")
    tab.quiet()


def test_an_empty_form_is_refused_with_its_reason(server, tab):
    page = tab.page
    page.goto(server.url + "/")
    page.click("button[type=submit]")
    page.wait_for_selector("#error")
    assert "no file and no pasted log" in text(page, "#error")
    assert text(page, "h1") == "Nothing was analysed"
    # The browser notes the 400 answer; nothing else.
    assert all("status of 400" in m for m in tab.messages), tab.messages


def test_the_fleet_names_the_host_that_keeps_failing(server, chromium, tmp_path):
    # Four jobs of 8 hosts x 2 GPUs whose rank 9 fails each time (three Xids, one host OOM):
    # the simulator records the culprit's host, and a team's CI records each job. By chance a
    # host would start all four with odds of 1 in 8**4; its neighbours start none.
    import fr_analyze

    culprits, hosts = set(), set()
    faults = ("xid", "host_oom", "xid", "xid")
    for i, fault in enumerate(faults):
        job = tmp_path / f"job{i}"
        expected = logsim.simulate(str(job / "logs"), 16, fault, "torchrun_logdir", seed=10 + i,
                                   culprit_rank=9, gpus_per_host=2)
        os.remove(job / "logs" / "expected.json")
        culprits.update(expected["culprit_hosts"])
        hosts.update(expected["hosts"])
        fr_analyze.Console(server.url).post(str(job / "logs"), name=f"sim-{fault}-{i}")
    assert len(culprits) == 1
    culprit = culprits.pop()

    t = Tab(chromium)
    page = t.page
    page.goto(server.url + "/fleet")
    offenders = page.locator("#offenders tr", has_text=culprit)
    assert offenders.count() == 1, text(page, "main")
    cells = offenders.locator("td").all_inner_texts()
    assert cells[0] == culprit and cells[1] == str(len(faults))
    # Its victims ran in the same failed jobs and are not offenders.
    listed = [r.locator("td").first.inner_text() for r in page.locator("#offenders tr").all()
              if r.locator("td").count()]
    assert not (hosts - {culprit}) & set(listed), listed
    screenshot(page, "fleet.png")
    # The host's link lists its analyses.
    offenders.locator("a").first.click()
    page.wait_for_selector("#history")
    assert page.locator("#history tr", has_text="sim-").count() == len(faults)
    page.goto(server.url + "/analyses")
    screenshot(page, "history.png")
    t.quiet()
    t.close()


def test_without_javascript_a_paste_reaches_its_analysis(server, chromium):
    log, truth = world_case("megatron_elastic_sigsegv_rank0")
    t = Tab(chromium, javascript=False)
    page = t.page
    page.goto(server.url + "/")
    page.fill("textarea[name=log]", log)
    page.click("button[type=submit]")
    # A plain form post, then the "Analysing" page reloads itself (meta refresh) until done.
    wait_for_analysis(page)
    assert text(page, "#culprits") == ",".join(map(str, truth["ranks"]))
    assert text(page, "#root-kind") == truth["kind"]
    # The full report, made when the page's frame first asks for it, shows without a script.
    frame = page.frame_locator("iframe[title=report]")
    assert frame.locator("#culprits").inner_text().strip() == text(page, "#culprits")
    t.quiet()
    t.close()


def test_the_console_check_sees_a_csp_violation(server, tab):
    """The check above can fail: an inline script without the page's nonce is refused by the
    console's Content-Security-Policy, and the browser says so in the console."""
    page = tab.page
    page.goto(server.url + "/")
    page.evaluate("""() => { const s = document.createElement('script');
                             s.textContent = 'document.title = "injected"';
                             document.body.appendChild(s); }""")
    page.wait_for_timeout(200)
    assert page.title() != "injected"
    assert any("Content Security Policy" in m for m in tab.messages), tab.messages
