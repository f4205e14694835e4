"""What the host allows a sandbox, found once per judge process: whether a rank can start inside the bwrap view, and,
without it, whether an unprivileged uid can reach the interpreter and the repository. Each probe runs in a box of its
own (evaluator/process/boxes.py), like any job, so a judge starting beside it is never touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

from evaluator.process import boxes, bwrap, processes
from evaluator.process.environment import PKB_UTILS, REPO_ROOT

# Checks, as the candidate user, that everything a rank needs is readable (interpreter, stdlib, torch, this repo):
# the uid layer without the filesystem view, which then reaches these through the host's own directories.
_ACCESS_PROBE = (
    "import os, sys\n"
    "def ok(p):\n"
    "    return os.access(p[3:], os.R_OK | os.W_OK) if p.startswith('rw:') else os.access(p, os.R_OK)\n"
    "print('\\n'.join(p for p in sys.argv[1:] if not ok(p)))"
)


def filesystem_view(cache: dict) -> str | None:
    """None if candidate ranks can start inside a bwrap view on this host; else the reason (cached per process).
    The probe runs in a box of its own, like any job: a judge starting beside it is never touched."""
    if "view" not in cache:
        box = boxes.acquire()
        scratch = tempfile.mkdtemp(prefix="pkb-view-probe-")
        try:
            cache["view"] = bwrap.works(box.uid, scratch, etc_dir=box.etc)
        finally:
            processes.reap(box.uid, None)
            box.release()
            shutil.rmtree(scratch, ignore_errors=True)
    return cache["view"]


def user_access(cache: dict, uid: int) -> str | None:
    """None if an unprivileged uid can run the rank worker with this interpreter; else the reason (cached)."""
    if "result" in cache:
        return cache["result"]
    import torch

    paths = [
        os.path.realpath(sys.executable),
        os.path.dirname(os.__file__),
        os.path.dirname(torch.__file__),
        os.path.join(REPO_ROOT, "evaluator", "rank", "worker.py"),
        os.path.join(REPO_ROOT, "problems", "__init__.py"),
        PKB_UTILS,
    ]
    # GPU device nodes (present on GPU hosts only): the candidate's uid must be able to open them.
    paths += [
        "rw:" + os.path.join("/dev", name)
        for name in ("nvidiactl", "nvidia-uvm", "nvidia0")
        if os.path.exists(os.path.join("/dev", name))
    ]
    try:
        out = subprocess.run(
            [sys.executable, "-S", "-c", _ACCESS_PROBE, *paths],
            preexec_fn=processes.as_user(uid),
            env={},
            capture_output=True,
            text=True,
            timeout=60,
        )
        unreadable = [p for p in out.stdout.split("\n") if p]
        if out.returncode != 0:
            result = f"an unprivileged user cannot run {sys.executable} (status {out.returncode})"
        elif unreadable:
            result = f"not readable by an unprivileged user: {', '.join(unreadable)}"
        else:
            result = None
    except (OSError, subprocess.SubprocessError) as exc:
        result = f"an unprivileged user cannot run {sys.executable}: {exc}"
    cache["result"] = result
    return result
