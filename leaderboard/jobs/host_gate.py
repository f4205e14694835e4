"""A worker's host record and the profile check, taken when the worker starts, before it takes any job.

The judge reads the host (``python -m evaluator.cli host --gpus 0-3 --ranks 4 --gpu-model H200 --nvlink --json``,
evaluator/judge/hosts.py: GPU names, driver, torch / Triton / CUDA versions, the NVLink topology of the worker's GPUs);
the worker refuses to start for a CUDA profile its GPUs do not match (too few, another model, not linked by NVLink
where the profile says NVLink), and keeps the record: every result it stores carries it (runner.py, "host").
"""

from __future__ import annotations

import logging

from dramatiq.middleware import MiddlewareError

from leaderboard.jobs import gpus, judge_commands

log = logging.getLogger("leaderboard.jobs.actors")
# The feedback app's queues are its profile's slug behind this prefix (feedback/models.py); its runs use the same GPUs.
FEEDBACK_PREFIX = "feedback-"
_records: dict[str, dict] = {}  # per worker process, by the GPUs it was started for


class HostDoesNotMatchProfile(RuntimeError, MiddlewareError):
    """The worker's GPUs cannot serve a profile of a queue it consumes: it refuses to start rather than judge on
    hardware the profile does not describe. (A MiddlewareError: dramatiq's before_worker_boot logs any other exception
    and boots the worker anyway.)"""


def cuda_profiles(queues) -> list:
    """The CUDA hardware profiles among the queues a worker consumes (jobs' and feedback runs' queues alike)."""
    from leaderboard.catalogue.models import HardwareProfile

    slugs = {q[len(FEEDBACK_PREFIX) :] if q.startswith(FEEDBACK_PREFIX) else q for q in queues}
    return list(HardwareProfile.objects.filter(slug__in=slugs, device="cuda").order_by("slug"))


def _ask(profile=None) -> dict:
    args = ["--gpus", gpus.spec()] if gpus.spec() else []
    if profile is not None:
        args += ["--ranks", str(profile.world_size)]
        args += ["--gpu-model", profile.gpu_type] if profile.gpu_type else []
        args += ["--nvlink"] if profile.nvlink else []
        args += ["--shared-device"] if profile.shared_device else []
    return judge_commands.host_record(*args)


def check_host(queues, threads: int = 1) -> dict:
    """The host record of this worker, checked against every CUDA profile among ``queues``; HostDoesNotMatchProfile
    says which profile and why when one does not match, or that the host could not be read."""
    profiles = cuda_profiles(queues)
    pinned = gpus.spec()
    if pinned and profiles and threads > 1:
        raise HostDoesNotMatchProfile(
            f"refusing to start: a worker pinned to GPUs {pinned} runs one job at a time on "
            f"them, and this one has {threads} threads (start it with --threads 1)"
        )
    record = None
    for profile in profiles:
        try:
            record = _ask(profile)
        except judge_commands.JudgeCommandFailed as exc:  # unchecked is not matching
            raise HostDoesNotMatchProfile(
                f"refusing to start: queue {profile.slug} needs this worker's GPUs "
                f"checked, and the host could not be read: {exc}"
            ) from exc
        why = record.pop("refused", None)
        if why:
            raise HostDoesNotMatchProfile(
                f"refusing to start: queue {profile.slug} (W = {profile.world_size}"
                f"{' on one shared GPU' if profile.shared_device else ''}, "
                f"{profile.gpu_type or 'any GPU'}{', NVLink' if profile.nvlink else ''}) "
                f"cannot run on this worker's GPUs ({pinned or 'all'}): {why}"
            )
    if record is None:  # no CUDA profile to serve: the record is informative only, and never stops a CPU worker
        record = _record_or_why()
    _records[pinned] = record
    log.info(
        "host: %s, GPUs %s (%s), torch %s, CUDA %s",
        record.get("host"),
        record.get("visible") or "none",
        ", ".join(sorted({g.get("name", "?") for g in record.get("gpus") or []})) or "-",
        record.get("torch"),
        record.get("cuda"),
    )
    return record


def host_record() -> dict:
    """The record this worker took at boot; taken now when it did not boot (a job run outside a worker). Never fails:
    a record that cannot be read says why instead."""
    pinned = gpus.spec()
    if pinned not in _records:
        record = _record_or_why()
        if "error" in record:
            return record  # asked again for the next job
        _records[pinned] = record
    return _records[pinned]


def _record_or_why() -> dict:
    try:
        record = _ask()
    except judge_commands.JudgeCommandFailed as exc:
        log.warning("no host record: %s", exc)
        return {"error": str(exc)[:500], "visible": gpus.spec()}
    record.pop("refused", None)
    return record
