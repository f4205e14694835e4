"""Clean-up that a candidate cannot stop (issue 45, items 4 and 5): whatever shape it leaves its scratch in, however
it forks, and whether or not its box can be frozen, the box closes with nothing left on the host (mounts, control
groups, directories, processes), in bounded time, and what it did is its own verdict. docs/threat-model.md, "The box's
clean-up and limits"."""

import os
import random
import subprocess
import sys
import time

import pytest

from evaluator.process import boxes, cgroups, removal
from evaluator.process.protocol import CandidateFault
from tests.redteam.box_harness import leftovers, live_box, private_boxes, processes_of_uid, wait_for
from tests.redteam.harness import CANDIDATES, requires_root

# A 5,000-deep chain of directories (deeper than Python's recursion limit), 20,000 files, mode 000 directories, in
# the scratch (the rank's working directory) and in the box's /tmp.
SHAPES = r"""
import os
def chain(top, depth):
    fd = os.open(top, os.O_RDONLY)
    for i in range(depth):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)
for top in (".", "/tmp"):
    chain(top, 5000)
    os.makedirs(top + "/many")
    for i in range(10000):
        open(f"{top}/many/{i}", "w").close()
    os.makedirs(top + "/locked/inner")
    os.chmod(top + "/locked/inner", 0)
    os.chmod(top + "/locked", 0)
print("shaped", flush=True)
"""


def _deep_tree(top: str, depth: int = 5000, files: int = 2000) -> None:
    os.makedirs(top)
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)
    os.makedirs(os.path.join(top, "many"))
    for i in range(files):
        open(os.path.join(top, "many", str(i)), "w").close()
    os.makedirs(os.path.join(top, "locked", "inner"))
    os.chmod(os.path.join(top, "locked", "inner"), 0)
    os.chmod(os.path.join(top, "locked"), 0)


@requires_root
def test_a_deep_wide_locked_scratch_leaves_nothing_once_the_box_closes():
    began = time.monotonic()
    with live_box(keep_workdir=True) as (box, start):
        proc = start(SHAPES)
        out, err = proc.communicate(timeout=120)
        assert "shaped" in out, err[-2000:]
        where = {
            "id": box.box.id,
            "dir": box.box.dir,
            "scratch": box.scratch_root,
            "cgroup": box.cgroup.dirs,
            "uid": box.uid,
        }
    # The box closed: its /tmp and the group's scratch were tmpfs mounts, detached with it; what the judge then
    # removes of the group's directory is the disk's shallow copy (shutil.rmtree, as the judge does, succeeds).
    points = removal.mount_points()
    assert not [p for p in points if p.startswith(where["scratch"]) or p.startswith(where["dir"])]
    assert os.listdir(where["scratch"]) == ["logs"]  # the judge's logs, on the disk; the rest was the tmpfs
    import shutil

    shutil.rmtree(where["scratch"])
    assert leftovers(where) == []
    assert time.monotonic() - began < 90


@requires_root
def test_the_iterative_removal_takes_any_tree_on_disk(tmp_path):
    """The worker's sweep and a judge without a scratch mount remove a candidate's tree from the disk: 5,000 deep,
    mode 000, a mount inside. shutil.rmtree on the same shape raises RecursionError (the break this replaces)."""
    control = str(tmp_path / "control")
    _deep_tree(control, depth=1200, files=10)  # past Python's recursion limit (1,000)
    with pytest.raises(RecursionError):
        import shutil

        shutil.rmtree(control, ignore_errors=True)
    top = str(tmp_path / "tree")
    _deep_tree(top, files=1000)
    os.makedirs(os.path.join(top, "mnt"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "pkb-test", os.path.join(top, "mnt")], check=True)
    began = time.monotonic()
    report = removal.remove_tree(top)
    assert report == {"removed": report["removed"], "unmounted": 1, "left": False, "error": None}, report
    assert report["removed"] >= 5000 + 1000
    assert not os.path.lexists(top)
    assert not [p for p in removal.mount_points() if p.startswith(top)]
    assert time.monotonic() - began < 30
    assert removal.remove_tree(control)["left"] is False


@requires_root
def test_the_runners_finally_and_the_boot_sweep_survive_a_deep_tree(tmp_path):
    """leaderboard/jobs/workspace.py: remove (the runner's ``finally``) and recover_dead (a worker's boot sweep of a
    dead worker's directory) through the judge's ``pkb sweep --remove``."""
    from leaderboard.jobs import workspace

    job = tmp_path / "job1-x"
    _deep_tree(str(job / "cand"), depth=2000, files=10)  # past the recursion limit, as the 5,000 above
    workspace.remove(job)
    assert not job.exists()

    root = tmp_path / "work"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; from leaderboard.jobs import workspace; "
            f"workspace.claim({str(root)!r}, 'host:9:dead'); os._exit(0)",
        ],
        check=True,
        env=dict(os.environ, DJANGO_SETTINGS_MODULE="leaderboard.settings_test"),
    )
    dead = next(p for p in root.iterdir() if p.name.endswith("dead"))
    _deep_tree(str(dead / "job2-y" / "cand"), depth=2000, files=10)
    mounted = dead / "job2-y" / "cand" / "mnt"
    mounted.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "pkb-test", str(mounted)], check=True)
    report = workspace.recover_dead(root)
    assert report["workers"] == 1 and report["removed"] == 1, report
    assert not dead.exists()
    assert not [p for p in removal.mount_points() if p.startswith(str(root))]


FORK_STORM = r"""
import os, signal, sys, time
ballast = bytearray(192 * 2**20)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1  # a torch-sized process: every child copies its page tables, and dies slowly
made = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.setsid()
        signal.pause()
        os._exit(0)
    made += 1
print("made", made, flush=True)
signal.pause()
"""


@requires_root
def test_a_fork_storm_at_the_pids_limit_from_a_big_process_closes_whole(monkeypatch):
    monkeypatch.setenv("PKB_BOX_PIDS", "600")
    began = time.monotonic()
    with live_box(memory_bytes=2**30) as (box, start):
        proc = start(FORK_STORM)
        assert wait_for(lambda: len(box.cgroup.pids()) >= 550, 60), len(box.cgroup.pids())
        where = {
            "id": box.box.id,
            "dir": box.box.dir,
            "scratch": box.scratch_root,
            "cgroup": box.cgroup.dirs,
            "uid": box.uid,
        }
        closing = time.monotonic()
    assert time.monotonic() - closing < cgroups.KILL_TIMEOUT_S + 10
    assert proc.returncode is not None
    assert leftovers(where) == []
    assert time.monotonic() - began < 120


def _helper_code(marker: str) -> str:
    text = (CANDIDATES / "unfreezable_exec.py").read_text()
    return text.split('HELPER = """', 1)[1].split('"""', 1)[0], marker


@requires_root
def test_a_box_that_cannot_be_frozen_is_killed_and_is_the_candidates_policy_violation():
    """The de_thread case (tests/redteam/candidates/unfreezable_exec.py's helper, four of them): pause and resume the
    box as the judge does around every reference command until a freeze cannot complete. It must end in the
    candidate's policy_violation, within the freeze bound, with every process of the box killed, and the box then
    closes clean. Measured here on cgroup v1: a freeze stuck within the first few hundred pauses, every run."""
    code, marker = _helper_code("pkb-redteam-dethread")
    version = cgroups.layout().version
    with live_box() as (box, start):
        for _ in range(4):
            start(code, code, marker)
        assert wait_for(lambda: len(box.cgroup.pids()) >= 4, 30)
        fault, began, deadline = None, time.monotonic(), time.monotonic() + 60
        while time.monotonic() < deadline:
            began = time.monotonic()
            try:
                box.pause([])
            except CandidateFault as exc:
                fault = exc
                break
            box.resume([])
            time.sleep(random.uniform(0.001, 0.02))  # let the helpers run on to their next exec
        if fault is None:
            assert version == 2, "the de_thread case did not reproduce on cgroup v1 within 60 s of pauses"
            pytest.skip("every freeze completed on cgroup v2 (the de_thread case does not stop its freezer)")
        assert fault.verdict == "policy_violation" and "could not be frozen" in fault.message, fault.message
        assert time.monotonic() - began < cgroups.FREEZE_TIMEOUT_S + cgroups.KILL_TIMEOUT_S
        assert box.cgroup.pids() == []
        where = {
            "id": box.box.id,
            "dir": box.box.dir,
            "scratch": box.scratch_root,
            "cgroup": box.cgroup.dirs,
            "uid": box.uid,
        }
    assert leftovers(where) == []


@requires_root
def test_a_box_whose_processes_outlive_the_kill_is_quarantined_then_swept(monkeypatch, tmp_path):
    """A kill that cannot finish (simulated: the control group reports a process that never dies) quarantines the box
    id: no judge takes it, CandidateFault says so, and the next sweep lifts the quarantine once the box is clean."""
    private_boxes(monkeypatch, str(tmp_path / "boxes"), 2)
    real_kill = cgroups.BoxCgroup.kill

    def stubborn(self, timeout=cgroups.KILL_TIMEOUT_S):
        real_kill(self, timeout)
        self.left = [999999]
        return 1

    monkeypatch.setattr(cgroups.BoxCgroup, "kill", stubborn)
    with pytest.raises(CandidateFault, match="could not be cleaned up"):
        with live_box() as (box, _start):
            box_id = box.box.id
    assert box_id in boxes.quarantined()
    other = boxes.acquire()  # the only other id: the quarantined one is never handed out
    try:
        assert other.id != box_id
        with pytest.raises(boxes.BoxesExhausted):
            boxes.acquire()
    finally:
        other.release()
    monkeypatch.setattr(cgroups.BoxCgroup, "kill", real_kill)
    boxes.sweep_free()
    assert box_id not in boxes.quarantined()
    assert processes_of_uid(boxes.UID_BASE + box_id) == []
    assert not os.path.exists(os.path.join(str(tmp_path / "boxes"), str(box_id)))


@requires_root
def test_the_judge_cleans_up_after_a_deep_scratch_end_to_end(tmp_path, monkeypatch):
    """The break as reported, through the real judge: its clean-up completes, the verdict is the kernel's own, and
    nothing is left under the judge's temporary directory (no mount, no directory) or of the box."""
    import tempfile

    from tests.redteam.harness import notes, run

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    began = time.monotonic()
    result = run("deep_scratch")
    assert result["verdict"] == "correct", result["message"]
    assert time.monotonic() - began < 120
    # The judge's own directories are gone (the fork server's home lives as long as this process: it is trusted).
    assert [n for n in os.listdir(tmp_path) if not n.startswith("pkb-forkserver-")] == []
    assert not [p for p in removal.mount_points() if p.startswith(str(tmp_path))]
    box = notes(result)["box"]
    where = {
        "id": box["id"],
        "dir": box["dir"],
        "scratch": str(tmp_path / "none"),
        "uid": box["uid"],
        "cgroup": {c: os.path.join(p, f"box-{box['id']}") for c, p in cgroups.layout().parents.items()},
    }
    assert leftovers(where) == []


def test_a_worker_at_boot_sweeps_the_boxes_and_logs_the_quarantined(monkeypatch, tmp_path, caplog):
    """leaderboard/jobs/actors.py recover_at_boot -> workspace.recover_dead(boxes=True): the boxes' sweep runs on an
    empty directory of its own (so it can kill nothing of a live judge), and the ids still quarantined are logged."""
    import logging

    from leaderboard.jobs import judge_commands, workspace

    swept_dirs = []

    def sweep(root, remove=False):
        swept_dirs.append((root, os.listdir(root), remove))
        return {"killed_outliving": 0, "removed_files": 0, "boxes_cleared": 1, "boxes_quarantined": [7]}

    monkeypatch.setattr(judge_commands, "sweep_orphans", sweep)
    with caplog.at_level(logging.WARNING, logger="leaderboard.jobs.workspace"):
        report = workspace.recover_dead(tmp_path / "none", boxes=True)
    assert report["boxes_cleared"] == 1 and report["boxes_quarantined"] == [7]
    assert swept_dirs and swept_dirs[0][1] == [] and swept_dirs[0][2] is False
    assert "quarantined" in caplog.text and "[7]" in caplog.text
    assert workspace.recover_dead(tmp_path / "none") == {"workers": 0, "killed": 0, "removed": 0, "released": 0}
