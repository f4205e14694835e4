"""Limits that bound the whole box (issue 45, item 6): scratch bytes and files, /tmp, user namespaces, cores, GPU
device nodes, processes. Each test runs the attempt inside a real box and reads the limit back from the kernel; the
controls show the same attempt succeeding where that one limit is taken away. docs/threat-model.md, "The box's
clean-up and limits"."""

import os

import pytest

from evaluator.process import bwrap, cgroups, devices, limits, seccomp
from tests.redteam.box_harness import leftovers, live_box, run_in_box
from tests.redteam.harness import requires_root

FILL = r"""
import errno, os, sys
def fill(directory):
    written = 0
    chunk = b"x" * 2**20
    try:
        with open(os.path.join(directory, "big"), "wb") as f:
            while written < 2**31:
                f.write(chunk)
                f.flush()
                written += len(chunk)
    except OSError as exc:
        return written, errno.errorcode[exc.errno]
    return written, "none"
def files(directory):
    os.makedirs(os.path.join(directory, "files"))
    for i in range(200000):
        try:
            open(os.path.join(directory, "files", str(i)), "w").close()
        except OSError as exc:
            return i, errno.errorcode[exc.errno]
    return 200000, "none"
for name, where in (("scratch", "."), ("tmp", "/tmp")):
    n, err = fill(where)
    os.unlink(os.path.join(where, "big"))
    print(name, "bytes", n, err, flush=True)
n, err = files(".")
print("scratch files", n, err, flush=True)
"""


def _mount_options(path: str) -> dict:
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        if fields[4] == path:
            super_options = line.split(" - ", 1)[1].split()[2]
            return dict(o.split("=", 1) if "=" in o else (o, "") for o in super_options.split(","))
    return {}


@requires_root
def test_scratch_and_tmp_are_bounded_in_bytes_and_files(monkeypatch):
    monkeypatch.setenv("PKB_BOX_SCRATCH", "48M")
    monkeypatch.setenv("PKB_BOX_SCRATCH_FILES", "3000")
    with live_box(memory_bytes=512 * 2**20) as (box, start):
        options = _mount_options(box.scratch_root)
        assert int(options["size"].rstrip("k")) * 1024 == 48 * 2**20 and options["nr_inodes"] == "3000", options
        tmp = _mount_options(box.box.fs)
        assert int(tmp["size"].rstrip("k")) * 1024 == box.tmpfs_bytes == 256 * 2**20, tmp
        proc = start(FILL)
        out, err = proc.communicate(timeout=120)
        where = {
            "id": box.box.id,
            "dir": box.box.dir,
            "scratch": box.scratch_root,
            "cgroup": box.cgroup.dirs,
            "uid": box.uid,
        }
    lines = {" ".join(line.split()[:2]): line.split()[2:] for line in out.splitlines()}
    assert lines["scratch bytes"][1] == "ENOSPC" and int(lines["scratch bytes"][0]) <= 48 * 2**20, (out, err)
    assert lines["tmp bytes"][1] == "ENOSPC" and int(lines["tmp bytes"][0]) <= 256 * 2**20, (out, err)
    assert lines["scratch files"][1] == "ENOSPC" and int(lines["scratch files"][0]) < 3000, (out, err)
    assert leftovers(where) == []


USERNS = r"""
import ctypes, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", libc.unshare(0x10000000), ctypes.get_errno(), flush=True)
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("thread ok", subprocess.run(["/bin/true"]).returncode, flush=True)
"""


@requires_root
def test_no_user_namespace_can_be_made_inside_the_box(monkeypatch):
    done, where = run_in_box(USERNS)
    assert "unshare -1 1" in done.stdout, (done.stdout, done.stderr)  # EPERM
    assert "thread ok 0" in done.stdout  # threads and spawned programs still work (clone3 falls back to clone)
    assert leftovers(where) == []
    # The control: the same box without its seccomp filter lets the namespace be made.
    monkeypatch.setattr(seccomp, "open_program", lambda: None)
    done, _ = run_in_box(USERNS)
    assert "unshare 0 0" in done.stdout, (done.stdout, done.stderr)


def test_the_filter_is_built_for_the_hosts_that_run_boxes():
    for machine in ("x86_64", "aarch64"):
        program = seccomp.program(machine)
        assert program is not None and len(program) == 13 * 8
    assert seccomp.program("sparc64") is None


WIDEN = r"""
import os
before = sorted(os.sched_getaffinity(0))
try:
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    result = "set"
except OSError as exc:
    result = "refused"
print("cpus", before, result, sorted(os.sched_getaffinity(0)), flush=True)
"""


@requires_root
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="widening needs a host of two cores or more")
def test_a_box_cannot_widen_its_cores(monkeypatch):
    monkeypatch.setenv("PKB_BOX_CPUS", "0")
    done, where = run_in_box(WIDEN)
    assert "cpus [0] " in done.stdout and done.stdout.strip().endswith("[0]"), (done.stdout, done.stderr)
    layout = cgroups.layout()
    assert layout.cpuset, "no cpuset controller: the box's cores would rest on its affinity alone"
    assert leftovers(where) == []


@requires_root
def test_the_box_reads_back_its_cpuset_and_its_pids_limits():
    with live_box() as (box, _start):
        group = box.cgroup
        if group.v2:
            assert open(group._file("cpuset", "cpuset.cpus")).read().strip() == limits.cpu_list(box.cpus)
            parent = group.where.parents["unified"]
        else:
            assert open(group._file("cpuset", "cpuset.cpus")).read().strip() == limits.cpu_list(box.cpus)
            parent = group.where.parents["pids"]
        assert int(open(group._file("pids", "pids.max")).read()) == box.pids_max == limits.box_pids()
        assert int(open(os.path.join(parent, "pids.max")).read()) == limits.all_boxes_pids()
    assert limits.all_boxes_pids() <= limits.pid_max() // 2 + 1
    assert 4 * limits.box_pids() <= limits.all_boxes_pids()


def test_the_view_binds_only_the_judges_own_gpus():
    gpus = [
        {"bus": f"0000:{b:02x}:00.0", "minor": m, "uuid": f"GPU-{m}aaa"}
        for b, m in ((0x18, 0), (0x3B, 2), (0x86, 1), (0xAF, 3))
    ]
    present = [
        "nvidia0",
        "nvidia1",
        "nvidia2",
        "nvidia3",
        "nvidiactl",
        "nvidia-uvm",
        "nvidia-uvm-tools",
        "nvidia-caps",
        "null",
    ]
    control = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    nodes, env, _ = devices.select("1,3", gpus, present)  # PCI order: index 1 is minor 2, index 3 is minor 3
    assert nodes == control + ["/dev/nvidia2", "/dev/nvidia3"] and env == "GPU-2aaa,GPU-3aaa"
    nodes, env, _ = devices.select("GPU-1aaa", gpus, present)
    assert nodes == control + ["/dev/nvidia1"] and env == "GPU-1aaa"
    assert devices.select("", gpus, present)[:2] == (control, None)
    nodes, env, note = devices.select("7", gpus, present)  # not on this host: every node, and the note says why
    assert nodes == control + ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"] and env is None
    assert "could not be mapped" in note
    assert devices.select(None, gpus, present)[0] == nodes
    argv = bwrap.command(
        ["true"],
        3000001,
        "/tmp/r",
        [],
        [],
        "/tmp/t",
        "/tmp/s",
        "/tmp/e",
        devices=control + ["/dev/nvidia2"],
        setenv={"CUDA_VISIBLE_DEVICES": "GPU-2aaa"},
    )
    bound = [argv[i + 1] for i, a in enumerate(argv) if a == "--dev-bind"]
    assert bound == control + ["/dev/nvidia2"]
    assert argv[argv.index("--setenv") + 1 : argv.index("--setenv") + 3] == ["CUDA_VISIBLE_DEVICES", "GPU-2aaa"]


def test_the_driver_record_is_read_in_bus_order(tmp_path):
    for bus, minor in (("0000:3b:00.0", 1), ("0000:18:00.0", 0)):
        (tmp_path / bus).mkdir()
        (tmp_path / bus / "information").write_text(
            f"Model: \t\t NVIDIA H100\nDevice Minor: \t {minor}\nGPU UUID: \t GPU-{minor}bbb\nBus Location: \t {bus}\n"
        )
    assert [(g["minor"], g["uuid"]) for g in devices.driver_gpus(str(tmp_path))] == [(0, "GPU-0bbb"), (1, "GPU-1bbb")]


def test_the_build_cache_is_bounded_in_files(tmp_path, monkeypatch):
    """A build directory of more files than an entry may hold is not kept (100,000 empty files were, before); and
    the cache as a whole evicts its oldest entries past its file bound, as past its byte bound."""
    from evaluator.process import builds

    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(builds, "ENTRY_LIMIT_FILES", 50)
    build = tmp_path / "build"
    (build / "x").mkdir(parents=True)
    (build / "x" / "x.so").write_bytes(b"\x7fELF")
    for i in range(60):
        (build / "x" / f"empty{i}").write_bytes(b"")
    assert not builds.harvest("flood", str(build)) and not (tmp_path / "cache" / "flood").exists()
    for i in range(60):
        (build / "x" / f"empty{i}").unlink()
    for i in range(10):
        (build / "x" / f"part{i}").write_bytes(b"")
    monkeypatch.setenv("PKB_BUILD_CACHE_FILES", "30")  # two entries of 13 fit, a third evicts the oldest
    for name in ("first", "second", "third"):
        assert builds.harvest(name, str(build))
        os.utime(tmp_path / "cache" / name, (0, {"first": 1, "second": 2, "third": 3}[name]))
    assert sorted(p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")) == ["second", "third"]


@requires_root
def test_the_v2_files_a_box_writes_on_a_stand_in_hierarchy(tmp_path, monkeypatch):
    """This host runs cgroup v1; the v2 branch (the lent GPU hosts) writes these files, checked on a stand-in
    directory tree: the parent's controllers handed down (cpuset where offered), its pids bound, the box's memory,
    swap, OOM group, pids and cores. benchmarks/box_v2_check.sh runs the real thing on a v2 host."""
    from evaluator.process import cgroup_layout

    root = tmp_path / "unified"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "cgroup.subtree_control").write_text("\n")
    monkeypatch.setattr(cgroup_layout, "_mounts", lambda: [(str(root), "cgroup2", ["rw"])])
    monkeypatch.delenv("PKB_CGROUP_PARENT", raising=False)
    real_mkdir = cgroup_layout._mkdir

    def mkdir_with_files(path):  # the kernel makes a group's files with it; a stand-in makes the ones read back
        real_mkdir(path)
        for name in ("cgroup.subtree_control", "cgroup.freeze"):
            if not os.path.exists(os.path.join(path, name)):
                open(os.path.join(path, name), "w").close()

    monkeypatch.setattr(cgroup_layout, "_mkdir", mkdir_with_files)
    where = cgroup_layout._find_layout()
    parent = root / "pkb-arena"
    assert where.version == 2 and where.cpuset and where.parents == {"unified": str(parent)}
    assert (root / "cgroup.subtree_control").read_text() == "+memory +pids +cpuset"
    assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids +cpuset"
    assert int((parent / "pids.max").read_text()) == limits.all_boxes_pids()
    group = cgroups.BoxCgroup.__new__(cgroups.BoxCgroup)
    group.where, group.name, group.memory_bytes, group.pids_max, group.cpus = where, "box-7", 2**30, 512, [0, 2, 3]
    group.dirs = {"unified": str(parent / "box-7")}
    os.mkdir(group.dirs["unified"])
    for name in ("memory.swap.max", "memory.oom.group"):
        open(os.path.join(group.dirs["unified"], name), "w").close()
    group._limit()
    written = {
        name: open(os.path.join(group.dirs["unified"], name)).read()
        for name in ("memory.max", "memory.swap.max", "memory.oom.group", "pids.max", "cpuset.cpus")
    }
    assert written == {
        "memory.max": str(2**30),
        "memory.swap.max": "0",
        "memory.oom.group": "1",
        "pids.max": "512",
        "cpuset.cpus": "0,2-3",
    }
