"""The console's JSON API end to end: `fr-analyze serve` as a subprocess on a free port, driven
over real HTTP, storing on SQLite (under --data) and on a real PostgreSQL server started for the
session. Every expected answer is what the test set up: the fault the simulator injected, or what
the CLI prints for the same input.
"""

import contextlib
import datetime
import gzip
import hashlib
import io
import json
import os
import pathlib
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import threading
import time
import zipfile

import pytest
import requests
import zstandard

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "logsim"))
import logsim  # noqa: E402
from console_fixtures import (_alive, eventually, fresh_database, postgres, slow_job,  # noqa: E402,F401,E501
                              start_server, worker_processes)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCH_DATA = ROOT / "tests" / "data" / "torch"
TORCH_CASES = sorted(p.parent for p in TORCH_DATA.glob("*/*/expected.json"))
TIMEOUT = 120


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database_kind(request):
    return request.param


def empty_database(request, kind):
    """--db arguments for a console with nothing stored yet: none (SQLite under its --data) or
    a new database on the session's PostgreSQL server."""
    if kind == "sqlite":
        return []
    return ["--db", fresh_database(request.getfixturevalue("postgres"))]


@pytest.fixture
def database(request, database_kind):
    """An empty database of this module's kind, for a console of the test's own."""
    return empty_database(request, database_kind)


@pytest.fixture(scope="module")
def server(request, database_kind, tmp_path_factory):
    """One console per database for the whole module (the tests read what they posted by id,
    or by a time window they opened)."""
    with start_server(tmp_path_factory.mktemp("console") / "data",
                      *empty_database(request, database_kind)) as running:
        yield running


# --- helpers -----------------------------------------------------------------------------------
def simulate_logs(directory, fault, layout="pasted", rank=5, gpus_per_host=4, seed=4):
    """A job's logs with one injected fault (tests/logsim); returns what was injected."""
    return logsim.simulate(str(directory), 8, fault, layout, seed=seed, culprit_rank=rank,
                           gpus_per_host=gpus_per_host)


def cli_json(cli, *args, stdin=None, cwd=None):
    proc = subprocess.run([cli, "analyze", *map(str, args), "--format", "json"], input=stdin,
                          capture_output=True, cwd=cwd, timeout=TIMEOUT)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def post_log(server, text, **query):
    return requests.post(server.url + "/api/analyses", data=text, params=query,
                         headers={"Content-Type": "text/plain; charset=utf-8"}, timeout=TIMEOUT)


def folder_files(folder, prefix=None):
    """A folder's files as a browser sends a dropped folder: `files` parts named folder/sub/f."""
    folder = pathlib.Path(folder)
    prefix = folder.name if prefix is None else prefix
    return [("files", (f"{prefix}/{p.relative_to(folder).as_posix()}", p.read_bytes()))
            for p in sorted(folder.rglob("*")) if p.is_file()]


def post_files(server, files, **query):
    return requests.post(server.url + "/api/analyses", files=files, params=query,
                         timeout=TIMEOUT)


def get(server, path, **query):
    answer = requests.get(server.url + path, params=query, timeout=TIMEOUT)
    assert answer.status_code == 200, answer.text
    return answer.json()


def without_dump_time(report):
    """The report less what comes from the files' modification times: the console writes the
    uploaded files anew (a multipart body carries no times), so their times are the upload's."""
    report = json.loads(json.dumps(report))
    report["inputs"].pop("dump_time_ns", None)
    return report


def stage_fresh(source, target):
    """A copy with new file times, as the console's copy of an upload has."""
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    return target


def history_total(server):
    return get(server, "/api/analyses", limit=1)["total"]


# --- what an upload gives ----------------------------------------------------------------------
def test_a_pasted_log_gives_the_clis_report(server, cli, tmp_path):
    injected = simulate_logs(tmp_path / "logs", "xid")
    log = (tmp_path / "logs" / "pasted.log").read_bytes()
    before = time.time()
    answer = post_log(server, log, name="job 17", label="cluster-a")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert set(body) == {"id", "report"}
    # What `fr-analyze analyze - --format json < log` prints for the same log, but for the name
    # of the pasted text: the CLI calls stdin "-", the Python binding the console runs calls its
    # text "<pasted>" (python/src/core_bindings.cc).
    expected = json.loads(json.dumps(cli_json(cli, "-", stdin=log)).replace(
        '"-"', '"<pasted>"').replace("(-:", "(<pasted>:"))
    assert body["report"] == expected
    assert body["report"]["verdict"]["culprit_ranks"] == injected["culprit_ranks"]
    assert answer.headers["Location"] == f"/api/analyses/{body['id']}"

    stored = get(server, f"/api/analyses/{body['id']}")
    assert stored["id"] == body["id"]
    assert (stored["name"], stored["label"], stored["status"]) == ("job 17", "cluster-a", "done")
    created = datetime.datetime.strptime(stored["created"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    assert before - 2 <= created <= time.time() + 1
    assert stored["report"] == body["report"]
    # The pasted text is kept, byte for byte, to be analysed again later.
    assert stored["inputs"] == [{"path": "pasted.log", "size": len(log), "skipped": "",
                                 "sha256": hashlib.sha256(log).hexdigest()}]


def test_a_jobs_files_give_the_clis_report(server, cli, simulated_job):
    answer = post_files(server, folder_files(simulated_job))
    assert answer.status_code == 201, answer.text
    report = answer.json()["report"]
    # The CLI run on the same folder from its parent, as the upload names its files.
    expected = cli_json(cli, simulated_job.name, cwd=simulated_job.parent)
    assert without_dump_time(report) == without_dump_time(expected)
    assert report["verdict"]["culprit_ranks"] == [5]  # the rank `simulate` made hang
    stored = get(server, f"/api/analyses/{answer.json()['id']}")
    assert sorted(i["path"] for i in stored["inputs"]) == sorted(
        f"dumps/{p.name}" for p in simulated_job.iterdir())


@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_real_pytorch_dumps_name_the_injected_fault(server, cli, case, tmp_path):
    injected = json.loads((case / "expected.json").read_text())
    dumps = stage_fresh(case / "dumps", tmp_path / "dumps")
    answer = post_files(server, folder_files(dumps))
    assert answer.status_code == 201, answer.text
    report = answer.json()["report"]
    assert report["verdict"]["failure_class"] == injected["failure_class"]
    assert report["verdict"].get("culprit_ranks", []) == injected["culprit_ranks"]
    assert without_dump_time(report) == without_dump_time(cli_json(cli, "dumps", cwd=tmp_path))


def tar_archive(folder, path, compression, arcname="job"):
    """folder as job/... in a tar (or ./..., as `tar -C folder -czf x.tgz .` writes): plain,
    gzip, or zstd (one frame, or many as pzstd writes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if compression == "gz" else "w:") as tar:
        tar.add(folder, arcname=arcname)
    data = buffer.getvalue()
    if compression == "gz-members":  # as bgzip or `cat a.gz b.gz` write: several members
        step = 256 << 10
        data = b"".join(gzip.compress(data[i:i + step]) for i in range(0, len(data), step))
    elif compression == "zst":
        data = zstandard.ZstdCompressor(level=3).compress(data)
    elif compression == "zst-frames":
        step = 256 << 10
        data = b"".join(zstandard.ZstdCompressor(level=3).compress(data[i:i + step])
                        for i in range(0, len(data), step))
    path.write_bytes(data)
    return path


def zip_archive(folder, path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(pathlib.Path(folder).iterdir()):
            z.write(f, f"job/{f.name}")
    return path


ARCHIVES = {
    "job.tar": lambda folder, path: tar_archive(folder, path, ""),
    "job.tar.gz": lambda folder, path: tar_archive(folder, path, "gz"),
    "dot.tgz": lambda folder, path: tar_archive(folder, path, "gz", arcname="."),
    "job-members.tar.gz": lambda folder, path: tar_archive(folder, path, "gz-members"),
    "job.tar.zst": lambda folder, path: tar_archive(folder, path, "zst"),
    "job-frames.tar.zst": lambda folder, path: tar_archive(folder, path, "zst-frames"),
    "job.zip": zip_archive,
}


@pytest.mark.parametrize("name", ARCHIVES)
def test_an_archive_of_the_job_gives_the_same_culprit(server, cli, simulated_job, tmp_path, name):
    archive = ARCHIVES[name](simulated_job, tmp_path / name)
    answer = post_files(server, [("files", (name, archive.read_bytes()))])
    assert answer.status_code == 201, answer.text
    report = answer.json()["report"]
    assert report["verdict"]["culprit_ranks"] == [5]
    expected = cli_json(cli, simulated_job)
    for key in ("failure_class", "culprit_ranks", "root_cause", "collective_seq_id", "op"):
        assert report["verdict"].get(key) == expected["verdict"].get(key), key
    # The members are kept, under the archive's name; the archive itself is not analysed.
    stored = get(server, f"/api/analyses/{answer.json()['id']}")
    folder = name.split(".")[0] + ("" if name.startswith("dot") else "/job")
    assert sorted(i["path"] for i in stored["inputs"]) == sorted(
        f"{folder}/{p.name}" for p in simulated_job.iterdir())


def test_an_archives_dumps_are_dated_by_their_own_times_as_the_cli_dates_them(
        server, cli, simulated_job, tmp_path):
    # A tar keeps its members' times and `tar -x` gives them back: the console must date the
    # dumps as the CLI does on the unpacked folder, not by when they were uploaded. Its dumps
    # reach the analysis from memory (written after the answer), its log from disk: both dated.
    taken = 1_767_323_045  # 2026-01-02T03:04:05Z, when the job's dumps were written
    folder = tmp_path / "job"
    shutil.copytree(simulated_job, folder)
    (folder / "train.log").write_text("[rank0]: step 1 loss 2.31\n")
    archive = tmp_path / "job.tar.zst"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:") as tar:
        for path in sorted(folder.iterdir()):
            info = tar.gettarinfo(str(path), arcname=f"job/{path.name}")
            info.mtime = taken
            with open(path, "rb") as f:
                tar.addfile(info, f)
    archive.write_bytes(zstandard.ZstdCompressor().compress(buffer.getvalue()))
    unpacked = tmp_path / "unpacked"
    with tarfile.open(fileobj=io.BytesIO(buffer.getvalue())) as tar:
        tar.extractall(unpacked / "job", filter="data")  # the console's folder: job.tar.zst's
    expected = cli_json(cli, "job", cwd=unpacked)
    assert expected["inputs"]["dump_time_ns"] == taken * 10**9  # what `tar -x` gave the CLI

    answer = post_files(server, [("files", ("job.tar.zst", archive.read_bytes()))])
    assert answer.status_code == 201, answer.text
    report = answer.json()["report"]
    assert report["inputs"]["dump_time_ns"] == taken * 10**9
    assert report["inputs"]["dump_time_source"] == "file modification time"
    for key in report["inputs"]:
        assert report["inputs"][key] == expected["inputs"][key], key
    assert report == expected
    # Stored as sent: every member, byte for byte.
    stored = get(server, f"/api/analyses/{answer.json()['id']}")
    assert sorted(i["path"] for i in stored["inputs"]) == sorted(
        f"job/job/{p.name}" for p in folder.iterdir())


def test_a_zips_dumps_are_dated_by_their_utc_times_as_unzip_dates_them(server, cli,
                                                                        simulated_job, tmp_path):
    # Info-ZIP's zip keeps each file's UTC time in an extended-timestamp field (0x5455) beside
    # the DOS local time, and unzip restores that one: so must the console (whatever its own
    # time zone), its dumps read from memory and its log from disk alike.
    taken = 1_767_323_045
    members = {f"job/{p.name}": p.read_bytes() for p in sorted(simulated_job.iterdir())}
    members["job/train.log"] = b"[rank0]: step 1 loss 2.31\n"
    archive = tmp_path / "job.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 5, 6, 7, 8, 9))  # a wrong local time
            info.compress_type = zipfile.ZIP_DEFLATED
            info.extra = (0x5455).to_bytes(2, "little") + (5).to_bytes(2, "little") + bytes(
                [1]) + taken.to_bytes(4, "little")
            z.writestr(info, data)
    unpacked = tmp_path / "unpacked" / "job"  # as unzip leaves it, under the console's folder
    for name, data in members.items():
        (unpacked / name).parent.mkdir(parents=True, exist_ok=True)
        (unpacked / name).write_bytes(data)
        os.utime(unpacked / name, (taken, taken))
    expected = cli_json(cli, "job", cwd=tmp_path / "unpacked")

    answer = post_files(server, [("files", ("job.zip", archive.read_bytes()))])
    assert answer.status_code == 201, answer.text
    report = answer.json()["report"]
    assert report["inputs"]["dump_time_ns"] == taken * 10**9
    assert report == expected


def test_an_archive_beside_loose_files_is_read_with_them(server, cli, simulated_job, tmp_path):
    # Two archives and a log dropped beside them: the upload's folder has three entries, so the
    # analysis reads all of it; the archives' dumps (sent to the worker from memory) and the
    # loose log (written) must be found where the CLI finds them in the same folder.
    dumps = sorted(simulated_job.iterdir())
    half = len(dumps) // 2
    parts = []
    for name, members in (("a.tar.zst", dumps[:half]), ("b.tar", dumps[half:])):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:") as tar:
            for path in members:
                tar.add(path, arcname=f"job/{path.name}")
        data = buffer.getvalue()
        parts.append(("files", (name, zstandard.ZstdCompressor().compress(data)
                                if name.endswith(".zst") else data)))
    log = b"[rank0]: step 1 loss 2.31\n"
    parts.append(("files", ("train.log", log)))
    answer = post_files(server, parts)
    assert answer.status_code == 201, answer.text
    report = answer.json()["report"]

    unpacked = tmp_path / "unpacked"
    for name, members in (("a", dumps[:half]), ("b", dumps[half:])):
        (unpacked / name / "job").mkdir(parents=True)
        for path in members:
            shutil.copy2(path, unpacked / name / "job" / path.name)  # tar -x keeps the times
    (unpacked / "train.log").write_bytes(log)
    expected = cli_json(cli, ".", cwd=unpacked)
    assert report["verdict"]["culprit_ranks"] == [5]
    assert without_dump_time(report) == without_dump_time(expected)
    stored = get(server, f"/api/analyses/{answer.json()['id']}")
    assert len(stored["inputs"]) == len(dumps) + 1


def server_timing(answer):
    """{name: ms} of an answer's Server-Timing entries, in their order."""
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r"(\w+);dur=([\d.]+)", answer.headers.get("Server-Timing", ""))}


def test_an_uploads_answer_says_where_its_time_went(server, simulated_job, tmp_path):
    # What an operator (and the benchmark) reads to tell a slow upload from a slow analysis:
    # the request's whole time first, then each stage in the order it ran, none longer than
    # the whole, together no longer than it.
    archive = tar_archive(simulated_job, tmp_path / "job.tar.zst", "zst")
    answer = post_files(server, [("files", ("job.tar.zst", archive.read_bytes()))])
    assert answer.status_code == 201, answer.text
    timing = server_timing(answer)
    assert list(timing) == ["app", "body", "unpack", "worker", "save"], timing
    stages = [ms for name, ms in timing.items() if name != "app"]
    assert sum(stages) <= timing["app"] + 1.0, timing
    assert timing["worker"] > 0, timing
    # A pasted log has no archive to unpack: its stages are the analysis's.
    pasted = post_log(server, "[rank0]: RuntimeError: CUDA error: an illegal memory access\n")
    assert list(server_timing(pasted)) == ["app", "worker", "save"], pasted.headers


def test_a_finished_report_is_recorded_without_inputs(server, cli, simulated_job):
    report = cli_json(cli, simulated_job)
    answer = requests.post(server.url + "/api/analyses", json=report, params={"name": "ci-42"},
                           timeout=TIMEOUT)
    assert answer.status_code == 201, answer.text
    stored = get(server, f"/api/analyses/{answer.json()['id']}")
    assert stored["report"] == report
    assert stored["inputs"] == [] and stored["name"] == "ci-42"
    listed = get(server, "/api/analyses", limit=1000)["analyses"]
    row = next(r for r in listed if r["id"] == stored["id"])
    assert row["culprit_ranks"] == "5" and row["failure_class"] == "missing_participant"
    # Nothing to analyse again: said so, not a crash.
    rerun = requests.post(server.url + f"/api/analyses/{stored['id']}/rerun", timeout=TIMEOUT)
    assert rerun.status_code == 409 and "no inputs" in rerun.json()["error"]
    # And a JSON body that is no report is refused.
    bad = requests.post(server.url + "/api/analyses", json={"hello": 1}, timeout=TIMEOUT)
    assert bad.status_code == 400 and "verdict" in bad.json()["error"]


def test_rerun_analyses_the_stored_inputs_again(server, tmp_path):
    simulate_logs(tmp_path / "logs", "host_oom", gpus_per_host=2)
    first = post_log(server, (tmp_path / "logs" / "pasted.log").read_bytes(), name="oom")
    assert first.status_code == 201, first.text
    before = get(server, f"/api/analyses/{first.json()['id']}")
    answer = requests.post(server.url + f"/api/analyses/{before['id']}/rerun", timeout=TIMEOUT)
    assert answer.status_code == 200, answer.text
    again = answer.json()
    # The same analysis, in place: same id, date, name and inputs, the same verdict.
    for key in ("id", "created", "name", "label", "inputs", "report", "status"):
        assert again[key] == before[key], key
    assert get(server, f"/api/analyses/{before['id']}")["report"] == before["report"]
    missing = requests.post(server.url + "/api/analyses/0123456789abcdef/rerun", timeout=TIMEOUT)
    assert missing.status_code == 404


# --- the history and the fleet -----------------------------------------------------------------
def test_the_history_filters_by_kind_host_time_and_limit(server, tmp_path):
    since = f"{time.time():.3f}"  # what this test posts, none of what the others did
    posted = {}
    # Three jobs on different hosts: 4 GPUs per host puts rank 5 on node001, 2 on node002, 8 on
    # node000 (and the jobs have 2, 4 and 1 hosts).
    for fault, gpus in (("xid", 4), ("host_oom", 2), ("segfault", 8)):
        injected = simulate_logs(tmp_path / fault, fault, gpus_per_host=gpus)
        answer = post_log(server, (tmp_path / fault / "pasted.log").read_bytes())
        assert answer.status_code == 201, answer.text
        posted[fault] = (answer.json()["id"], injected["culprit_hosts"])
        time.sleep(0.01)

    def ids(**query):
        listing = get(server, "/api/analyses", since=since, **query)
        return [row["id"] for row in listing["analyses"]], listing["total"]

    assert ids(kind="xid") == ([posted["xid"][0]], 1)
    assert ids(kind="host_oom") == ([posted["host_oom"][0]], 1)
    assert ids(kind="cuda_oom") == ([], 0)
    # Only the second job ran on node002 (the others had no third host).
    assert posted["host_oom"][1] == ["node002"]
    assert ids(host="node002") == ([posted["host_oom"][0]], 1)
    assert ids(host="no-such-host") == ([], 0)
    # Newest first; limit cuts the page, not the total.
    assert ids() == ([posted[f][0] for f in ("segfault", "host_oom", "xid")], 3)
    assert ids(limit=1) == ([posted["segfault"][0]], 3)
    # since as a date: nothing after an hour from now; everything of ours after the first.
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    assert get(server, "/api/analyses", since=later.strftime("%Y-%m-%dT%H:%M:%SZ"))["total"] == 0
    first = get(server, f"/api/analyses/{posted['xid'][0]}")["created"]
    assert {posted[f][0] for f in posted} <= {
        r["id"] for r in get(server, "/api/analyses", since=first, limit=1000)["analyses"]}


def fleet(server):
    return {h["host"]: h for h in get(server, "/api/fleet")["hosts"]}


def counts(hosts, name):
    entry = hosts.get(name, {"initiated": 0, "victim": 0, "jobs": 0, "by_kind": {}})
    return entry["initiated"], entry["victim"], entry["jobs"], dict(entry["by_kind"])


def test_the_fleet_counts_who_initiated_and_who_suffered(server, tmp_path):
    # A whole job's logs (every host's files): the Xid host initiated, the others were victims.
    injected = simulate_logs(tmp_path / "logs", "xid", layout="torchrun_logdir", seed=7)
    culprit_host = injected["culprit_hosts"][0]
    victims = sorted(set(injected["hosts"]) - {culprit_host})
    assert victims, "the job spans more than one host"
    before = fleet(server)
    answer = post_files(server, folder_files(tmp_path / "logs"))
    assert answer.status_code == 201, answer.text
    after = fleet(server)
    i, v, j, kinds = counts(before, culprit_host)
    assert counts(after, culprit_host) == (i + 1, v, j + 1, {**kinds, "xid": kinds.get("xid", 0)
                                                              + 1})
    for host in victims:
        i, v, j, kinds = counts(before, host)
        assert counts(after, host) == (i, v + 1, j + 1, kinds), host

    # A job that did not fail makes nobody a culprit, nor a victim.
    simulate_logs(tmp_path / "healthy", "none", layout="torchrun_logdir", seed=7)
    answer = post_files(server, folder_files(tmp_path / "healthy", prefix="healthy"))
    assert answer.status_code == 201, answer.text
    assert answer.json()["report"]["verdict"]["failure_class"] == "none"
    final = fleet(server)
    for host in injected["hosts"]:
        assert counts(final, host) == counts(after, host), host


def fleet_of(jobs, hosts_per_job, hosts, starts, seed):
    """The fleet's host rows for `jobs` failed jobs, each on `hosts_per_job` hosts drawn from
    `hosts`, whose failure starts on starts(job's hosts, rng): the counts the store's query
    gives (initiated, victim, jobs, expected share)."""
    import random

    rng = random.Random(seed)
    rows = {h: {"host": h, "initiated": 0, "victim": 0, "jobs": 0, "expected": 0.0,
                "by_kind": {}, "gpus": {}} for h in hosts}
    for _ in range(jobs):
        members = rng.sample(hosts, hosts_per_job)
        culprit = starts(members, rng)
        for h in members:
            row = rows[h]
            row["jobs"] += 1
            row["expected"] += 1 / hosts_per_job
            if h == culprit:
                row["initiated"] += 1
                row["by_kind"]["xid"] = row["by_kind"].get("xid", 0) + 1
            else:
                row["victim"] += 1
    return list(rows.values())


def test_repeat_offenders_are_not_named_by_chance_in_a_large_fleet():
    """1000 hosts, 2000 failed jobs of 8 hosts, each failure started by a host of its job drawn
    at random: every host is as good as the next, so the fleet lists nobody (the rule corrects
    for how many hosts it looks at; 'twice its share and 2 more' listed dozens here). Give one
    host a GPU that breaks the jobs it runs in half of the time, and it alone is listed."""
    from fr_analyze.console._app import chance_of_at_least, repeat_offenders

    # The tail itself: all 3 of 3 jobs of 4 hosts by chance is (1/4)**3.
    assert abs(chance_of_at_least(3, 3, 0.25) - 1 / 64) < 1e-12
    assert chance_of_at_least(0, 5, 0.1) == 1.0 and chance_of_at_least(6, 5, 0.1) == 0.0
    hosts = [f"node{i:04d}" for i in range(1000)]
    fair = fleet_of(2000, 8, hosts, lambda members, rng: rng.choice(members), seed=1)
    old_rule = [h for h in fair if h["initiated"] >= 2 and h["initiated"] >= 2 * h["expected"]
                and h["initiated"] - h["expected"] >= 2]
    assert len(old_rule) > 10, "the fleet is big enough for chance to look like a pattern"
    assert repeat_offenders(fair) == []

    bad = hosts[17]

    def starts(members, rng):
        if bad in members and rng.random() < 0.5:
            return bad
        return rng.choice(members)

    skewed = fleet_of(2000, 8, hosts, starts, seed=2)
    named = [o["host"] for o in repeat_offenders(skewed)]
    assert named == [bad], named


# --- clients -----------------------------------------------------------------------------------
def test_analyze_post_records_into_the_console(server, cli, simulated_job, tmp_path):
    job = shutil.copytree(simulated_job, tmp_path / "job42")
    proc = subprocess.run([cli, "analyze", str(job), "--post", server.url], capture_output=True,
                          text=True, timeout=TIMEOUT,
                          env={**os.environ, "FR_ANALYZE_PYTHON": sys.executable})
    assert proc.returncode == 1, proc.stderr  # 1: the job failed (the report says why)
    assert "rank 5" in proc.stdout.lower()
    prefix = f"recorded as {server.url}/analyses/"
    assert prefix in proc.stderr, proc.stderr
    analysis_id = proc.stderr.split(prefix, 1)[1].split()[0]
    stored = get(server, f"/api/analyses/{analysis_id}")
    assert stored["name"] == "job42"
    assert stored["report"]["verdict"]["culprit_ranks"] == [5]
    assert sorted(i["path"] for i in stored["inputs"]) == sorted(
        f"job42/{p.name}" for p in simulated_job.iterdir())
    # A console that is not there: a clear message and status 2, after the report.
    gone = subprocess.run([cli, "analyze", str(job), "--post", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "FR_ANALYZE_PYTHON": sys.executable})
    assert gone.returncode == 2 and "cannot reach the console" in gone.stderr, gone.stderr


def test_the_python_client_records_folders_logs_and_reports(server, simulated_job, tmp_path):
    import fr_analyze

    console = fr_analyze.Console(server.url)
    answer = console.post(simulated_job, name="py-job", label="client")
    assert answer["report"]["verdict"]["culprit_ranks"] == [5]
    stored = console.get(answer["id"])
    assert (stored["name"], stored["label"]) == ("py-job", "client")
    assert len(stored["inputs"]) == len(list(simulated_job.iterdir()))

    injected = simulate_logs(tmp_path / "logs", "cuda_oom", gpus_per_host=2)
    text = (tmp_path / "logs" / "pasted.log").read_text()
    pasted = console.post(text)
    assert pasted["report"]["verdict"]["culprit_ranks"] == injected["culprit_ranks"]
    assert console.get(pasted["id"])["inputs"][0]["path"] == "pasted.log"

    report = fr_analyze.load(str(simulated_job)).analyze()
    recorded = console.post(report)
    assert console.get(recorded["id"])["inputs"] == []
    assert recorded["report"]["verdict"]["culprit_ranks"] == [5]
    with pytest.raises(fr_analyze.ConsoleError, match="no such file or folder"):
        console.post(tmp_path / "not-there")


# --- what the pages show -----------------------------------------------------------------------
def test_a_hostile_line_is_escaped_on_every_page(server, tmp_path):
    # A host name is quoted in the verdict ("Rank 5 on HOST: ..."); this one is a script.
    simulate_logs(tmp_path / "logs", "xid", gpus_per_host=2)
    script = "<script>alert(1)</script>"
    log = (tmp_path / "logs" / "pasted.log").read_text().replace("node002", script)
    answer = post_log(server, log)
    assert answer.status_code == 201, answer.text
    assert script in answer.json()["report"]["verdict"]["summary"]  # the line is in the verdict
    analysis = answer.json()["id"]
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for path in (f"/analyses/{analysis}", "/analyses", "/fleet",
                 f"/analyses/{analysis}/report.html"):
        page = requests.get(server.url + path, timeout=TIMEOUT)
        assert page.status_code == 200, path
        assert script not in page.text, path
        assert "alert(1)" not in page.text.replace(escaped, ""), path
    page = requests.get(server.url + f"/analyses/{analysis}", timeout=TIMEOUT).text
    assert escaped in page


# --- downloads made on demand ------------------------------------------------------------------
def outputs_kept(data, analysis_id):
    """The output files the console keeps for an analysis, beside its row."""
    folder = data / "outputs" / analysis_id[:2] / analysis_id
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def download(server, analysis_id, name):
    answer = requests.get(server.url + f"/analyses/{analysis_id}/{name}", timeout=TIMEOUT)
    assert answer.status_code == 200, (name, answer.text[:500])
    return answer


def cli_outputs(cli, job, dump_time_ns, tmp_path):
    """What the CLI writes for the files the console stored: named as they were uploaded (the
    CLI runs from the folder's parent) and dated as the console's report dates the dumps."""
    copy = stage_fresh(job, tmp_path / "cli" / job.name)
    for path in copy.rglob("*"):
        os.utime(path, ns=(dump_time_ns, dump_time_ns))
    commands = {"timeline": ["timeline", job.name, "-o", "out.perfetto-trace"],
                "html": ["report", job.name, "-o", "out.html"],
                "proto": ["analyze", job.name, "--format", "proto", "-o", "out.pb"]}
    written = {}
    for what, args in commands.items():
        proc = subprocess.run([cli, *args], capture_output=True, cwd=copy.parent, timeout=TIMEOUT)
        assert proc.returncode in (0, 1), proc.stderr
        written[what] = (copy.parent / args[-1]).read_bytes()
    return written


def perfetto_ranks(trace):
    """The ranks of a Perfetto trace's thread tracks, decoded by protoc against the trace.proto
    the timeline is written to (Perfetto's field numbers): bytes that are no Perfetto trace
    fail here."""
    proc = subprocess.run(["protoc", f"--proto_path={ROOT / 'proto'}",
                           "--decode=perfetto.protos.Trace", "perfetto/trace.proto"],
                          input=trace, capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    text = proc.stdout.decode()
    assert "track_event {" in text
    return sorted(int(r) for r in re.findall(r'thread_name: "rank (\d+)[ "]', text))


def stored_blob(data, sha256):
    """A stored input's bytes, from the blob store."""
    with open(data / "blobs" / sha256[:2] / f"{sha256}.zst", "rb") as f:
        return zstandard.ZstdDecompressor().stream_reader(f).read()


def test_the_html_report_and_timeline_are_made_on_first_download_then_kept(database, cli,
                                                                           simulated_job,
                                                                           tmp_path):
    from fr_analyze import _report_pb2

    data = tmp_path / "data"
    with start_server(data, *database) as server:
        answer = post_files(server, folder_files(simulated_job))
        assert answer.status_code == 201, answer.text
        analysis_id, report = answer.json()["id"], answer.json()["report"]
        # The upload made what its answer needed, not the HTML report nor the timeline.
        assert outputs_kept(data, analysis_id) == ["report.pb"]
        page = requests.get(server.url + f"/analyses/{analysis_id}", timeout=TIMEOUT).text
        for name in ("report.json", "report.pb", "timeline.perfetto-trace", "report.html"):
            assert f'"/analyses/{analysis_id}/{name}"' in page, name  # offered all the same

        # The JSON and protobuf downloads are the answer's report.
        assert download(server, analysis_id, "report.json").json() == report
        proto = _report_pb2.Report.FromString(download(server, analysis_id, "report.pb").content)
        assert list(proto.verdict.culprit_ranks) == report["verdict"]["culprit_ranks"] == [5]
        assert proto.inputs.dump_time_ns == report["inputs"]["dump_time_ns"]

        # The first downloads make the timeline and the HTML report from the stored inputs:
        # what the CLI writes for the same files.
        timeline = download(server, analysis_id, "timeline.perfetto-trace")
        assert "attachment" in timeline.headers["Content-Disposition"]
        assert perfetto_ranks(timeline.content) == list(range(8))
        html = download(server, analysis_id, "report.html")
        assert "sandbox" in html.headers["Content-Security-Policy"]
        expected = cli_outputs(cli, simulated_job, report["inputs"]["dump_time_ns"], tmp_path)
        assert timeline.content == expected["timeline"]
        assert html.content == expected["html"]
        assert outputs_kept(data, analysis_id) == ["report.html", "report.pb",
                                                   "timeline.perfetto-trace"]

        # The inputs were stored whole (after the answer, before anything was made of them).
        stored = get(server, f"/api/analyses/{analysis_id}")
        for item in stored["inputs"]:
            content = stored_blob(data, item["sha256"])
            assert (hashlib.sha256(content).hexdigest(), len(content)) == (item["sha256"],
                                                                           item["size"])

        # The downloads right after the answer may have read the upload's folder while the
        # storing still ran: the storing waited for them, then removed it.
        assert not (data / "uploads" / analysis_id).exists()

        # The second downloads are the kept files: with the stored inputs gone, nothing could
        # be made again, and the same files answer, unchanged.
        folder = data / "outputs" / analysis_id[:2] / analysis_id
        kept = {name: (folder / name).stat() for name in outputs_kept(data, analysis_id)}
        for blob in (data / "blobs").glob("*/*"):
            blob.unlink()
        assert download(server, analysis_id, "timeline.perfetto-trace").content == \
            timeline.content
        assert download(server, analysis_id, "report.html").content == html.content
        for name, before in kept.items():
            after = (folder / name).stat()
            assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), name


def test_a_download_right_after_the_answer_reads_the_upload_while_it_is_stored(cli, tmp_path):
    """Right after the answer the inputs are still being compressed into the blob store; the
    first download is made from the upload's folder meanwhile (said by a Server-Timing entry),
    not after the storing and a restore. The storing then ends whole, and removes the folder only
    once the download is made. A 64-rank job keeps the storing busy for a while; should it ever
    end first, the upload is tried again."""
    job = tmp_path / "job64"
    subprocess.run([cli, "simulate", str(job), "--tp", "4", "--pp", "4", "--dp", "4",
                    "--fault", "stuck_before_op", "--fault-rank", "37"], check=True,
                   capture_output=True)
    files = folder_files(job)
    data = tmp_path / "data"
    with start_server(data) as server:
        for attempt in range(3):
            answer = post_files(server, files)
            assert answer.status_code == 201, answer.text
            analysis_id = answer.json()["id"]
            assert answer.json()["report"]["verdict"]["culprit_ranks"] == [37]
            timeline = download(server, analysis_id, "timeline.perfetto-trace")
            if "upload's folder" in timeline.headers.get("Server-Timing", ""):
                break
        else:
            pytest.fail("every download came after the inputs were stored")
        assert perfetto_ranks(timeline.content) == list(range(64))
        html = download(server, analysis_id, "report.html").text
        assert "37" in html and "missing_participant" in html
        # The stored inputs are whole, and the folder is gone once they are.
        stored = get(server, f"/api/analyses/{analysis_id}")
        assert len(stored["inputs"]) == len(files)
        for item in stored["inputs"]:
            content = stored_blob(data, item["sha256"])
            assert hashlib.sha256(content).hexdigest() == item["sha256"]
        deadline = time.monotonic() + 30
        while (data / "uploads" / analysis_id).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (data / "uploads" / analysis_id).exists()
        # Later downloads are the kept files.
        assert download(server, analysis_id, "timeline.perfetto-trace").content == \
            timeline.content


def test_a_pasted_log_has_an_html_report_and_no_timeline(server, tmp_path):
    injected = simulate_logs(tmp_path / "logs", "segfault", gpus_per_host=2)
    answer = post_log(server, (tmp_path / "logs" / "pasted.log").read_bytes())
    assert answer.status_code == 201, answer.text
    analysis_id = answer.json()["id"]
    page = requests.get(server.url + f"/analyses/{analysis_id}", timeout=TIMEOUT).text
    assert "timeline.perfetto-trace" not in page  # no dumps were read: no timeline to offer
    missing = requests.get(server.url + f"/analyses/{analysis_id}/timeline.perfetto-trace",
                           timeout=TIMEOUT)
    assert missing.status_code == 404
    html = download(server, analysis_id, "report.html").text
    assert injected["culprit_hosts"][0] in html
    # A finished report posted without inputs has nothing to make an HTML report from.
    posted = requests.post(server.url + "/api/analyses", json=answer.json()["report"],
                           timeout=TIMEOUT)
    assert posted.status_code == 201, posted.text
    for name in ("report.html", "timeline.perfetto-trace", "report.pb"):
        assert requests.get(server.url + f"/analyses/{posted.json()['id']}/{name}",
                            timeout=TIMEOUT).status_code == 404, name


# --- crash safety and retention ----------------------------------------------------------------
def test_a_server_killed_mid_analysis_keeps_every_stored_analysis_whole(database, cli, slow_job,
                                                                        simulated_job, tmp_path):
    data = tmp_path / "data"
    server = start_server(data, *database)
    try:
        simulate_logs(tmp_path / "logs", "xid")
        stored = [post_log(server, (tmp_path / "logs" / "pasted.log").read_bytes()),
                  post_files(server, folder_files(simulated_job))]
        assert [a.status_code for a in stored] == [201, 201]
        before = {a.json()["id"]: get(server, f"/api/analyses/{a.json()['id']}") for a in stored}

        # A slow analysis in flight: its worker runs when the kill comes.
        thread = threading.Thread(target=lambda: _swallow(
            lambda: post_files(server, folder_files(slow_job))), daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not worker_processes(data, busy=True) and time.monotonic() < deadline:
            time.sleep(0.005)  # the analysis lasts a few tenths of a second: catch it early
        workers = worker_processes(data, busy=True)
        assert workers, "the slow analysis never started"
        # Held still, the worker cannot finish on its own before the check below.
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        server.kill()
        thread.join(timeout=30)
        # Its workers go with it (the busy one and the one started ahead): nothing keeps
        # running for a server that is gone.
        deadline = time.monotonic() + 5
        while worker_processes(data) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = worker_processes(data)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert left == [], "the analysis worker outlived the server"
    finally:
        server.stop()

    with start_server(data, *database) as again:
        listing = get(again, "/api/analyses", limit=1000)
        # The analysis cut short never became a row; the others are whole.
        assert sorted(r["id"] for r in listing["analyses"]) == sorted(before)
        for analysis_id, earlier in before.items():
            now = get(again, f"/api/analyses/{analysis_id}")
            assert now == earlier
            assert now["inputs"] and now["report"]["verdict"]["culprit_ranks"]
            # The inputs' bytes are there too: the analysis runs again from them.
            rerun = requests.post(again.url + f"/api/analyses/{analysis_id}/rerun",
                                  timeout=TIMEOUT)
            assert rerun.status_code == 200, rerun.text
            assert without_dump_time(rerun.json()["report"]) == without_dump_time(
                earlier["report"])
        assert list((data / "uploads").iterdir()) == []


def post_then_kill_at_the_answer(data, database, files):
    """POSTs `files` to a new server on `data` and kills it (-9) the moment the answer's
    status line arrives; returns the analysis's id."""
    server = start_server(data, *database)
    try:
        answer = requests.post(server.url + "/api/analyses", files=files, timeout=TIMEOUT,
                               stream=True)
        server.kill()
        assert answer.status_code == 201
        analysis_id = answer.headers["Location"].rsplit("/", 1)[1]
        answer.close()
    finally:
        server.stop()
    return analysis_id


def test_the_answer_comes_before_the_inputs_are_stored_and_a_kill_then_loses_none(
        database, slow_job, tmp_path):
    """A 512-file upload is answered once its row is saved: hashing its inputs and compressing
    them into the blob store follow. kill -9 the moment the answer's status line arrives: the
    inputs are not all stored yet, and the next start stores them from the upload's folder."""
    data = tmp_path / "data"
    sent = folder_files(slow_job)
    analysis_id = post_then_kill_at_the_answer(data, database, sent)
    # What the kill left: the answered upload's files, not yet all in the blob store.
    staged = data / "uploads" / analysis_id / "files"
    assert sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*")
                  if p.is_file()) == sorted(name for _, (name, _) in sent)
    assert len(blob_files(data)) < len(sent), "the answer waited for the inputs' compression"

    check_restart_stored_everything(data, database, analysis_id,
                                    {name: content for _, (name, content) in sent})


def check_restart_stored_everything(data, database, analysis_id, contents):
    """After a kill at the answer: the next start has the analysis whole, every input stored
    byte for byte as sent (`contents`: path -> bytes), the upload's folder gone, and a re-run
    of the stored inputs names the same culprit."""
    with start_server(data, *database) as again:
        stored = get(again, f"/api/analyses/{analysis_id}")
        assert stored["status"] == "done"
        assert stored["report"]["verdict"]["culprit_ranks"] == [5]
        assert sorted(i["path"] for i in stored["inputs"]) == sorted(contents)
        for item in stored["inputs"]:
            assert stored_blob(data, item["sha256"]) == contents[item["path"]], item["path"]
        assert list((data / "uploads").iterdir()) == []
        rerun = requests.post(again.url + f"/api/analyses/{analysis_id}/rerun", timeout=TIMEOUT)
        assert rerun.status_code == 200, rerun.text
        assert rerun.json()["report"]["verdict"]["culprit_ranks"] == [5]


def test_a_kill_before_an_archives_dumps_were_written_loses_none(database, slow_job, tmp_path):
    """A tar's dumps go to the analysis from memory and are written into the upload's folder
    only after the answer, from the archive, which is kept until then. kill -9 the moment the
    answer's status line arrives: the next start writes them from the kept archive and stores
    every member as it was in the archive. (Should the writing ever win the race, the upload is
    tried again with a fresh server.)"""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:") as tar:
        tar.add(slow_job, arcname="slow")
    archive = zstandard.ZstdCompressor(level=1).compress(buffer.getvalue())
    contents = {f"slow/slow/{p.name}": p.read_bytes() for p in slow_job.iterdir()}
    for attempt in range(3):
        data = tmp_path / f"data{attempt}"
        analysis_id = post_then_kill_at_the_answer(data, database,
                                                   [("files", ("slow.tar.zst", archive))])
        upload = data / "uploads" / analysis_id
        if (upload / "held.json").exists():
            break
    else:
        pytest.fail("every kill came after the held members were written")
    # What the kill left: the kept archive, its members not all written yet (or not at all).
    assert list((upload / "held").iterdir()), "the archive was not kept"
    check_restart_stored_everything(data, database, analysis_id, contents)


def test_a_restart_hashes_and_stores_inputs_answered_before_they_were_hashed(database,
                                                                            tmp_path):
    """An upload's row is saved with its inputs unhashed; their hashes are recorded after the
    answer, with their compression. A server killed before that (the row as it was saved, the
    files in uploads/<id>/files) records the hashes at its next start and stores the files; a
    file gone from the folder is the one input lost."""
    from fr_analyze.console._store import UNHASHED, Analysis, InputFile, Store

    data = tmp_path / "data"
    db = database[1] if database else None
    contents = {"job/rank_0.log": b"[rank0]: step 1\n", "job/rank_1.log": b"[rank1]: step 1\n",
                "job/gone.log": b"never stored"}
    store = Store(data, db)
    store.migrate()
    analysis_id = "0123456789abcdef"
    store.save(Analysis(id=analysis_id, created_ms=int(time.time() * 1000), report="{}",
                        inputs=[InputFile(path, UNHASHED, len(content))
                                for path, content in contents.items()]))
    store.engine.dispose()
    staged = data / "uploads" / analysis_id / "files"
    for path, content in contents.items():
        if path != "job/gone.log":
            (staged / path).parent.mkdir(parents=True, exist_ok=True)
            (staged / path).write_bytes(content)

    with start_server(data, *database) as server:
        stored = get(server, f"/api/analyses/{analysis_id}")
        hashes = {i["path"]: i["sha256"] for i in stored["inputs"]}
        assert hashes == {path: hashlib.sha256(content).hexdigest() if path != "job/gone.log"
                          else UNHASHED for path, content in contents.items()}
        for path in ("job/rank_0.log", "job/rank_1.log"):
            assert stored_blob(data, hashes[path]) == contents[path]
        assert list((data / "uploads").iterdir()) == []
    assert "input 'job/gone.log' was lost" in (tmp_path / "data.log").read_text()


def _swallow(action):
    try:
        action()
    except requests.RequestException:
        pass  # the server was killed under it: expected


def blob_files(data):
    return sorted(p.name for p in (data / "blobs").glob("*/*"))


def test_max_bytes_removes_the_oldest_analyses_and_their_blobs(database, tmp_path):
    data = tmp_path / "data"
    with start_server(data, *database, "--max-bytes", "1") as server:
        ids = []
        for fault in ("xid", "segfault"):
            simulate_logs(tmp_path / fault, fault)
            answer = post_log(server, (tmp_path / fault / "pasted.log").read_bytes())
            assert answer.status_code == 201, answer.text
            ids.append(answer.json()["id"])
        # Over the limit: the older went with its blob (once the newest's inputs are stored,
        # which follows its answer); the newest is always kept.
        eventually(lambda: requests.get(server.url + f"/api/analyses/{ids[0]}",
                                        timeout=TIMEOUT).status_code == 404,
                   "retention removes the older analysis")
        newest = get(server, f"/api/analyses/{ids[1]}")
        eventually(lambda: blob_files(data) == [newest["inputs"][0]["sha256"] + ".zst"],
                   "only the newest analysis's blob is left")
        assert history_total(server) == 1
        assert not list((data / "outputs").glob(f"*/{ids[0]}"))


def test_keep_days_and_reanalyze(cli, tmp_path):
    data = tmp_path / "data"
    with start_server(data) as server:
        ids = {}
        for fault in ("xid", "segfault"):
            simulate_logs(tmp_path / fault, fault)
            answer = post_log(server, (tmp_path / fault / "pasted.log").read_bytes())
            assert answer.status_code == 201, answer.text
            ids[fault] = answer.json()["id"]
        originals = {k: get(server, f"/api/analyses/{v}") for k, v in ids.items()}
    # Forty days pass for the first analysis; the second is left with a stale report, as an
    # older fr-analyze would have written.
    with sqlite3.connect(data / "console.sqlite3") as db:
        # The default store: SQLite under --data, in WAL mode (pages read while one writes).
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.execute("UPDATE analyses SET created_ms = created_ms - 40 * 86400000 WHERE id = ?",
                   (ids["xid"],))
        db.execute("UPDATE analyses SET report = ?, fr_version = '0.0.1' WHERE id = ?",
                   (json.dumps({"verdict": {"culprit_ranks": []}}), ids["segfault"]))
    env = {**os.environ, "FR_ANALYZE_PYTHON": sys.executable}
    proc = subprocess.run([cli, "serve", "--reanalyze", "--keep-days", "30", "--data", str(data)],
                          capture_output=True, text=True, timeout=TIMEOUT, env=env)
    assert proc.returncode == 0, proc.stderr
    with start_server(data) as server:
        gone = requests.get(server.url + f"/api/analyses/{ids['xid']}", timeout=TIMEOUT)
        assert gone.status_code == 404
        again = get(server, f"/api/analyses/{ids['segfault']}")
        assert again["report"] == originals["segfault"]["report"]
        assert again["created"] == originals["segfault"]["created"]
        assert blob_files(data) == [again["inputs"][0]["sha256"] + ".zst"]


def test_reanalyze_beside_a_live_server_takes_turns_with_it(cli, tmp_path):
    """`serve --reanalyze` run on the --data of a live server: each analysis is re-run under its
    own lock, which the page's re-run takes too, so the two never re-run one analysis at once
    (racing for its row and its kept outputs), and only one maintenance run works at a time.
    This test holds the locks the way the other process would, through the same flock files."""
    from fr_analyze.console import _locks

    data = tmp_path / "data"
    env = {**os.environ, "FR_ANALYZE_PYTHON": sys.executable}

    def reanalyze():
        return subprocess.run([cli, "serve", "--reanalyze", "--data", str(data)],
                              capture_output=True, text=True, timeout=TIMEOUT, env=env)

    with start_server(data) as server:
        simulate_logs(tmp_path / "xid", "xid")
        answer = post_log(server, (tmp_path / "xid" / "pasted.log").read_bytes())
        assert answer.status_code == 201, answer.text
        analysis_id = answer.json()["id"]
        before = get(server, f"/api/analyses/{analysis_id}")
        with _locks.hold(_locks.lock_path(data, analysis_id), "fr-analyze serve --reanalyze"):
            # The server's re-run finds the analysis taken: it says by whom, and waits for nothing.
            busy = requests.post(server.url + f"/api/analyses/{analysis_id}/rerun",
                                 timeout=TIMEOUT)
            assert busy.status_code == 409, busy.text
            assert "serve --reanalyze" in busy.json()["error"]
            # A maintenance run beside it leaves that analysis to its holder.
            proc = reanalyze()
            assert proc.returncode == 0, proc.stderr
            assert "busy 1" in proc.stderr and f"analysis {analysis_id} left to" in proc.stderr
        assert get(server, f"/api/analyses/{analysis_id}") == before
        with _locks.hold(_locks.lock_path(data, "maintenance"), "another maintenance run"):
            proc = reanalyze()
            assert proc.returncode == 1
            assert "another maintenance run" in proc.stderr and "maintenance.lock" in proc.stderr
        # Once free, both re-run it, and the analysis is whole either way.
        proc = reanalyze()
        assert proc.returncode == 0 and "re-analysed 1" in proc.stderr, proc.stderr
        again = requests.post(server.url + f"/api/analyses/{analysis_id}/rerun", timeout=TIMEOUT)
        assert again.status_code == 200, again.text
        assert again.json()["report"]["verdict"] == before["report"]["verdict"]
    # A server starting while a maintenance run re-runs an analysis leaves that run's work
    # folder alone; a work folder nobody holds is what a killed run left, and is swept.
    working = data / "uploads" / f"{analysis_id}-rerun-0a1b2c3d"
    left = data / "uploads" / f"{'f' * 16}-rerun-0a1b2c3d"
    for folder in (working, left):
        (folder / "files").mkdir(parents=True)
    with _locks.hold(_locks.lock_path(data, analysis_id), "fr-analyze serve --reanalyze"):
        with start_server(data):
            assert working.is_dir() and not left.exists()


# --- schema migrations -------------------------------------------------------------------------
def test_a_first_schema_database_is_upgraded_in_place(database, tmp_path):
    """A console's database from before the fleet's index (revision 0001), an analysis in it:
    the console upgrades it as it starts, and the analysis, the history and the fleet read as
    before, the fleet's query now over its covering index."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config

    from fr_analyze.console import _schema
    from fr_analyze.console._store import MIGRATIONS, database_url

    data = tmp_path / "data"
    data.mkdir()
    url = database_url(database[1] if database else None, data)
    engine = sa.create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    report = {"verdict": {"failure_class": "missing_participant", "culprit_ranks": [3]}}
    with engine.begin() as c:
        config.attributes["connection"] = c
        command.upgrade(config, "0001")
        c.execute(sa.text(
            "INSERT INTO analyses (id, created_ms, name, label, status, error, failure_class,"
            " root_kind, confidence, culprit_text, hosts_text, host_count, input_bytes, seconds,"
            " fr_version, report) VALUES ('00000000000000aa', 1764000000000, 'old job', '',"
            " 'done', '', 'missing_participant', 'xid', 'high', '3', 'node-a', 2, 0, 1.5,"
            " '0.0.9', :report)"), {"report": json.dumps(report)})
        c.execute(sa.text(
            "INSERT INTO analysis_hosts (analysis_id, host, gpu, role, kind, created_ms) VALUES"
            " ('00000000000000aa', 'node-a', '0000:18:00', 'initiated', 'xid', 1764000000000),"
            " ('00000000000000aa', 'node-b', '', 'victim', '', 1764000000000)"))
    engine.dispose()

    with start_server(data, *database) as server:
        stored = get(server, "/api/analyses/00000000000000aa")
        assert (stored["name"], stored["report"]) == ("old job", report)
        assert [r["id"] for r in get(server, "/api/analyses", host="node-a")["analyses"]] == [
            "00000000000000aa"]
        hosts = {h["host"]: h for h in get(server, "/api/fleet")["hosts"]}
        assert (hosts["node-a"]["initiated"], hosts["node-a"]["gpus"]) == (1, {"0000:18:00": 1})
        assert (hosts["node-b"]["victim"], hosts["node-b"]["initiated"]) == (1, 0)

    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            assert c.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() \
                == "0002"
            indexes = {ix["name"]: ix["column_names"]
                       for ix in sa.inspect(c).get_indexes("analysis_hosts")}
            # As the schema declares it: the fleet's index, whose first column serves host=.
            assert indexes == {ix.name: [col.name for col in ix.columns]
                               for ix in _schema.analysis_hosts.indexes}
            assert indexes["ix_analysis_hosts_fleet"] == ["host", "gpu", "role", "kind",
                                                          "created_ms", "analysis_id"]
            if engine.dialect.name == "sqlite":
                from fr_analyze.console._store import Store

                query = Store.fleet_query()
                plan = " ".join(str(row[-1]) for row in c.execute(sa.text(
                    "EXPLAIN QUERY PLAN " + str(query.compile(
                        c, compile_kwargs={"literal_binds": True})))))
                assert "COVERING INDEX ix_analysis_hosts_fleet" in plan, plan
    finally:
        engine.dispose()


def test_the_fleet_index_migration_goes_back_and_forth(database, tmp_path):
    """An operator who rolls the console back runs `alembic downgrade 0001`: the host index of
    the first schema returns with the rows untouched, and upgrading again restores the fleet's
    index."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config

    from fr_analyze.console._store import MIGRATIONS, database_url

    data = tmp_path / "data"
    data.mkdir()
    engine = sa.create_engine(database_url(database[1] if database else None, data))
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))

    def state(c):
        indexes = {ix["name"]: ix["column_names"]
                   for ix in sa.inspect(c).get_indexes("analysis_hosts")}
        rows = c.execute(sa.text(
            "SELECT host, role FROM analysis_hosts ORDER BY host")).all()
        version = c.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
        return version, indexes, [tuple(r) for r in rows]

    try:
        with engine.begin() as c:
            config.attributes["connection"] = c
            command.upgrade(config, "0001")
            first_indexes = state(c)[1]
            assert "ix_analysis_hosts_host" in first_indexes
            command.upgrade(config, "head")
            c.execute(sa.text(
                "INSERT INTO analyses (id, created_ms, name, label, status, error,"
                " failure_class, root_kind, confidence, culprit_text, hosts_text, host_count,"
                " input_bytes, seconds, fr_version, report) VALUES ('00000000000000bb',"
                " 1764000000000, 'job', '', 'done', '', 'missing_participant', 'xid', 'high',"
                " '3', 'node-c', 1, 0, 1.5, '0.0.9', '{}')"))
            c.execute(sa.text(
                "INSERT INTO analysis_hosts (analysis_id, host, gpu, role, kind, created_ms)"
                " VALUES ('00000000000000bb', 'node-c', '', 'initiated', 'xid', 1764000000000)"))
            command.downgrade(config, "0001")
            assert state(c) == ("0001", first_indexes, [("node-c", "initiated")])
            command.upgrade(config, "head")
            version, indexes, rows = state(c)
            assert version == "0002" and rows == [("node-c", "initiated")]
            assert "ix_analysis_hosts_host" not in indexes
            assert indexes["ix_analysis_hosts_fleet"][0] == "host"
    finally:
        engine.dispose()


@contextlib.contextmanager
def inherited_disposition(sig, handler):
    """What a process started inside inherits for `sig`: a shell's default, or the SIG_IGN of
    nohup (SIGHUP) or of a background job in a script (SIGINT), which the run of these tests may
    itself have inherited."""
    previous = signal.signal(sig, handler)
    try:
        yield
    finally:
        signal.signal(sig, previous)


def sighup_disposition(handler):
    return inherited_disposition(signal.SIGHUP, handler)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_sent_to_the_command_alone_stops_the_console(tmp_path, sig):
    # `kill PID` of `fr-analyze serve` (a supervisor, `docker stop` of a container whose first
    # process it is, `kill -INT` from a script) reaches the command only, not its process group:
    # the console it runs as its child must stop too, not go on serving as an orphan.
    with inherited_disposition(sig, signal.SIG_DFL):  # started from a shell
        server = start_server(tmp_path / "data")
    with server:
        console = server.console_pid()
        assert console != server.process.pid, "the CLI runs the console as its child"
        os.kill(server.process.pid, sig)
        server.process.wait(timeout=30)
        eventually(lambda: not _alive(console), "the console stops with the command", 30)
        with pytest.raises(requests.ConnectionError):
            requests.get(server.url + "/", timeout=5)


def test_a_console_started_under_nohup_keeps_serving_after_a_hangup(tmp_path):
    # `nohup fr-analyze serve &`: the hangup of the terminal it was started from is ignored, by
    # the command and so by the console it runs.
    with sighup_disposition(signal.SIG_IGN):
        server = start_server(tmp_path / "data")
    with server:
        os.kill(server.process.pid, signal.SIGHUP)
        time.sleep(1.0)
        assert server.process.poll() is None, server.log_text()
        assert requests.get(server.url + "/", timeout=TIMEOUT).status_code == 200
