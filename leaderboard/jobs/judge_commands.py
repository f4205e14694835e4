"""The judge's helper commands, run as subprocesses like its ``eval`` (leaderboard/jobs/runner.py): the site imports
nothing of the judge but ``evaluator.contract.schema`` (tests/test_layers.py), so what the worker needs from the judge's
process plumbing it asks the judge's command line for, as JSON.

    host_support()      ``python -m evaluator.cli sandbox-check --json`` (evaluator/process/sandbox.py, host_support)
    sweep_orphans(DIR)  ``python -m evaluator.cli sweep DIR --json`` (evaluator/process/processes.py, sweep_orphans)
    host_record(...)    ``python -m evaluator.cli host --gpus 0-3 ... --json`` (evaluator/judge/hosts.py)

Each runs with the worker's GPUs only (leaderboard/jobs/gpus.py), as its judges do.
"""

from __future__ import annotations

import json
import os
import subprocess

from django.conf import settings

from evaluator.contract.schema import JUDGE
from leaderboard.jobs import gpus

TIMEOUT_S = 120


class JudgeCommandFailed(RuntimeError):
    pass


def call(*args: str, timeout: float = TIMEOUT_S, statuses: tuple[int, ...] = (0,)) -> dict:
    """Run one judge command with ``--json`` and return its document; JudgeCommandFailed when it fails (an exit
    status not in ``statuses``)."""
    env = gpus.pin(dict(os.environ))
    env.pop("PKB_SCRATCH", None)  # the sweep kills processes whose PKB_SCRATCH lies under its directory
    env["PYTHONPATH"] = str(settings.BASE_DIR)
    try:
        done = subprocess.run(
            [*JUDGE, *args, "--json"],
            cwd=str(settings.BASE_DIR),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise JudgeCommandFailed(f"{' '.join(args[:1])}: {exc}") from exc
    if done.returncode not in statuses:
        raise JudgeCommandFailed(f"{' '.join(args[:1])} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    try:
        return json.loads(done.stdout)
    except ValueError as exc:
        raise JudgeCommandFailed(f"{' '.join(args[:1])}: unreadable output {done.stdout[:200]!r}") from exc


def host_support() -> dict:
    """What a candidate sandbox on this host would be: ``complete``, ``summary``, ``missing`` and one line per layer."""
    return call("sandbox-check")


def sweep_orphans(root: str, remove: bool = False) -> dict:
    """Kill what a killed judge left under ``root`` and unmount its scratch; with ``remove``, remove ``root`` too,
    whatever a candidate made of it (depth, modes, mounts). Returns {"killed_outliving", "removed_files", and as
    root "boxes_cleared", "boxes_quarantined" (box ids whose clean-up failed: no judge uses them until a sweep finds
    them clean), "unmounted"; "left" with ``remove``}."""
    return call("sweep", str(root), *(["--remove"] if remove else []))


def host_record(*args: str) -> dict:
    """The host as a worker for ``--gpus`` sees it, and with ``--ranks`` (``--gpu-model``, ``--nvlink``) whether it can
    serve that profile: ``refused`` says why not (the command exits 1 then, still printing the record)."""
    return call("host", *args, statuses=(0, 1))
