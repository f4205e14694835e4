"""One box per candidate group under a real worker's load (evaluator/process/sandbox.py, boxes.py, cgroups.py,
box_init.py): judges starting together, process trees that slip past signals, memory outside any process, zombies.
docs/threat-model.md lists the four breaks these tests pin down and what now closes each.

These run as root, as CI does; as a non-root user they are skipped, saying why (the box needs a root judge), and
test_the_sandbox_is_complete_here (test_host_escape.py) fails on a root host that cannot give the whole box."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

from evaluator.contract import schema
from evaluator.judge.pair import Pair
from evaluator.process import boxes, processes, removal
from tests.redteam.harness import (
    CANDIDATES,
    TIMED,
    from_template,
    logs,
    notes,
    probe_lines,
    processes_with,
    requires_root,
    run,
    token,
)

REPO = CANDIDATES.parents[2]
# Imports first, then waits for a shared instant: the judges' sandbox set-up (box ids, probes) really overlaps.
_AT_ONCE = (
    "import sys, time\nfrom evaluator import cli\n"
    "time.sleep(max(0.0, float(sys.argv[1]) - time.time()))\nsys.exit(cli.main(sys.argv[2:]))"
)


def _judges_at_once(jobs: list[tuple[str, list[str], dict]], tmp_path, delay: float = 6.0) -> list[dict]:
    """Start one judge process per (name, eval arguments, extra environment) and release them all at one instant;
    return their result documents in order."""
    start = time.time() + delay
    procs = []
    for i, (name, args, extra) in enumerate(jobs):
        out = tmp_path / f"{i}-{name}.json"
        env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
        env.pop("PKB_SANDBOX", None)
        procs.append(
            (
                out,
                subprocess.Popen(
                    [sys.executable, "-c", _AT_ONCE, str(start), "eval", *args, "--json", str(out)],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                ),
            )
        )
    results = []
    for out, proc in procs:
        text, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, text[-3000:]
        results.append(json.loads(out.read_text()))
    return results


def _eval_args(candidate: str, *extra: str) -> list[str]:
    return ["1", candidate, "-W", "2", "--M", "64", "--N", "32", "--trials", "2", "--no-timing", "--seed", "3", *extra]


@requires_root
def test_eight_judges_started_together_each_get_a_whole_box(tmp_path):
    """Four honest candidates and four escape probes, released at one instant with --require-sandbox off (the
    default of pkb eval, where a lost race used to run a candidate as root): every one is sandboxed in a box of its
    own, the honest ones correct, none an infra_error, none flagged unsandboxed."""
    honest = str(CANDIDATES / "honest_allreduce.py")
    # A secret where a careless host keeps one (world-readable, under /etc): outside the box's /etc whitelist.
    secret_dir = f"/etc/pkb-redteam-{token()}"
    os.makedirs(secret_dir)
    with open(f"{secret_dir}/site.env", "w") as f:
        f.write("DATABASE_URL=postgres://u:hunter2@db/x\n")
    os.chmod(f"{secret_dir}/site.env", 0o644)
    probe = from_template(tmp_path, "probes_box", SECRET_PATH=f"{secret_dir}/site.env")
    jobs = [("honest" if i % 2 == 0 else "probe", _eval_args(honest if i % 2 == 0 else probe), {}) for i in range(8)]
    try:
        results = _judges_at_once(jobs, tmp_path)
    finally:
        shutil.rmtree(secret_dir, ignore_errors=True)
    box_ids = set()
    for (name, _, _), result in zip(jobs, results, strict=True):
        assert result["verdict"] == schema.CORRECT, (name, result["message"])
        assert schema.FLAG_UNSANDBOXED not in result["flags"], (name, notes(result).get("summary"))
        assert notes(result)["complete"] is True, notes(result)
        box_ids.add(notes(result)["box"]["id"])
        if name == "probe":
            probes = probe_lines(logs(result))
            assert int(probes["uid"]) == notes(result)["box"]["uid"] != 0, probes
            # Its own pid namespace: the box's init and its two ranks (each behind its bwrap child), nothing else.
            assert len(probes["pids"].split()) <= 6 and "1" in probes["pids"].split(), probes["pids"]
            assert probes["read secret"].startswith("refused"), probes
            for path in ("/etc/shadow", "/root/.bashrc", "/proc/1/environ", "/proc/1/root/etc/passwd"):
                assert probes[f"read {path}"].startswith("refused"), (path, probes)
            assert f"box-{notes(result)['box']['id']}" in probes["cgroup"], probes["cgroup"]
    assert len(box_ids) == 8  # never one box (uid, control group, directory) for two judges


@requires_root
def test_a_fork_hopping_helper_does_no_work_while_the_reference_is_timed(monkeypatch):
    """The helper's iterations are counted (from the host, in the box's /tmp) right before and after each of the
    reference's timed blocks: zero inside them. It does run while the candidate's own blocks run."""
    during = {"ref": [], "cand": []}
    original = Pair._timed_command

    def counted(self, group, cmd, timeout):
        if cmd.get("cmd") != "time" or self.cand.sandbox is None or self.cand.sandbox.box is None:
            return original(self, group, cmd, timeout)
        hops = os.path.join(self.cand.sandbox.box.fs, "tmp", "HOPS")
        size = lambda: os.path.getsize(hops) if os.path.exists(hops) else 0  # noqa: E731
        before = size()
        try:
            return original(self, group, cmd, timeout)
        finally:
            during["ref" if group is self.ref else "cand"].append(size() - before)

    monkeypatch.setattr(Pair, "_timed_command", counted)
    result = run("fork_hopper", **dict(TIMED, M=512, N=512, timing_budget_ms=2000))
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert notes(result)["complete"] is True, notes(result)
    assert len(during["ref"]) >= 4 and len(during["cand"]) >= 4, during
    assert during["ref"] == [0] * len(during["ref"]), during
    assert sum(during["cand"]) > 0, during  # the helper was alive and hopping: the zeros above are the freezer's


@requires_root
def test_without_the_freezer_the_same_helper_runs_through_the_reference(monkeypatch):
    """The measurement above can fail: with the control group taken away and pauses that stop only the ranks'
    process groups (what a judge without a box can reach for sure), the helper in its own session keeps working while
    the reference is timed. The sandbox's fallback also sweeps the uid's processes; that sweep catches a hopper or
    not by chance, so this control leaves it out to stay deterministic."""
    from evaluator.process import cgroups

    def unavailable(*args, **kwargs):
        raise cgroups.CgroupUnavailable("simulated: no control group")

    def process_groups_only(pgids, uid, scratch_root):
        for pgid in pgids:
            processes.signal_group(pgid, signal.SIGSTOP)
        return set()

    monkeypatch.setattr(cgroups, "BoxCgroup", unavailable)
    monkeypatch.setattr(processes, "stop_all", process_groups_only)
    during = []
    original = Pair._timed_command

    def counted(self, group, cmd, timeout):
        if cmd.get("cmd") != "time" or group is not self.ref:
            return original(self, group, cmd, timeout)
        hops = os.path.join(self.cand.sandbox.box.fs, "tmp", "HOPS")
        before = os.path.getsize(hops) if os.path.exists(hops) else 0
        try:
            return original(self, group, cmd, timeout)
        finally:
            during.append((os.path.getsize(hops) if os.path.exists(hops) else 0) - before)

    monkeypatch.setattr(Pair, "_timed_command", counted)
    result = run("fork_hopper", **dict(TIMED, M=512, N=512, timing_budget_ms=2000))
    assert schema.FLAG_UNSANDBOXED in result["flags"]  # no control group: never a whole box
    assert len(during) >= 4 and all(n > 0 for n in during), during


@requires_root
def test_a_box_over_its_memory_limit_dies_alone_with_that_message(tmp_path):
    """/dev/shm files and System V segments (no process's resident size shows them) plus plain memory: the box's
    limit of 1 GB counts them all, the kernel kills inside that box alone, and a job beside it finishes correct."""
    jobs = [
        ("hog", _eval_args(str(CANDIDATES / "shm_hog.py"), "--require-sandbox"), {"PKB_BOX_MEMORY": "1G"}),
        ("beside", _eval_args(str(CANDIDATES / "honest_allreduce.py"), "--require-sandbox"), {}),
    ]
    hog, beside = _judges_at_once(jobs, tmp_path, delay=4.0)
    assert hog["verdict"] == schema.RUNTIME_ERROR, hog["message"]
    assert "exceeded its memory limit of 1.0 GB" in hog["message"], hog["message"]
    assert "SURVIVED" not in logs(hog)
    text = logs(hog)
    # Where the ranks' own memory leaves room, the bounded tmpfs refuses first (ENOSPC); on a host where importing
    # torch takes more (CUDA builds), the limit may kill the box while /dev/shm still fills, before that line.
    if "/dev/shm stopped at" in text:
        assert "No space left on device" in text, text[-3000:]
    assert notes(hog)["memory"]["oom_kills"] >= 1 and notes(hog)["memory"]["limit_bytes"] == 2**30
    assert beside["verdict"] == schema.CORRECT, beside["message"]
    assert notes(beside)["memory"]["oom_kills"] == 0


def _zombies_and_processes_of(uid: int) -> list[tuple[int, str]]:
    """Every process of ``uid``, zombies included (processes.processes_of leaves zombies out)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if uid in [int(x) for x in fields["Uid"].split()[:2]]:
                found.append((int(name), fields["State"].strip()))
        except (OSError, KeyError, ValueError):
            pass
    return found


def _zombie_children_of(pid: int) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if fields[0] == "Z" and int(fields[1]) == pid:
                    count += 1
            except (OSError, IndexError, ValueError):
                pass
    return count


@requires_root
def test_after_a_fork_storm_nothing_of_the_box_remains(tmp_path):
    marker = "pkb-redteam-storm-" + token()
    path = from_template(tmp_path, "fork_storm", MARKER=marker)
    try:
        result = run(path)
        assert result["verdict"] == schema.CORRECT, result["message"]
        assert "storm: " in logs(result)
        box = notes(result)["box"]
        # Nothing of the box: no process of its uid (zombies included), no daemon, no zombie left to the judge.
        assert _zombies_and_processes_of(box["uid"]) == []
        assert processes_with(marker) == []
        assert _zombie_children_of(os.getpid()) == 0
        assert notes(result)["cleanup"]["killed_outliving"] >= 1  # the daemon, killed with the box
        # Its control group, its directory (and its tmpfs) are gone, and its id is free again.
        from evaluator.process import cgroups

        layout = cgroups.layout()
        assert not any(os.path.exists(os.path.join(p, f"box-{box['id']}")) for p in layout.parents.values())
        assert not os.path.exists(box["dir"])
        assert box["dir"] + "/fs" not in removal.mount_points()
        lock = os.open(os.path.join(boxes.root(), "locks", f"{box['id']}.lock"), os.O_RDWR)
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if anything still held the id
        finally:
            os.close(lock)
    finally:
        for pid in processes_with(marker):
            os.kill(pid, 9)


@requires_root
def test_the_uid_alone_keeps_the_reference_directory_unreadable():
    """A layer alone, without the filesystem view that hides the reference's directory altogether: a live reference
    group's output directory (what RankGroup makes for a trusted group) refuses a box's uid by its permissions. The
    same listing as root succeeds, so the refusal is the permissions', not a wrong path's. (The probe runs the
    system's interpreter: this host's own may live under a 0700 home, which is why the view exists.)"""
    from evaluator.process import warm
    from evaluator.process.group import RankGroup

    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    workdir = warm.make_workdir()
    ref = RankGroup(
        "ref", 1, "cpu", "1", "reference", os.path.join(workdir, "ref"), 64, 32, "bfloat16", True, trusted=True
    )
    try:
        ref.collect(120)
        out = os.path.join(workdir, "ref", "out")
        listing = [python, "-S", "-c", "import os, sys; print(os.listdir(sys.argv[1]))", out]
        box = boxes.acquire()
        try:
            as_box = subprocess.run(
                listing, preexec_fn=processes.as_user(box.uid), env={}, capture_output=True, text=True, timeout=60
            )
        finally:
            box.release()
        as_root = subprocess.run(listing, env={}, capture_output=True, text=True, timeout=60)
    finally:
        ref.close()
        shutil.rmtree(workdir, ignore_errors=True)
    assert as_root.returncode == 0, as_root.stderr
    assert as_box.returncode != 0 and "PermissionError" in as_box.stderr, (as_box.stdout, as_box.stderr)


@requires_root
def test_a_judge_killed_mid_job_leaves_nothing_that_the_next_holder_of_its_box_keeps(tmp_path):
    """A judge killed with SIGKILL while its candidate runs: its box's processes die with it (the box's init and the
    ranks die with their parent), and what stays (the control group, the tmpfs, the directory) is cleared by the
    worker's sweep, or by whoever takes the id next."""
    marker = "pkb-redteam-killed-" + token()
    path = from_template(tmp_path, "fork_storm", MARKER=marker)
    out = tmp_path / "never.json"
    judge_tmp = tmp_path / "judge-tmp"
    judge_tmp.mkdir()
    judge = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evaluator",
            "eval",
            "1",
            path,
            "-W",
            "2",
            "--M",
            "64",
            "--N",
            "32",
            "--trials",
            "50",
            "--seed",
            "3",
            "--json",
            str(out),
        ],
        cwd=REPO,
        env=dict(os.environ, TMPDIR=str(judge_tmp)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not processes_with(marker):
            time.sleep(0.2)
        assert processes_with(marker), "the candidate's daemon never started"
        held = _held_box_of(judge.pid)
        judge.kill()
        judge.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and processes_with(marker):
            time.sleep(0.1)
        assert processes_with(marker) == []  # died with the judge: nobody had to find it
        assert held is not None
        assert boxes.sweep_free() >= 1
        assert not os.path.exists(os.path.join(boxes.root(), str(held)))
        # The killed judge's group scratch is still mounted in its directory: the worker's sweep of that directory
        # (pkb sweep DIR --remove, as leaderboard/jobs/workspace.py runs it) unmounts and removes it.
        assert [p for p in removal.mount_points() if p.startswith(str(judge_tmp))]
        swept = subprocess.run(
            [sys.executable, "-m", "evaluator.cli", "sweep", str(judge_tmp), "--remove", "--json"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert json.loads(swept.stdout)["left"] is False, swept.stderr
        assert not [p for p in removal.mount_points() if p.startswith(str(judge_tmp))]
    finally:
        for pid in processes_with(marker):
            os.kill(pid, 9)


def _held_box_of(pid: int):
    """The box id whose lock file the process ``pid`` holds open."""
    locks = os.path.join(boxes.root(), "locks")
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(locks + "/") and target.endswith(".lock"):
            return int(os.path.basename(target)[: -len(".lock")])
    return None
