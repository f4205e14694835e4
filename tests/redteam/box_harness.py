"""Running code inside one real sandbox box without a whole judgement: the box's layers (evaluator/process/sandbox.py)
set up as a candidate group gets them, one process started through the same bwrap view, uid, namespaces and control
group, and what the host keeps afterwards (mounts, control groups, directories, processes) read back. Seconds per
test, where a judgement costs ten or more; the judge's own handling of each break is tested end to end beside."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time

from evaluator.process import boxes, cgroups, removal, sandbox

PYTHON = sys.executable


@contextlib.contextmanager
def live_box(memory_bytes: int | None = None, keep_workdir: bool = False):
    """A required sandbox with its scratch prepared; yields (box, start) where ``start(code)`` runs ``python -S -c
    code`` (``python_args`` instead of ``-S``) as the box's rank would and returns its Popen. Everything is closed and
    removed on the way out."""
    workdir = tempfile.mkdtemp(prefix="pkb-boxtest-")
    os.makedirs(os.path.join(workdir, "logs"))
    box = sandbox.Sandbox(enabled=True, required=True, world_size=1, memory_bytes=memory_bytes)
    started: list[subprocess.Popen] = []
    try:
        box.prepare(workdir)
        rank_dir = os.path.join(workdir, "rank0")
        os.makedirs(rank_dir)
        box.own(rank_dir)

        def start(code: str, *args: str, python_args: tuple = ("-S",), **extra_env) -> subprocess.Popen:
            argv = box.command([PYTHON, *python_args, "-c", code, *args], rank_dir, writable=[], readable=[])
            env = {"PATH": "/usr/bin:/bin", "HOME": rank_dir, "PYTHONDONTWRITEBYTECODE": "1", **extra_env}
            proc = subprocess.Popen(
                argv,
                preexec_fn=box.preexec(),
                pass_fds=box.pass_fds(),
                env=env,
                cwd=rank_dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            started.append(proc)
            return proc

        yield box, start
    finally:
        try:
            box.close()
        finally:
            for proc in started:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
                for stream in (proc.stdout, proc.stderr):
                    stream.close()
            if not keep_workdir:
                removal.remove_tree(workdir)


def private_boxes(monkeypatch, root: str, count: int) -> None:
    """Box ids from a root of the test's own, with uids and control group names no judge beside it uses (ids start
    at 0 in every root: the test must never reap or remove a running judge's box of the same id)."""
    monkeypatch.setenv("PKB_BOX_ROOT", root)
    monkeypatch.setenv("PKB_BOX_COUNT", str(count))
    monkeypatch.setattr(boxes, "UID_BASE", boxes.UID_BASE + 900_000)
    monkeypatch.setattr(boxes, "cgroup_name", lambda box_id: f"box-test-{os.getpid()}-{box_id}")


def run_in_box(code: str, timeout: float = 60, **kwargs) -> tuple[subprocess.CompletedProcess, dict]:
    """``code`` run to its end inside a fresh box; (its result, the box's notes and what it left: see leftovers)."""
    with live_box(**kwargs) as (box, start):
        proc = start(code)
        out, err = proc.communicate(timeout=timeout)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        where = {
            "id": box.box.id,
            "dir": box.box.dir,
            "scratch": box.scratch_root,
            "cgroup": box.cgroup.dirs,
            "uid": box.uid,
        }
    return done, where


def leftovers(where: dict) -> list[str]:
    """What the host still holds of a closed box: its mounts, control groups, directories, processes."""
    left = []
    points = removal.mount_points()
    for path in (where["dir"], where["scratch"]):
        left += [f"mount {p}" for p in points if p == path or p.startswith(path + "/")]
    left += [f"directory {d}" for d in (where["dir"], where["scratch"]) if os.path.lexists(d)]
    left += [f"cgroup {d}" for d in where["cgroup"].values() if os.path.isdir(d)]
    # A killed process of the box leaves the control group before its parent (the host's init, once the box's own
    # is gone) has reaped it: a second at most.
    wait_for(lambda: not processes_of_uid(where["uid"]), 5)
    left += [f"process {pid}" for pid in processes_of_uid(where["uid"])]
    if where["id"] in boxes.quarantined():
        left.append(f"quarantined box {where['id']}")
    return left


def processes_of_uid(uid: int) -> list[int]:
    """Every process of ``uid``, zombies included."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                for line in f:
                    if line.startswith("Uid:") and uid in [int(x) for x in line.split()[1:3]]:
                        found.append(int(name))
                        break
        except (OSError, ValueError):
            pass
    return found


def wait_for(predicate, timeout: float, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def layout_version() -> int:
    return cgroups.layout().version
