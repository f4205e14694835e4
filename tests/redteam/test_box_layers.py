"""Each layer of the box pinned alone (issue 45, item 9): every test here fails when its one layer is removed (the
docstring says which line), whatever the other layers do. v1 and v2 read their own files (cgroups.BoxCgroup)."""

import os
import signal
import subprocess
import time

import pytest

from evaluator.process import boxes
from tests.redteam.box_harness import live_box, private_boxes, processes_of_uid, wait_for
from tests.redteam.harness import requires_root


@requires_root
def test_the_box_id_lock_refuses_a_second_holder(monkeypatch, tmp_path):
    """With one box id allowed, a second acquire while the first is held refuses (the flock in boxes.acquire); once
    released, the id is free again."""
    private_boxes(monkeypatch, str(tmp_path / "boxes"), 1)
    first = boxes.acquire()
    try:
        with pytest.raises(boxes.BoxesExhausted):
            boxes.acquire()
    finally:
        first.release()
    again = boxes.acquire()
    assert again.id == first.id
    again.release()


def _read_int(path: str) -> int:
    with open(path) as f:
        return int(f.read().strip())


HOG = r"""
import sys
hold = []
while True:
    block = bytearray(16 * 2**20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    hold.append(block)
    print(len(hold) * 16, flush=True)
"""


@requires_root
def test_the_memory_and_pids_limits_are_the_kernels_and_the_box_kills_its_own_hog():
    """The limits as written (BoxCgroup._limit), read back from the live box; a hog's peak stays under the memory
    limit, and the kill is the box's own OOM (its group counts it; the host's OOM killer would not)."""
    limit = 384 * 2**20
    with live_box(memory_bytes=limit) as (box, start):
        group = box.cgroup
        memory_file = "memory.max" if group.v2 else "memory.limit_in_bytes"
        assert _read_int(group._file("memory", memory_file)) == limit
        assert _read_int(group._file("pids", "pids.max")) == box.pids_max
        began = time.monotonic()
        proc = start(HOG)
        out, _ = proc.communicate(timeout=120)
        # cgroup v1 kills the hog alone and bwrap reports its child's kill (128 + 9); v2's memory.oom.group, which the
        # box sets, kills every process of the box at once, bwrap with them (-9). Either way the kill is the box's own
        # (its group counts it, below), never the host's OOM killer.
        assert proc.returncode in (128 + signal.SIGKILL, -signal.SIGKILL), (proc.returncode, out[-200:])
        assert time.monotonic() - began < 60
        assert group.oom_kills() >= 1 and box.out_of_memory()
        peak = group.memory_peak()
        assert peak is not None and peak <= limit, peak
        assert int(out.split()[-1]) * 2**20 < limit


ORPHANS = r"""
import os, sys, time
for _ in range(40):
    if os.fork() == 0:
        if os.fork() == 0:
            os._exit(0)  # the grandchild exits at once: an orphan, reparented to the box's pid 1
        time.sleep(0.2)
        os._exit(0)
time.sleep(1.5)
print("orphans gone", flush=True)
time.sleep(60)  # stay alive: the count below is taken mid-job
"""


def _zombie_children_of(parent: int) -> list[int]:
    """Zombies whose parent is ``parent``, from /proc (a zombie has left its control group's list already)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as f:
                state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
            if name.isdigit() and state == "Z" and int(ppid) == parent:
                found.append(int(name))
        except (OSError, ValueError, IndexError):
            pass
    return found


@requires_root
def test_the_boxs_init_reaps_orphans_during_the_job():
    """Zombies counted inside the box mid-job, after its orphans exit: 0 (box_init.init's waitpid loop; without it
    every orphan stays a zombie of pid 1 until the box dies). The job's own children, which it never waits for,
    are its own zombies and are not counted: only those whose parent is the box's pid 1."""
    with live_box() as (box, start):
        rank = start(ORPHANS)
        assert wait_for(lambda: len(box.cgroup.pids()) >= 3, 30)
        line = rank.stdout.readline()
        assert "orphans gone" in line
        # Orphans reach the box's pid 1 as zombies; it reaps each on its SIGCHLD (a loaded host may take a moment).
        assert wait_for(lambda: _zombie_children_of(box.init_pid) == [], 5), _zombie_children_of(box.init_pid)
        assert rank.poll() is None  # mid-job


SLEEPER = ["/bin/sleep", "300"]


@requires_root
def test_the_end_of_job_cgroup_kill_alone_leaves_no_process():
    """A process in the box's control group that neither the pid namespace nor the uid sweep reaches (here: root,
    outside the namespace, in a session of its own), with the namespace holder already gone: cleanup() leaves no
    pid (BoxCgroup.kill in Sandbox.cleanup; without it the process lives on)."""
    with live_box() as (box, _start):
        join = box.cgroup.joiner()
        stray = subprocess.Popen(SLEEPER, preexec_fn=join, start_new_session=True)
        try:
            assert wait_for(lambda: stray.pid in box.cgroup.pids(), 10)
            box._stop_holder()  # the namespace holder (and the box's pid 1) gone first
            assert stray.poll() is None  # not in the pid namespace: still alive
            box.cleanup()
            assert wait_for(lambda: stray.poll() is not None, 10)
            assert box.cgroup.pids() == []
        finally:
            if stray.poll() is None:
                stray.kill()
            stray.wait()
        assert processes_of_uid(box.uid) == []
    assert not os.path.exists(f"/proc/{stray.pid}") or open(f"/proc/{stray.pid}/stat").read().split()[2] == "Z"
