"""Reading the dumps on a Dask cluster (a real LocalCluster of worker processes): the report must
be the local run's, byte for byte, damaged files included; a worker killed in the middle of its
task is replaced and its files read again, with no rank lost."""

import os
import subprocess

import pytest

distributed = pytest.importorskip("distributed")

import fr_analyze  # noqa: E402
from fr_analyze import _dask  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def job(cli, tmp_path_factory):
    """A 64-rank job whose rank 37 never issued its collective, and two damaged files."""
    root = tmp_path_factory.mktemp("dask") / "job"
    subprocess.run([cli, "simulate", str(root), "--tp", "4", "--pp", "2", "--dp", "8",
                    "--fault", "stuck_before_op", "--fault-rank", "37"],
                   check=True, capture_output=True)
    dumps = sorted(p for p in root.iterdir() if p.is_file())
    with open(dumps[3], "r+b") as f:
        f.truncate(os.path.getsize(dumps[3]) // 2)
    dumps[9].write_bytes(b"\x80\x02garbage")
    return root


def test_the_report_is_the_local_one(client, job):
    local = fr_analyze.analyze(str(job))
    on_cluster = fr_analyze.analyze(str(job), client=client)
    assert on_cluster.verdict.culprit_ranks == [37]
    assert len(on_cluster.to_json()) > 1000
    assert on_cluster.to_json() == local.to_json()
    trace = fr_analyze.load(str(job), client=client)
    assert len(trace.rejected) == 2
    assert all(r.path in r.error for r in trace.rejected), "each error names its file"


def test_a_worker_killed_mid_task_loses_no_rank(client, job, tmp_path):
    marker = str(tmp_path / "killed-once")

    def summarize_or_die(tasks):
        # The first task to run kills the process it runs in, halfway through its files: the
        # nanny starts a new worker and the scheduler runs the task again elsewhere.
        if not os.path.exists(marker):
            open(marker, "w").close()
            _dask.summarize_files(tasks[: len(tasks) // 2])
            os._exit(1)
        return _dask.summarize_files(tasks)

    local = fr_analyze.load(str(job))
    loaded = _dask.load_on_cluster(client, str(job), "", "", [], files_per_task=4,
                                   summarize=summarize_or_die)
    assert os.path.exists(marker), "a worker was killed"
    assert [d.rank for d in loaded.ranks] == local.rank_ids
    assert len(loaded.ranks) == 62
    assert fr_analyze._trace.Trace(loaded, str(job)).analyze().to_json() == \
        fr_analyze.analyze(str(job)).to_json()


def test_the_command_line_reads_on_the_cluster(cli, client, job):
    """`fr-analyze analyze DIR --dask ADDR` prints what the local run prints, exit status too."""
    import sys

    env = dict(os.environ, FR_ANALYZE_PYTHON=sys.executable)
    address = client.scheduler.address
    on_cluster = subprocess.run([cli, "analyze", str(job), "--format", "json", "--dask", address],
                                capture_output=True, text=True, env=env, timeout=300)
    local = subprocess.run([cli, "analyze", str(job), "--format", "json"], capture_output=True,
                           text=True, timeout=300)
    assert on_cluster.returncode == local.returncode == 1, on_cluster.stderr
    assert on_cluster.stdout == local.stdout
    # No scheduler there: a clear error and the usage exit status, no report.
    missing = subprocess.run([cli, "analyze", str(job), "--dask", "tcp://127.0.0.1:9"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert missing.returncode == 2
    assert missing.stdout == ""
    assert "the Dask scheduler at tcp://127.0.0.1:9" in missing.stderr


def test_code_planted_in_the_job_directory_never_runs(cli, client, job, tmp_path):
    """Run from inside a copied job directory, `--dask` starts its Python helper; modules planted
    there (`fr_analyze/`, `argparse.py`, `distributed/`) must not be imported by it, and a relative
    DIR still names the job (the helper runs elsewhere)."""
    import shutil
    import sys

    planted = tmp_path / "copied-job"
    shutil.copytree(job, planted)
    marker = tmp_path / "planted-code-ran"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    (planted / "fr_analyze").mkdir()
    (planted / "fr_analyze" / "__init__.py").write_text(payload)
    (planted / "fr_analyze" / "_dask.py").write_text(payload)
    (planted / "distributed").mkdir()
    (planted / "distributed" / "__init__.py").write_text(payload)
    (planted / "argparse.py").write_text(payload)
    env = dict(os.environ, FR_ANALYZE_PYTHON=sys.executable, PYTHONPATH=":".join(
        [os.environ.get("PYTHONPATH", ""), "."]))
    on_cluster = subprocess.run([cli, "analyze", ".", "--format", "json", "--dask",
                                 client.scheduler.address], cwd=planted, capture_output=True,
                                text=True, env=env, timeout=300)
    assert not marker.exists(), f"planted code ran: {marker.read_text()}"
    # With --dask the files are named by their absolute paths (the workers see them there).
    local = subprocess.run([cli, "analyze", str(planted), "--format", "json"],
                           capture_output=True, text=True, timeout=300)
    assert on_cluster.returncode == local.returncode == 1, on_cluster.stderr
    assert on_cluster.stdout == local.stdout
    import json
    assert json.loads(on_cluster.stdout)["verdict"]["culprit_ranks"] == [37]
