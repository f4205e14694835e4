"""Which jobs go through the build stage first, and on which queue (the stage itself: leaderboard/jobs/build_stage.py).

``PKB_BUILD_STAGE`` says for which profiles: ``cuda`` (the default: a GPU job would otherwise hold its GPUs while nvcc
runs), ``all`` (CPU profiles too: their jobs hold no scarce device while compiling, so the stage only adds a second
judge start there; the tests use it, with C++ extensions built on CPU), ``off``. Of those profiles' files, only one
that names a compile call is sent to the stage; the others are ``skipped`` and go straight to the profile's queue.
The scan is a shortcut, never a judgement: a build it misses is made in the file's job, as without a stage.
"""

from __future__ import annotations

from django.conf import settings

from evaluator.contract.schema import has_compile_call

BUILD_QUEUE_PREFIX = "build-"
STAGE_MODES = ("cuda", "all", "off")


def stage_applies(profile) -> bool:
    mode = settings.PKB_BUILD_STAGE
    return mode == "all" or (mode == "cuda" and profile.device == "cuda")


def build_queue(profile) -> str:
    """The queue of a profile's builds: ``build-<profile>`` (its jobs' own queue is the profile's slug)."""
    return f"{BUILD_QUEUE_PREFIX}{profile.queue_name}"


def is_build_queue(name: str) -> bool:
    return name.startswith(BUILD_QUEUE_PREFIX)


def first_build_status(profile, code: str) -> str:
    """A new run's build state: "" (no stage for this profile), "queued" (waiting for its build) or "skipped"."""
    from leaderboard.jobs.models import EvaluationJob

    if not stage_applies(profile):
        return ""
    return EvaluationJob.BUILD_QUEUED if has_compile_call(code) else EvaluationJob.BUILD_SKIPPED
