"""What every request the site sends the judge takes from a hardware profile and the settings: one place for the job
runner (jobs/runner.py), the feedback runner (feedback/runner.py) and the build stage (jobs/build_stage.py), so a
profile is judged the same way whichever of them asks (evaluator/contract/requests.py, JudgeRequest and
PrebuildRequest).
"""

from __future__ import annotations

from django.conf import settings


def sandbox_required() -> bool:
    """Fail closed: a stranger's code runs in the whole sandbox or not at all (``--require-sandbox``), unless the
    deployment switched the sandbox off (``PKB_SANDBOX``, read once into settings.PKB_SANDBOX_OFF)."""
    return not settings.PKB_SANDBOX_OFF


def reduced_for(profile, device: str | None = None) -> bool:
    """Whether jobs on ``profile`` are judged at the CPU development shapes (``--reduced``: the problems whose spec
    fixes sizes too large for a CPU world shrink them, their docstrings say how): CPU profiles only."""
    return (device or profile.device) == "cpu"


def profile_fields(profile, device: str | None = None) -> dict:
    """A JudgeRequest's fields that follow from ``profile``: its device (``device``: a run's own record of it, where
    the run keeps one), the CPU shapes, NVLink multicast, a shared-device world, and the whole sandbox."""
    device = device or profile.device
    return {
        "device": device,
        "reduced": reduced_for(profile, device),
        "multicast_allowed": profile.multicast_allowed,
        "shared_device": profile.shared_device,
        "sandbox_required": sandbox_required(),
    }
