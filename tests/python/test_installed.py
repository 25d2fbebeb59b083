"""The package as a user gets it: the repaired manylinux wheel of scripts/build-wheel.sh installed
with `pip install --only-binary=:all: 'WHEEL[notebook,progress,console]'` into a fresh, plain venv
(pip may not build anything), then the console command, `python -m fr_analyze`, the examples, the
notebook and the web console (`fr-analyze serve`), all run as subprocesses from outside the source
tree.

.ci/run builds the wheel (scripts/build-wheel.sh) and names it in FR_ANALYZE_WHEEL; without it
these tests skip (scripts/test.sh leaves them to CI: the wheel's profile-guided build takes
minutes). By hand: FR_ANALYZE_WHEEL=$(bash scripts/build-wheel.sh) pytest tests/python/test_installed.py
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WHEEL = os.environ.get("FR_ANALYZE_WHEEL")

# What a manylinux wheel may take from the machine it is installed on (auditwheel's whitelist, as
# far as fr-analyze uses it); every other library must come from inside the installed wheel.
SYSTEM_LIBRARIES = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so",
                    "libpthread.so", "libdl.so", "librt.so", "libz.so")


@pytest.fixture(scope="session")
def venv(tmp_path_factory):
    """A fresh venv (no system packages) with the wheel and its extras installed by pip, binary
    wheels only, plus its Jupyter kernel. Built from the interpreter running the tests
    (scripts/venv.sh's, the Python the wheel is built for)."""
    if not WHEEL:
        pytest.skip("FR_ANALYZE_WHEEL is not set (.ci/run builds the wheel with "
                    "scripts/build-wheel.sh and sets it)")
    directory = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(directory)], check=True)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    install = subprocess.run(
        [str(directory / "bin" / "pip"), "install", "--disable-pip-version-check",
         "--only-binary=:all:", f"{WHEEL}[notebook,progress,console]"],
        capture_output=True, text=True, env=env, cwd=str(directory))
    assert install.returncode == 0, install.stdout[-4000:] + install.stderr[-4000:]
    assert "Successfully installed" in install.stdout and "fr-analyze" in install.stdout
    subprocess.run([str(directory / "bin" / "python"), "-m", "ipykernel", "install",
                    "--sys-prefix"], check=True, capture_output=True, env=env)
    return directory


def run(venv, args, cwd, **kwargs):
    """Runs a command from the venv the way a user's shell would: venv first on PATH, no
    PYTHONPATH pointing into a build tree, no FR_ANALYZE_CLI override."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FR_ANALYZE_CLI")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, **kwargs)


def python(venv, code, cwd):
    return run(venv, [str(venv / "bin" / "python"), "-c", code], cwd)


def test_import_uses_the_installed_package_with_stubs(venv, tmp_path):
    result = python(venv, "import fr_analyze, os; d = os.path.dirname(fr_analyze.__file__); "
                          "print(d); print(sorted(os.listdir(d)))", tmp_path)
    assert result.returncode == 0, result.stderr
    where, files = result.stdout.splitlines()
    assert where.startswith(str(venv))
    for name in ("py.typed", "_core.pyi", "bin", "_report.py"):
        assert name in files


def test_wheel_is_manylinux_and_carries_its_cpp_libraries(venv):
    assert "-manylinux_2_" in os.path.basename(WHEEL) and WHEEL.endswith("_x86_64.whl")
    package = next((venv / "lib").glob("python3*/site-packages/fr_analyze"))
    bundled = next((venv / "lib").glob("python3*/site-packages/fr_analyze.libs"))
    for binary in (package / "bin" / "fr-analyze", next(package.glob("_core*.so"))):
        ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True)
        assert "not found" not in ldd.stdout, ldd.stdout
        # "libfoo.so.1 => /path/libfoo.so.1 (0x...)", or "/lib64/ld-linux-x86-64.so.2 (0x...)"
        found = {os.path.basename(p[0]): os.path.realpath(p[2]) if p[1:2] == ["=>"] else p[0]
                 for p in map(str.split, ldd.stdout.splitlines()) if p}
        outside = {name: path for name, path in found.items()
                   if not name.startswith(SYSTEM_LIBRARIES)
                   and os.path.dirname(path) != str(bundled.resolve())}
        assert not outside, f"{binary.name} loads libraries from outside the wheel: {outside}"
        loaded = list(found)
        assert any(name.startswith("libprotobuf") for name in loaded), loaded


def test_console_command_and_module_match_the_cli(venv, cli, simulated_job, tmp_path):
    expected = subprocess.run([cli, "analyze", str(simulated_job), "--format", "json"],
                              capture_output=True, text=True)
    for command in ([str(venv / "bin" / "fr-analyze")],
                    [str(venv / "bin" / "python"), "-m", "fr_analyze"]):
        result = run(venv, [*command, "analyze", str(simulated_job), "--format", "json"],
                     tmp_path)
        assert result.returncode == 1, result.stderr
        assert result.stdout == expected.stdout
        assert json.loads(result.stdout)["verdict"]["culprit_ranks"] == [5]
    usage = run(venv, ["fr-analyze", str(tmp_path / "missing")], tmp_path)
    assert usage.returncode == 2 and "does not exist" in usage.stderr
    assert run(venv, ["fr-analyze", "--help"], tmp_path).stdout.startswith("usage:")


def test_script_api_from_the_installed_package(venv, simulated_job, tmp_path):
    code = (
        "import fr_analyze\n"
        f"report = fr_analyze.analyze({str(simulated_job)!r})\n"
        "print(report.verdict.failure_class, report.verdict.culprit_ranks)\n"
        "print(report.ranks_df().query('role == \"culprit\"')['rank'].tolist())\n")
    result = python(venv, code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["missing_participant [5]", "[5]"]


def test_imports_without_pandas_tqdm_or_ipython_and_says_what_to_install(
        venv, simulated_job, tmp_path):
    # None in sys.modules makes `import pandas` fail, as on a machine without it.
    code = (
        "import sys\n"
        "for name in ('pandas', 'tqdm', 'IPython', 'matplotlib'): sys.modules[name] = None\n"
        "import fr_analyze\n"
        f"report = fr_analyze.analyze({str(simulated_job)!r}, progress=None)\n"
        "print(report.verdict.culprit_ranks)\n"
        "print('<details' in report._repr_html_())\n"
        "for call in (report.ranks_df, lambda: fr_analyze.load("
        f"{str(simulated_job)!r}, progress=True)):\n"
        "    try:\n"
        "        call()\n"
        "    except fr_analyze.MissingDependencyError as error:\n"
        "        print(type(error).__name__, isinstance(error, ImportError), error)\n")
    result = python(venv, code, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "[5]" and lines[1] == "True"
    assert lines[2].startswith("MissingDependencyError True") and "python3-pandas" in lines[2]
    assert "tqdm" in lines[3] and "python3-tqdm" in lines[3]


def test_post_mortem_example_prints_writes_json_and_exits_like_the_cli(
        venv, cli, simulated_job, tmp_path):
    out = tmp_path / "report.json"
    script = os.path.join(ROOT, "examples", "post_mortem.py")
    result = run(venv, [str(venv / "bin" / "python"), script, str(simulated_job), "--json",
                        str(out)], tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("fr-analyze: missing_participant")
    assert "culprit ranks [5]" in result.stderr
    expected = subprocess.run([cli, "analyze", str(simulated_job), "--format", "json"],
                              capture_output=True, text=True).stdout
    assert out.read_text() == expected
    missing = run(venv, [str(venv / "bin" / "python"), script, str(tmp_path / "none")], tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_triage_notebook_runs_headless_without_errors(venv, tmp_path):
    code = (
        "import nbclient, nbformat\n"
        f"nb = nbformat.read({os.path.join(ROOT, 'examples', 'triage.ipynb')!r}, as_version=4)\n"
        "nbclient.NotebookClient(nb, timeout=300, kernel_name='python3', allow_errors=False,\n"
        f"    resources={{'metadata': {{'path': {str(tmp_path)!r}}}}}).execute()\n"
        f"nbformat.write(nb, {str(tmp_path / 'executed.ipynb')!r})\n")
    result = python(venv, code, tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    import nbformat  # also in the test interpreter (scripts/venv.sh)

    nb = nbformat.read(str(tmp_path / "executed.ipynb"), as_version=4)
    outputs = [o for cell in nb.cells for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("missing_participant" in h and "<details" in h for h in html)
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert nb.cells[-1].outputs[0].data["text/plain"] == "[5]"


def test_console_serves_from_the_installed_wheel(venv, tmp_path):
    """`pip install 'fr-analyze[console]'` then `fr-analyze serve`: the wheel carries the
    console's templates and migrations, and a pasted log is analysed over HTTP."""
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FR_ANALYZE_CLI",
                                                             "FR_ANALYZE_PYTHON")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    server = subprocess.Popen([str(venv / "bin" / "fr-analyze"), "serve", "--port", str(port),
                               "--data", str(tmp_path / "data")], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/", timeout=2).read()
                break
            except OSError:
                assert server.poll() is None, server.stdout.read()
                time.sleep(0.1)
        # A segfault on local rank 2 of a single-node torchrun job: torch.distributed.elastic's
        # wording, as in FlagOpen/FlagEmbedding#1549.
        log = ("E1119 08:26:02.715000 28705 site-packages/torch/distributed/elastic/"
               "multiprocessing/api.py:882] failed (exitcode: -11) local_rank: 2 (pid: 28773) "
               "of binary: /usr/bin/python3\n").encode()
        request = urllib.request.Request(url + "/api/analyses", data=log, method="POST",
                                         headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            assert answer.status == 201
            created = json.loads(answer.read())
        assert created["report"]["verdict"]["root_cause"]["kind"] == "segfault"
        page = urllib.request.urlopen(f"{url}/analyses/{created['id']}", timeout=10).read()
        assert b"segfault" in page
    finally:
        server.terminate()
        server.wait(timeout=30)
