"""What a rank process may see and do: a scrubbed environment, a private scratch directory, limits, isolation.

Every rank (reference and candidate) gets only an allow-list of environment variables (no credentials, no broker or
database URLs, no proxies) and NVLink multicast switched off, because multicast can take a shared host's GPUs out of
service. Candidate ranks (untrusted code) are further confined by a :class:`Sandbox`, one per candidate group:

- their own user id (when the judge runs as root): a fresh uid per job, no groups, ``no_new_privs``, so they cannot
  read the judge's or the reference's files and memory (``/proc/PID/environ``, ``/proc/PID/mem``, 0700 directories),
  signal other processes, or write anywhere but their scratch directory and world-writable places (which are swept);
- their own network namespace with only loopback up, shared by the group's ranks (they talk to each other over
  loopback TCP, NCCL also over shared memory and CUDA IPC), so no other host, and no service on the judge's own
  loopback (database, broker), can be reached;
- resource limits: no core dumps, bounded file size, bounded process count, first in line for the OOM killer, and
  killed with the judge should it die;
- stopped (SIGSTOP) while the reference runs, so they cannot snoop on the reference's files or slow it down;
- at the end, every process of their uid is killed (double-forked daemons included) and their files in /tmp,
  /var/tmp and /dev/shm are removed.

Where a layer is unavailable (the judge is not root, no namespace support, the interpreter is not readable by another
user) it degrades and says so in :attr:`Sandbox.notes`, which the judge records under ``environment.sandbox``; nothing
fails because of it. See docs/threat-model.md for what each layer defends against and its limits.
"""
from __future__ import annotations

import ctypes
import os
import pathlib
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from typing import Iterable, Optional

REPO_ROOT = str(pathlib.Path(__file__).resolve().parent.parent)
PKB_UTILS = str(pathlib.Path(__file__).resolve().parent / "pkb_utils")

# Never let NCCL, symmetric memory or NVSHMEM use NVLink multicast (see DEVELOPERS.md and the device notes).
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

# Host variables a rank may inherit: toolchain and device plumbing only.
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "TORCH_CUDA_ARCH_LIST",
                "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CC", "CXX", "TRITON_PTXAS_PATH",
                "NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE",
                "GLOO_SOCKET_IFNAME", "PKB_THREADS_PER_RANK", "LANG", "LC_ALL")

FILE_SIZE_LIMIT = 2 * 2**30  # one file a candidate writes (logs included)
PROCESS_LIMIT = 8192  # processes and threads of one candidate group (its own uid), i.e. no fork bomb
UID_RANGE = (3_000_000, 4_000_000)  # candidate uids: numeric only, no passwd entry, one per job
SWEPT_DIRS = ("/tmp", "/var/tmp", "/dev/shm")  # world-writable places whose candidate-owned entries are removed

CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
# Loaded at import, before any fork: functions that run between fork and exec only call into it.
_LIBC = ctypes.CDLL(None, use_errno=True)

# A tiny program (no site, no torch) that enters a new network namespace, brings loopback up and waits; the judge
# keeps a handle on the namespace and every candidate rank joins it.
_NETNS_HOLDER = r"""
import ctypes, fcntl, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x40000000) != 0:
    print("unshare(CLONE_NEWNET) failed: errno %d" % ctypes.get_errno(), flush=True)
    sys.exit(1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 0x1 | 0x40))
print("ok", flush=True)
sys.stdin.read()
"""

# Checks, as the candidate user, that everything a rank needs is readable (interpreter, stdlib, torch, this repo).
_ACCESS_PROBE = ("import os, sys\n"
                 "def ok(p):\n"
                 "    return os.access(p[3:], os.R_OK | os.W_OK) if p.startswith('rw:') else os.access(p, os.R_OK)\n"
                 "print('\\n'.join(p for p in sys.argv[1:] if not ok(p)))")
_probe_cache: dict = {}


def rank_environment(rank: int, world_size: int, port: int, rank_dir: str, trusted: bool,
                     loopback_only: bool = False, user: Optional[str] = None) -> dict:
    tmp = os.path.join(rank_dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    python_bin = os.path.dirname(sys.executable)
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.update(
        PATH=os.pathsep.join([python_bin, "/usr/local/cuda/bin", "/usr/local/bin", "/usr/bin", "/bin"]),
        HOME=rank_dir, TMPDIR=tmp, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1",
        PYTHONPATH=os.pathsep.join([REPO_ROOT, PKB_UTILS]),
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size), OMP_NUM_THREADS="1",
        TORCH_EXTENSIONS_DIR=os.path.join(rank_dir, "torch_extensions"),
        TRITON_CACHE_DIR=os.path.join(rank_dir, "triton_cache"),
        PKB_SCRATCH=rank_dir,
        # The judge stops the idle group (SIGSTOP) while the other runs and keeps its own deadlines; torch's NCCL
        # heartbeat monitor would count a long stop as a hung watchdog and kill the rank on resume.
        TORCH_NCCL_ENABLE_MONITORING="0",
    )
    if user:  # getpass.getuser() (torch, triton caches) must not need a passwd entry for a numeric uid
        env.update(USER=user, LOGNAME=user)
    if loopback_only:  # the rank's namespace has nothing but lo: collectives must bootstrap over it
        env.update(GLOO_SOCKET_IFNAME="lo", NCCL_SOCKET_IFNAME="lo")
    env.setdefault("LANG", "C.UTF-8")
    env.update(MULTICAST_OFF)
    return env


def enabled_by_default() -> bool:
    """The sandbox is on unless PKB_SANDBOX=0 in the judge's environment (a whole deployment switches it off)."""
    return os.environ.get("PKB_SANDBOX", "1") != "0"


def working_directory(rank_dir: str, trusted: bool) -> str:
    return rank_dir


def limit_candidate() -> None:
    """Runs in the candidate's process between fork and exec: no core dumps, bounded files."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


# --- the candidate group's sandbox ------------------------------------------------------------------------------------

class Sandbox:
    """Isolation for one candidate group (all its ranks); see the module docstring. ``enabled=False`` keeps only the
    scrubbed environment and the rlimits (for debugging, and to test what the other layers defend against)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.uid: Optional[int] = None
        self.netns_fd: Optional[int] = None
        self.scratch_root: Optional[str] = None  # set by the group: its directory, in each rank's PKB_SCRATCH
        self.paused = False
        self.closed = False
        self.notes: dict = {"enabled": enabled,
                            "limits": {"file_size_bytes": FILE_SIZE_LIMIT, "core": 0, "processes": PROCESS_LIMIT,
                                       "oom_score_adj": 1000}}
        if not enabled:
            self.notes.update(user="judge's own (sandbox disabled)", network="host (sandbox disabled)")
            return
        self._set_up_user()
        self._set_up_network()

    # --- set-up ---------------------------------------------------------------------------------------------------
    def _set_up_user(self) -> None:
        if os.geteuid() != 0:
            self.notes["user"] = f"judge's own uid {os.geteuid()} (the judge is not root, so it cannot switch users)"
            return
        problem = _probe_user_access()
        if problem:
            self.notes["user"] = f"judge's own (root): {problem}"
            return
        self.uid = _free_uid()
        self.notes["user"] = f"uid {self.uid}, no groups, no_new_privs (separate from the judge)"

    def _set_up_network(self) -> None:
        if os.geteuid() != 0:
            self.notes["network"] = "host (the judge is not root, so it cannot create a network namespace)"
            return
        try:
            holder = subprocess.Popen([sys.executable, "-S", "-c", _NETNS_HOLDER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={"PATH": "/usr/bin:/bin"})
        except OSError as exc:
            self.notes["network"] = f"host (cannot start the namespace holder: {exc})"
            return
        try:
            line = holder.stdout.readline().decode(errors="replace").strip()
            if line == "ok":
                self.netns_fd = os.open(f"/proc/{holder.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
                self.notes["network"] = "own namespace, loopback only"
            else:
                self.notes["network"] = f"host (no network namespace: {line or 'holder exited'})"
        finally:
            try:
                holder.stdin.close()
            except OSError:
                pass
            try:
                holder.wait(10)
            except subprocess.TimeoutExpired:
                holder.kill()
                holder.wait()

    @property
    def user_name(self) -> Optional[str]:
        return f"pkb-sandbox-{self.uid}" if self.uid is not None else None

    @property
    def loopback_only(self) -> bool:
        return self.netns_fd is not None

    def own(self, path: str, mode: int = 0o700) -> None:
        """Give a directory tree (created by the judge) to the candidate's uid."""
        if self.uid is None:
            return
        for root, dirs, files in os.walk(path):
            for name in [root] + [os.path.join(root, d) for d in dirs] + [os.path.join(root, f) for f in files]:
                os.lchown(name, self.uid, self.uid)
        os.chmod(path, mode)

    def preexec(self):
        """The function that runs in each candidate rank between fork and exec (as root, before dropping it)."""
        uid, netns_fd, enabled = self.uid, self.netns_fd, self.enabled

        def confine() -> None:
            if netns_fd is not None and _LIBC.setns(netns_fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns(CLONE_NEWNET) failed")
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
            if enabled:
                resource.setrlimit(resource.RLIMIT_NPROC, (PROCESS_LIMIT, PROCESS_LIMIT))
                try:
                    with open("/proc/self/oom_score_adj", "w") as f:
                        f.write("1000")
                except OSError:
                    pass
            if uid is not None:
                _LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            if enabled:
                _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after setuid, which clears it

        return confine

    # --- control ----------------------------------------------------------------------------------------------------
    def pause(self, pgids: Iterable[int]) -> None:
        """Stop every process of the group (SIGSTOP cannot be caught): while the reference runs, nothing runs here."""
        if not self.enabled or self.closed:
            return
        self.paused = True
        self._stopped: set[int] = set()
        for pgid in pgids:
            signal_group(pgid, signal.SIGSTOP)
        # Processes in other sessions (daemons) too: all of the uid's, or without one, those carrying the group's
        # scratch path in their environment. A stopped process cannot fork, so a few sweeps find them all.
        if self.uid is not None or self.scratch_root:
            for _ in range(3):
                found = processes_of(self.uid) if self.uid is not None else processes_with_scratch(self.scratch_root)
                fresh = [pid for pid in found if pid not in self._stopped and pid != os.getpid()]
                if not fresh:
                    break
                for pid in fresh:
                    _signal(pid, signal.SIGSTOP)
                self._stopped.update(fresh)

    def resume(self, pgids: Iterable[int]) -> None:
        if not self.paused:
            return
        self.paused = False
        for pgid in pgids:
            signal_group(pgid, signal.SIGCONT)
        for pid in self._stopped:
            _signal(pid, signal.SIGCONT)

    def cleanup(self) -> dict:
        """Kill every process of the candidate's uid (daemons included), and every process that still carries this
        group's scratch path in its environment (the fallback without a separate uid), then remove its files in
        shared places."""
        if self.closed:
            return {"killed_outliving": 0, "removed_files": 0}
        self.closed = True
        return reap(self.uid, self.scratch_root)

    def close(self) -> None:
        self.cleanup()
        self.closed = True
        if self.netns_fd is not None:
            try:
                os.close(self.netns_fd)
            except OSError:
                pass
            self.netns_fd = None


def reap(uid: Optional[int], scratch_root: Optional[str]) -> dict:
    """Kill every process of ``uid`` and every process whose scratch path lies under ``scratch_root``, then remove
    the uid's files in shared places. Returns counts."""
    report = {"killed_outliving": 0, "removed_files": 0}
    for _ in range(20):
        pids = set(processes_of(uid)) if uid is not None else set()
        if scratch_root:
            pids.update(processes_with_scratch(scratch_root))
        pids.discard(os.getpid())
        if not pids:
            break
        report["killed_outliving"] += len(pids)
        if uid is not None:
            _kill_as(uid)  # kill(-1) as the uid: everything it owns, in one sweep
        for pid in pids:
            _signal(pid, signal.SIGKILL)
        time.sleep(0.02)
    if uid is None:
        return report
    for place in SWEPT_DIRS:
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                report["removed_files"] += 1
            except OSError:
                pass
    return report


def sweep_orphans(root: str) -> dict:
    """What a judge killed before its own clean-up (an overrun, a lost lease) left under ``root``, its temporary
    directory: every rank still carrying a scratch path there, and every process of a candidate uid that owns a
    directory there (daemons that dropped the scratch path), reaped as Sandbox.cleanup would have."""
    report = reap(None, os.path.abspath(root))
    uids = set()
    for path in pathlib.Path(root).glob("*/*/*"):  # pkb-judge-*/cand/{out,rank*}: given to the candidate's uid
        try:
            owner = path.lstat().st_uid
        except OSError:
            continue
        if UID_RANGE[0] <= owner < UID_RANGE[1]:
            uids.add(owner)
    for uid in sorted(uids):
        for key, value in reap(uid, None).items():
            report[key] += value
    return report


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def processes_of(uid: int) -> list[int]:
    """Live (not zombie) process ids whose real or effective uid is ``uid`` (from /proc; no psutil)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                fields = dict(line.split(b":", 1) for line in f if b":" in line)
            if fields.get(b"State", b"").strip()[:1] in (b"Z", b"X"):
                continue
            if uid in [int(x) for x in fields[b"Uid"].split()[:2]]:
                found.append(int(name))
        except (OSError, ValueError, KeyError):
            pass
    return found


def processes_with_scratch(root: str) -> list[int]:
    """Process ids whose environment has PKB_SCRATCH inside ``root`` (readable for the judge's own uid, or root)."""
    needle = b"PKB_SCRATCH=" + os.path.join(root, "").encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if any(item.startswith(needle) for item in f.read().split(b"\0")):
                    found.append(int(name))
        except OSError:
            pass
    return found


def _free_uid() -> int:
    rng = random.SystemRandom()
    for _ in range(100):
        uid = rng.randrange(*UID_RANGE)
        if not processes_of(uid):
            return uid
    raise RuntimeError("no free sandbox uid")


def _as_user(uid: int):
    def drop() -> None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    return drop


def _kill_as(uid: int) -> None:
    try:
        subprocess.run([sys.executable, "-S", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"],
                       preexec_fn=_as_user(uid), env={}, timeout=10, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        pass


def _probe_user_access() -> Optional[str]:
    """None if an unprivileged uid can run the rank worker with this interpreter; else the reason (cached)."""
    if "result" in _probe_cache:
        return _probe_cache["result"]
    import torch  # noqa: F401 - its location is what must be readable

    paths = [os.path.realpath(sys.executable), os.path.dirname(os.__file__), os.path.dirname(torch.__file__),
             os.path.join(REPO_ROOT, "evaluator", "rank_worker.py"), os.path.join(REPO_ROOT, "problems", "__init__.py"),
             PKB_UTILS]
    # GPU device nodes (present on GPU hosts only): the candidate's uid must be able to open them.
    paths += ["rw:" + os.path.join("/dev", name) for name in ("nvidiactl", "nvidia-uvm", "nvidia0")
              if os.path.exists(os.path.join("/dev", name))]
    try:
        out = subprocess.run([sys.executable, "-S", "-c", _ACCESS_PROBE, *paths], preexec_fn=_as_user(UID_RANGE[0]),
                             env={}, capture_output=True, text=True, timeout=60)
        unreadable = [p for p in out.stdout.split("\n") if p]
        if out.returncode != 0:
            result = f"an unprivileged user cannot run {sys.executable} (status {out.returncode})"
        elif unreadable:
            result = f"not readable by an unprivileged user: {', '.join(unreadable)}"
        else:
            result = None
    except (OSError, subprocess.SubprocessError) as exc:
        result = f"an unprivileged user cannot run {sys.executable}: {exc}"
    _probe_cache["result"] = result
    return result
