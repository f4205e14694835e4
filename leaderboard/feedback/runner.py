"""The worker side of one feedback or profile run: claim, run the trusted judge in a subprocess with the run's public
seeds, heartbeat, store the feedback. The same rules as leaderboard/jobs/runner.py (whose judge environment it reuses):
the candidate's code never enters this process, and a judge that fails is an infra_error, never a verdict.
"""

from __future__ import annotations

import gzip
import json
import logging
import tempfile
import time
from pathlib import Path

from evaluator.contract.schema import VERDICTS, JudgeRequest
from leaderboard.feedback import conf, seeds, services
from leaderboard.jobs import host_gate, judge_process, judge_requests, judge_service, workspace

log = logging.getLogger("leaderboard.feedback")
TAIL = 8000
MAX_TRACE_GZ_BYTES = 48 * 2**20


def run_feedback(run_id: int, worker: str = judge_process.WORKER_ID) -> str:
    run = services.run_claim(run_id, worker)
    if run is None:
        return "not_claimed"
    workdir = Path(tempfile.mkdtemp(prefix=f"feedback{run.pk}-", dir=judge_process.work_root()))
    try:
        outcome, payload = _judge(run, workdir, worker)
        judge_process.close_old_connections()
        if outcome == "document":
            payload["host"] = host_gate.host_record()  # where it ran, as every job's result says (jobs/runner.py)
            trace = _trace(run, workdir)
            stored = services.run_finish(run.pk, worker, payload, trace)
            return (
                "done"
                if stored is not None and stored.status == "done"
                else ("infra_error" if stored is not None else "lease_lost")
            )
        if outcome == "refused":
            return "refused" if services.run_refused(run.pk, worker, payload) else "lease_lost"
        stored = services.run_infra_error(run.pk, worker, payload)
        return "infra_error" if stored is not None else "lease_lost"
    finally:
        workspace.remove(workdir)  # whatever the candidate left there (the runner's own rule)


def judge_request(run, candidate_path: Path, out_path: Path, profile_dir: Path) -> JudgeRequest:
    """Always the run's public seeds (checked here, and again by the judge); never a leaderboard option."""
    if not run.seeds or not all(seeds.is_public(s) for s in run.seeds):
        raise ValueError(f"feedback run {run.pk} has non-public seeds")
    profiled = run.kind == run.PROFILE
    return JudgeRequest(
        run.problem.stem,
        str(candidate_path),
        world_size=run.world_size,
        trials=run.trials,
        seeds=tuple(run.seeds),
        M=run.M,
        N=run.N,
        json_out=str(out_path),
        timing=not profiled and not run.profile.shared_device,
        profile_dir=str(profile_dir) if profiled else None,
        # As every job's (jobs/judge_requests.py): the whole sandbox or no run; the run's own record of the device.
        **judge_requests.profile_fields(run.profile, device=run.device),
    )


def judge_command(run, candidate_path: Path, out_path: Path, profile_dir: Path) -> list[str]:
    """The judge's command line for this run: its request's (JudgeRequest.command)."""
    return judge_request(run, candidate_path, out_path, profile_dir).command()


def _judge(run, workdir: Path, worker: str) -> tuple[str, object]:
    path = workdir / Path(run.filename).name
    path.write_text(run.code, encoding="utf-8")
    out = workdir / "result.json"
    request = judge_request(run, path, out, workdir / "profile")
    started = time.monotonic()
    outcome, returncode = judge_service.launch(
        request,
        workdir,
        lambda: services.run_heartbeat(run.pk, worker),
        started + conf.get("PKB_FEEDBACK_TIMEOUT_SECONDS"),
        f"feedback run {run.pk}",
    )
    tail = (workdir / "judge.log").read_bytes()[-TAIL:].decode("utf-8", "replace")
    if outcome == "lease_lost":
        return "infra", "lease lost while judging"
    if outcome == "timeout":
        return "infra", f"judge exceeded the feedback timeout ({conf.get('PKB_FEEDBACK_TIMEOUT_SECONDS')} s)"
    if returncode == 2:
        return "refused", f"the judge refused the run: {tail.strip()[-2000:]}"
    if returncode != 0:
        return "infra", f"judge exited with status {returncode}: {tail.strip()[-1500:]}"
    try:
        document = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return "infra", f"judge wrote no readable result: {exc}"
    if not isinstance(document, dict) or document.get("verdict") not in VERDICTS:
        return "infra", "judge result has no known verdict"
    document.setdefault("wall_s", round(time.monotonic() - started, 3))
    return "document", document


def _trace(run, workdir: Path) -> bytes | None:
    """The merged trace of a profile run, gzip-compressed for the database (workers write nothing else anywhere)."""
    path = workdir / "profile" / "trace.json"
    if run.kind != run.PROFILE or not path.is_file():
        return None
    data = gzip.compress(path.read_bytes(), compresslevel=6)
    return data if len(data) <= MAX_TRACE_GZ_BYTES else None
