"""What a worker does with one job id: claim, run the judge in a subprocess, heartbeat, store the document.

The candidate's code never enters this process: it is written to a private directory and handed to
``python -m evaluator.cli eval`` (the trusted judge; the job's JudgeRequest, evaluator/contract/requests.py), which runs
it in its own rank processes. A judge that exits non-zero, writes unreadable JSON, hangs past the job's timeout, or dies
with this worker is an ``infra_error``: retried, never scored against the candidate, refunded when retries run out. With
``PKB_WARM_SPARES`` the same request goes to this thread's long-lived judge instead (leaderboard/jobs/judge_service.py),
under the same rules.
"""

from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

from evaluator.contract.schema import INFRA_ERROR, VERDICTS, JudgeRequest
from leaderboard.jobs import host_gate, judge_process, judge_requests, judge_service, lease, workspace
from leaderboard.jobs import services as jobs_services
from leaderboard.jobs.judge_process import WORKER_ID, close_old_connections

log = logging.getLogger("leaderboard.jobs.runner")
TAIL = 8000


def run_job(job_id: int, worker: str = WORKER_ID) -> str:
    """Evaluate one job if this worker can claim it. Returns what happened (for logs and tests)."""
    job = jobs_services.job_claim(job_id, worker)
    if job is None:
        return "not_claimed"
    log.info("job %s: claimed by %s (attempt %s, run %s)", job.pk, worker, job.attempts, job.run)
    workdir = Path(tempfile.mkdtemp(prefix=f"job{job.pk}-", dir=judge_process.work_root()))
    try:
        document, error = _judge(job, workdir, worker)
        close_old_connections()
        if document is None:  # the judge produced nothing: the platform's failure, on this host
            document = {
                "verdict": INFRA_ERROR,
                "message": error["message"],
                "flags": [],
                "logs": error.get("logs") or [],
                "environment": {},
            }
        # Where it ran: the worker's GPUs, driver and versions as it recorded them at boot (host_gate.py).
        document["host"] = host_gate.host_record()
        stored = jobs_services.job_finish(job.pk, worker, document)
        if stored is None:
            return "lease_lost"
        return "infra_error" if error is not None else "done"
    finally:
        workspace.remove(workdir)  # whatever the candidate left there: never raises


def judge_request(job, candidate_path: Path, out_path: Path) -> JudgeRequest:
    """What the judge is asked for this job (evaluator/contract/requests.py): the profile's world, trials and pairs,
    what every request takes of a profile (jobs/judge_requests.py: the whole sandbox, fail closed: a stranger's code
    never runs in a weaker one), and the hidden checks of a rankable run."""
    profile = job.profile
    return JudgeRequest(
        job.candidate.problem.stem,
        str(candidate_path),
        world_size=profile.world_size,
        trials=profile.trials,
        json_out=str(out_path),
        pairs=profile.timing_pairs if profile.timing_pairs > 1 else 1,
        **judge_requests.profile_fields(profile),
        **hidden_checks(job),
    )


def judge_command(job, candidate_path: Path, out_path: Path) -> list[str]:
    """The judge's command line for this job: its request's (JudgeRequest.command)."""
    return judge_request(job, candidate_path, out_path).command()


def hidden_checks(job) -> dict:
    """Hidden checks for a job whose result can rank (its profile is ranked; a private submission may still be
    published): a trial at a shape the judge draws, and a correctness-only run at a world size the candidate cannot
    predict, which the judge draws too (``auto``: among those the problem allows and its host can run, from the OS's
    randomness; none where there is no other: evaluator/judge/hidden_world.py). None with ``PKB_HIDDEN_CHECKS`` off or
    on unranked profiles: the site's policy."""
    if not hidden_checks_apply(job.profile):
        return {}
    return {"hidden_shape": True, "hidden_world_size": JudgeRequest.HIDDEN_WORLD_AUTO}


def hidden_checks_apply(profile) -> bool:
    """Whether jobs on ``profile`` get the hidden checks (the problem page says so from here too)."""
    # A shared-device profile never ranks, but its hidden world sizes are what it is for.
    return bool(settings.PKB_HIDDEN_CHECKS and (profile.ranked or profile.shared_device))


def _judge(job, workdir: Path, worker: str) -> tuple[dict | None, dict | None]:
    candidate = job.candidate
    path = workdir / Path(candidate.filename).name
    path.write_text(candidate.code, encoding="utf-8")
    out = workdir / "result.json"
    request = judge_request(job, path, out)
    started = time.monotonic()
    heartbeat = lambda: jobs_services.job_heartbeat(job.pk, worker)  # noqa: E731
    deadline = started + settings.PKB_JOB_TIMEOUT_SECONDS
    outcome, returncode = judge_service.launch(
        request, workdir, heartbeat, deadline, f"job {job.pk}", warm_spares=settings.PKB_WARM_SPARES
    )
    tail = (workdir / "judge.log").read_bytes()[-TAIL:].decode("utf-8", "replace")
    logs = [{"role": "judge", "rank": None, "stdout": tail, "stderr": ""}]
    if outcome == "lease_lost":
        return None, {"message": "lease lost while judging", "logs": logs}
    if outcome == "timeout":
        return None, {"message": f"judge exceeded the job timeout ({settings.PKB_JOB_TIMEOUT_SECONDS} s)", "logs": logs}
    if returncode != 0:
        return None, {"message": f"judge exited with status {returncode}", "logs": logs}
    try:
        document = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, {"message": f"judge wrote no readable result: {exc}", "logs": logs}
    if not isinstance(document, dict) or document.get("verdict") not in VERDICTS:
        return None, {"message": "judge result has no known verdict", "logs": logs}
    document.setdefault("wall_s", round(time.monotonic() - started, 3))
    return document, None


def recover_dead_workers(boxes: bool = False) -> dict:
    """What a worker that died without cleaning up left on this host: its processes and scratch, and its leases
    (ended now, so its jobs are re-queued at once instead of when their leases expire); with ``boxes`` (at boot),
    the sandbox boxes dead judges left or that were quarantined. Run at boot and by the reaper."""
    return workspace.recover_dead(settings.PKB_WORK_DIR, release=lease.release_leases_of, boxes=boxes)


# --- the reaper, run periodically inside workers and by `manage.py reap_jobs` --------------------------------------


class Reaper(threading.Thread):
    """Calls ``reap`` (jobs_services.jobs_reap unless given: the feedback worker passes its own) every
    PKB_REAPER_INTERVAL_SECONDS until stopped; a failed pass is logged and the next one runs as planned."""

    def __init__(
        self,
        interval: float | None = None,
        reap=None,
        name: str = "pkb-reaper",
        logger: logging.Logger | None = None,
        what: str = "reaper",
    ):
        super().__init__(name=name, daemon=True)
        self.interval = interval or settings.PKB_REAPER_INTERVAL_SECONDS
        self.reap = reap or (lambda: jobs_services.jobs_reap())  # looked up at each pass, as before
        self.log = logger or log
        self.what = what
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                recover_dead_workers()
                self.reap()
            except Exception:
                self.log.exception("%s pass failed", self.what)
            finally:
                # Not held idle through the interval: an idle session per worker is of no use between passes, and
                # one left open holds the database (a test database then cannot be dropped at the end of a run).
                connection.close()
            self.stopped.wait(self.interval)

    def stop(self) -> None:
        self.stopped.set()
