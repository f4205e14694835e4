"""Reads of the jobs app."""

from __future__ import annotations

from leaderboard.jobs.models import EvaluationJob


def jobs_waiting_count(submitter) -> int:
    """The submitter's evaluation jobs queued or running (the concurrent quota counts them: accounts.register_waiting,
    registered by the jobs app's AppConfig.ready)."""
    return EvaluationJob.objects.filter(
        submitter=submitter, status__in=(EvaluationJob.QUEUED, EvaluationJob.RUNNING)
    ).count()
