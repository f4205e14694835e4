"""The candidate's view of the file system: a bubblewrap (``bwrap``) mount namespace per rank that shows only what a
rank needs, read-only, plus its own scratch directories.

Why a whitelist view rather than file permissions alone: a separate uid already keeps a candidate out of 0600 files
and other processes' memory, but everything world-readable stays readable (the site's source tree and its data
directory if their modes allow, ``/run/postgresql/.s.PGSQL.5432``, ``/var/run/docker.sock``, other jobs' files in
shared temporary directories), and Unix sockets are files that a network namespace does not cover. Inside the view
there is no ``/run``, no ``/var``, no ``/home`` or ``/root`` beyond the interpreter's own directories, and of the
repository only ``evaluator/`` and ``problems/``. The view also fixes the opposite failure: an interpreter under a
0700 home (pyenv in ``/root``) or a job directory under a 0700 parent is reachable, because bind mounts are reached
through bwrap's own 0755 directories rather than through the host's parents.

bwrap runs as root (it needs to mount), drops every capability except the three that ``setpriv`` needs, and
``setpriv`` then becomes the candidate's uid with no groups, no capabilities (bounding set included),
``no_new_privs`` and a parent-death signal (a uid change clears the one set before). The network and IPC namespaces
are joined before bwrap starts (evaluator/process/sandbox.py), so every rank of a group shares them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The parts of the repository a rank imports; the site (leaderboard/), its settings and data stay out of view.
REPO_PARTS = ("evaluator", "problems")
# Top-level system directories: bound read-only where they are directories, recreated where they are links
# (merged /usr), absent otherwise.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
# What a Python, CUDA or compiler process reads of /etc; everything else there (the site's env files, shadow, the
# services' configuration) stays out of the view. ``python3*`` covers Debian's sitecustomize.
ETC_SHOWN = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ld.so.preload",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "gai.conf",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "localtime",
    "timezone",
    "mime.types",
    "protocols",
    "services",
    "os-release",
    "debian_version",
    "lsb-release",
    "mtab",
    "OpenCL",
    "vulkan",
    "glvnd",
    "nvidia",
)
ETC_SHOWN_PREFIXES = ("python3",)
# The box's own, written by evaluator/process/boxes.py: root and the box's uid, nothing of the host's users.
ETC_OWN = ("passwd", "group")
CAPS_FOR_SETPRIV = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")


def executable() -> str | None:
    """The bwrap binary: ``PKB_BWRAP`` (a path), else the one on PATH."""
    path = os.environ.get("PKB_BWRAP") or shutil.which("bwrap")
    return path if path and os.access(path, os.X_OK) else None


def setpriv() -> str | None:
    path = os.environ.get("PKB_SETPRIV") or shutil.which("setpriv") or "/usr/bin/setpriv"
    return path if os.access(path, os.X_OK) else None


def runtime_dirs() -> list[str]:
    """Directories outside the system ones that the interpreter, torch and triton live in (a venv, pyenv, conda)."""
    dirs = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    for name in ("torch", "triton", "numpy"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            dirs.append(os.path.dirname(os.path.dirname(os.path.realpath(spec.origin))))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(os.environ[var])
    dirs += [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    for var in ("TRITON_PTXAS_PATH", "CC", "CXX"):
        if os.environ.get(var) and os.path.isabs(os.environ[var]):
            dirs.append(os.path.dirname(os.environ[var]))
    return _outermost(d for d in dirs if os.path.isdir(d) and not _covered(d, SYSTEM_DIRS))


def etc_entries(etc_dir: str) -> list[str]:
    """bwrap arguments for the view's /etc: the whitelist above from the host, ``etc_dir``'s passwd and group."""
    args = ["--dir", "/etc"]
    try:
        names = sorted(os.listdir("/etc"))
    except OSError:
        names = []
    for name in names:
        if name in ETC_OWN or not (name in ETC_SHOWN or name.startswith(ETC_SHOWN_PREFIXES)):
            continue
        path = os.path.join("/etc", name)
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            args += ["--ro-bind", path, path]
    for name in ETC_OWN:
        args += ["--ro-bind", os.path.join(etc_dir, name), os.path.join("/etc", name)]
    return args


def command(
    argv: list[str],
    uid: int,
    rank_dir: str,
    writable: Iterable[str],
    readable: Iterable[str],
    tmp_dir: str,
    shm_dir: str,
    etc_dir: str,
    pidns_fd: int | None = None,
    devices: Iterable[str] = (),
    seccomp_fd: int | None = None,
    setenv: dict | None = None,
) -> list[str]:
    """bwrap + setpriv + ``argv``: ``argv`` runs as ``uid`` in its own mount namespace where it sees the system
    directories, /etc's whitelist with the box's passwd and group (``etc_dir``), the interpreter, ``evaluator/`` and
    ``problems/`` read-only, ``readable`` read-only, ``writable`` and ``rank_dir`` read-write, ``tmp_dir`` as /tmp
    and /var/tmp, ``shm_dir`` as /dev/shm, and nothing else. With ``pidns_fd`` (an open, inheritable pid namespace)
    the rank joins that namespace and its /proc shows that namespace's processes alone. ``devices``: the device nodes
    bound (evaluator/process/devices.py: the judge's own GPUs); ``seccomp_fd``: an inheritable descriptor holding the
    box's seccomp filter (evaluator/process/seccomp.py); ``setenv``: variables set inside the view."""
    bw, sp = executable(), setpriv()
    if bw is None or sp is None:
        raise FileNotFoundError("bwrap or setpriv is missing")
    args = [bw, "--die-with-parent"] + (["--pidns", str(pidns_fd)] if pidns_fd is not None else [])
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    for name, value in (setenv or {}).items():
        args += ["--setenv", name, value]
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += etc_entries(etc_dir)
    args += ["--ro-bind", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev"]
    for device in devices:
        args += ["--dev-bind", device, device]
    # The group's /tmp before anything that may live under the host's /tmp (a checkout or a venv there, a job's
    # directory): mounted later, those land on top of it instead of being hidden by it.
    args += ["--bind", shm_dir, "/dev/shm", "--bind", tmp_dir, "/tmp", "--bind", tmp_dir, "/var/tmp"]
    for path in runtime_dirs():
        args += ["--ro-bind", path, path]
    for part in REPO_PARTS:
        path = os.path.join(REPO_ROOT, part)
        args += ["--ro-bind", path, path]
    for path in readable:
        args += ["--ro-bind", path, path]
    for path in list(writable) + [rank_dir]:
        args += ["--bind", path, path]
    args += _open_created_parents(args)
    args += ["--chdir", rank_dir]
    for cap in CAPS_FOR_SETPRIV:
        args += ["--cap-add", cap]
    args += [
        "--",
        sp,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--pdeathsig",
        "KILL",
        "--",
    ]
    return args + list(argv)


def works(uid: int, scratch: str, etc_dir: str, timeout: float = 60.0) -> str | None:
    """None if a command can run inside the view as ``uid`` and import what a rank imports (torch, the evaluator,
    the problems) from its interpreter; otherwise the reason, for the sandbox's notes."""
    if executable() is None:
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap; or set PKB_BWRAP)"
    if setpriv() is None:
        return "setpriv (util-linux) is not installed"
    tmp = os.path.join(scratch, "tmp")
    shm = os.path.join(scratch, "shm")
    for path in (tmp, shm):
        os.makedirs(path, exist_ok=True)
        os.chown(path, uid, uid)
    probe = (
        "import os, sys; import torch, evaluator.rank.worker, problems; "
        f"assert os.getuid() == {uid} and not os.access('/root', os.W_OK); print('ok')"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": REPO_ROOT,
        "PYTHONNOUSERSITE": "1",
        "HOME": scratch,
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    try:
        out = subprocess.run(
            command([sys.executable, "-c", probe], uid, scratch, [], [], tmp, shm, etc_dir),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not start: {exc}"
    if out.returncode != 0 or out.stdout.strip() != "ok":
        detail = (out.stderr.strip().splitlines() or [f"status {out.returncode}"])[-1]
        return f"a rank cannot start inside the bwrap view: {detail[:300]}"
    return None


def _open_created_parents(args: list[str]) -> list[str]:
    """bwrap makes the missing parents of a mount point (those of the interpreter's and the repository's directories,
    or of a job directory's path inside the group's own /tmp) with mode 0700, which the candidate's uid cannot
    traverse; they hold nothing but the way to a mount, so open them. Parents inside a read-only mount exist already
    (bwrap could not create them there)."""
    dests = [args[i + 2] for i, a in enumerate(args) if a in ("--bind", "--ro-bind", "--dev-bind", "--symlink")]
    dests += [args[i + 1] for i, a in enumerate(args) if a in ("--proc", "--dev")]
    fixed = [args[i + 2] for i, a in enumerate(args) if a in ("--ro-bind", "--dev-bind", "--symlink")]
    fixed += [args[i + 1] for i, a in enumerate(args) if a == "--dir"]
    fixed += [args[i + 1] for i, a in enumerate(args) if a in ("--proc", "--dev")]
    created: list[str] = []
    for dest in dests:
        parent = os.path.dirname(dest)
        while parent not in ("/", ""):
            if parent not in dests and not _inside(parent, fixed) and parent not in created:
                created.append(parent)
            parent = os.path.dirname(parent)
    out: list[str] = []
    for path in sorted(created, key=len):
        out += ["--chmod", "0755", path]
    return out


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path.startswith(r.rstrip("/") + "/") for r in roots)


def _covered(path: str, roots: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots if not os.path.islink(r))


def _outermost(paths: Iterable[str]) -> list[str]:
    """Absolute, de-duplicated, without those inside another one of the list."""
    unique = sorted({os.path.abspath(p) for p in paths}, key=len)
    kept: list[str] = []
    for p in unique:
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(p)
    return kept
