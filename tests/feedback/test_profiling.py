"""Profile mode: merging the ranks' Chrome traces (one process row per rank), the per-kernel summary (communication
vs compute, overlap) on hand-made traces, and end to end: the owner's button on the submission page queues a
profile run, the real judge records it on CPU gloo at W = 2 (``pkb eval --profile``), the merged trace downloads."""

import gzip
import json

import pytest

from evaluator.rank import trace_summary as profiling
from leaderboard.feedback import runner
from leaderboard.feedback.models import FeedbackRun


def X(name, ts, dur, tid=1, pid=100, cat="cpu_op", **extra):
    return dict({"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "cat": cat}, **extra)


def gpu_trace(shift=0.0):
    """Two iterations; in each, an NCCL kernel [0, 10) on stream 7 overlaps a GEMM [5, 20) on stream 9 (us)."""
    events = [{"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "python"}}]
    for i, base in enumerate((1000.0 + shift, 2000.0 + shift)):
        events.append(X(f"pkb_iter_{i}", base, 100, cat="user_annotation"))
        events.append(X("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", base + 10, 10, pid=0, tid=7, cat="kernel"))
        events.append(X("sm90_xmma_gemm_bf16bf16", base + 15, 15, pid=0, tid=9, cat="kernel"))
        events.append(X("Memcpy DtoD", base + 40, 2, pid=0, tid=9, cat="gpu_memcpy"))
        events.append({"ph": "s", "id": 5, "pid": 100, "tid": 1, "ts": base + 1, "name": "ac2g", "cat": "ac2g"})
    events.append(X("outside_the_window", 5000.0, 50, pid=0, tid=9, cat="kernel"))
    events.append({"ph": "X", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "x", "ts": 0, "dur": 9})
    return {"traceEvents": events}


def cpu_trace():
    """One iteration: aten::matmul [10, 60) containing aten::mm [12, 58); c10d::allreduce_ [60, 62) on the main
    thread; gloo:all_reduce [61, 90) on the gloo thread."""
    return {
        "traceEvents": [
            X("pkb_iter_0", 0, 100, cat="user_annotation"),
            X("aten::matmul", 10, 50),
            X("aten::mm", 12, 46),
            X("c10d::allreduce_", 60, 2),
            X("gloo:all_reduce", 61, 29, tid=2, cat="user_annotation"),
        ]
    }


def test_merge_gives_one_process_row_per_rank():
    merged = profiling.merge({"candidate": [gpu_trace(), gpu_trace(3.0)], "reference": [gpu_trace(1.0), None]})
    names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"}
    assert names == {0: "candidate rank 0", 1: "candidate rank 1", 1000: "reference rank 0", 1001: "reference rank 1"}
    pids = {e["pid"] for e in merged["traceEvents"]}
    assert pids == {0, 1, 1000, 1001} and "Spans" not in pids
    threads = {(e["pid"], e["args"]["name"]) for e in merged["traceEvents"] if e.get("name") == "thread_name"}
    assert (0, "stream 7") in threads and (0, "python") in threads
    flows = {e["id"] for e in merged["traceEvents"] if e.get("ph") == "s"}
    assert len(flows) == 3  # rank 0, rank 1 and reference rank 0 no longer share flow id 5
    assert min(e["ts"] for e in merged["traceEvents"] if e.get("ph") == "X") == 0.0


def test_gpu_summary_splits_communication_compute_memory_and_overlap():
    s = profiling.summarize_rank(gpu_trace(), iters=2)
    assert s["level"] == "device" and s["iterations"] == 2
    assert s["comm_ms"] == pytest.approx(0.010) and s["compute_ms"] == pytest.approx(0.015)
    assert s["memory_ms"] == pytest.approx(0.002)
    assert s["overlap_ms"] == pytest.approx(0.005) and s["exposed_comm_ms"] == pytest.approx(0.005)
    assert "outside_the_window" not in s["rows"]
    assert s["rows"]["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"]["category"] == "communication"


def test_cpu_summary_uses_self_time_of_nested_operators():
    s = profiling.summarize_rank(cpu_trace(), iters=1)
    assert s["level"] == "cpu"
    assert s["rows"]["aten::matmul"]["self_ms"] == pytest.approx(0.004)  # 50 - 46 us
    assert s["rows"]["aten::mm"]["self_ms"] == pytest.approx(0.046)
    assert s["comm_ms"] == pytest.approx(0.031) and s["compute_ms"] == pytest.approx(0.050)
    assert s["overlap_ms"] == pytest.approx(0.0)


def test_summary_table_and_text():
    summary = profiling.summarize({"candidate": [gpu_trace(), gpu_trace()], "reference": [None, None]}, 2)
    table = summary["roles"]["candidate"]["kernels"]
    assert table[0]["name"] == "sm90_xmma_gemm_bf16bf16" and table[0]["share"] == pytest.approx(0.15)
    assert summary["roles"]["candidate"]["mean"]["overlap_fraction_of_comm"] == pytest.approx(0.5)
    text = profiling.render(summary)
    assert "communication" in text and "reference: no trace" in text


@pytest.mark.django_db(transaction=True)
def test_profile_button_runs_the_real_judge_and_offers_the_merged_trace(owner, outsider, submit, client):
    submission = submit(owner, protocol="agentic_feedback")
    candidate = submission.candidates.get()
    client.force_login(owner)
    page = client.get(submission.get_absolute_url()).content.decode()
    assert f'<option value="{candidate.pk}">' in page
    response = client.post(f"/submissions/{submission.pk}/profile", {"candidate": candidate.pk})
    assert response.status_code == 302
    run = FeedbackRun.objects.get()
    assert run.kind == "profile" and run.queue_name == "feedback-cpu-gloo"
    assert runner.run_feedback(run.pk, "test-worker") == "done"
    run.refresh_from_db()
    assert run.verdict == "correct" and run.document["profile"]["summary"] == run.summary
    trace = json.loads(gzip.decompress(bytes(client.get(f"/feedback/runs/{run.pk}/trace.json.gz").content)))
    rows = sorted(e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name")
    assert rows == ["candidate rank 0", "candidate rank 1", "reference rank 0", "reference rank 1"]
    candidate_side = run.summary["roles"]["candidate"]
    assert candidate_side["level"] == "cpu" and len(candidate_side["ranks"]) == 2
    kinds = {k["name"]: k["category"] for k in candidate_side["kernels"]}
    assert kinds.get("gloo:all_reduce") == "communication" and candidate_side["mean"]["comm_ms"] > 0
    detail = client.get(f"/feedback/runs/{run.pk}/").content.decode()
    assert "gloo:all_reduce" in detail and "Download the merged trace" in detail
    assert "trace.json.gz" in client.get(submission.get_absolute_url()).content.decode()
    client.force_login(outsider)  # owner only
    assert client.get(f"/feedback/runs/{run.pk}/trace.json.gz").status_code == 404
    assert client.post(f"/submissions/{submission.pk}/profile", {"candidate": candidate.pk}).status_code == 404
