"""What comes back from Dask workers is input like any file: a damaged summary is its file's
rejection, named, and never an exception from the package (the client here runs the workers'
function in-process and hands back what a damaged or hostile worker would)."""

import json
import os
import subprocess

import fr_analyze


class DamagingClient:
    """A stand-in for dask.distributed.Client: runs each task here, then `damage` rewrites the
    summaries of the files `victim` names."""

    def __init__(self, victim, damage):
        self.victim, self.damage = victim, damage

    def map(self, summarize, chunks, pure=False):
        results = []
        for tasks in chunks:
            summaries = summarize(tasks)
            results.append([self.damage(s) if os.path.basename(t[0]) == self.victim else s
                            for t, s in zip(tasks, summaries)])
        return results

    def gather(self, futures):
        return futures


def test_a_summary_with_invalid_utf8_is_its_files_rejection(cli, tmp_path):
    job = tmp_path / "job"
    subprocess.run([cli, "simulate", str(job), "--fault", "stuck_before_op", "--fault-rank", "5"],
                   check=True, capture_output=True)
    local = fr_analyze.analyze(str(job))
    # A frame name of rank 2's stacks with a byte that is not UTF-8.
    client = DamagingClient("nccl_trace_rank_2",
                            lambda summary: summary.replace(b"train_step", b"train\xfdstep"))
    report = fr_analyze.analyze(str(job), client=client)
    rejected = report.trace.rejected
    assert [(os.path.basename(r.path), r.rank) for r in rejected] == [("nccl_trace_rank_2", 2)]
    assert str(job / "nccl_trace_rank_2") in rejected[0].error
    assert "'strings'" in rejected[0].error
    assert report.inputs.files_rejected[0].path == str(job / "nccl_trace_rank_2")
    assert report.verdict.culprit_ranks == local.verdict.culprit_ranks == [5]
    json.loads(report.to_json())
    str(report)
