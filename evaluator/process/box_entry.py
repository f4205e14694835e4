"""Entering a box: how each rank of a candidate group starts inside its sandbox (evaluator/process/sandbox.py). A rank
runs in the box's filesystem view (bwrap, with its own copy of the box's seccomp filter) when the box has one, and
between fork and exec joins the box's control group and its network and IPC namespaces, takes the box's resource
limits and drops to the box's uid (or, with a view, lets setpriv drop it inside the view).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
from collections.abc import Iterable

from evaluator.process import bwrap, cgroups, seccomp
from evaluator.process.environment import _LIBC, PR_SET_PDEATHSIG

CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
PR_SET_NO_NEW_PRIVS = 38


class BoxEntry:
    """The rank-starting half of :class:`evaluator.process.sandbox.Sandbox` (its attributes are set there)."""

    # Set by Sandbox.__init__ and its set-up (what each means is said there); declared here so that these methods are
    # checked.
    enabled: bool
    filesystem: bool
    uid: int | None
    cgroup: cgroups.BoxCgroup | None
    netns_fd: int | None
    ipcns_fd: int | None
    pidns_fd: int | None
    shared_tmp: str | None
    shared_shm: str | None
    etc_dir: str | None
    devices: list[str]
    device_env: str | None
    pids_max: int
    file_size_bytes: int
    cpus: list[int]
    _seccomp_fd: int | None

    def command(self, argv: list[str], rank_dir: str, writable: Iterable[str], readable: Iterable[str]) -> list[str]:
        """``argv`` as a rank of this group starts it: inside the filesystem view when there is one."""
        if not self.filesystem:
            return argv
        self._close_seccomp()
        self._seccomp_fd = seccomp.open_program()
        setenv = {"CUDA_VISIBLE_DEVICES": self.device_env} if self.device_env else None
        # A view is made only in a box that took a uid, and a rank starts only in a group prepare() gave /tmp and
        # /dev/shm.
        assert self.uid is not None and self.shared_tmp and self.shared_shm and self.etc_dir
        return bwrap.command(
            argv,
            self.uid,
            rank_dir,
            writable,
            readable,
            self.shared_tmp,
            self.shared_shm,
            etc_dir=self.etc_dir,
            pidns_fd=self.pidns_fd,
            devices=self.devices,
            seccomp_fd=self._seccomp_fd,
            setenv=setenv,
        )

    def pass_fds(self) -> tuple:
        """Descriptors the last command()'s bwrap needs open: the box's pid namespace, which bwrap joins itself so
        that the /proc it mounts is the box's (joined before exec, bwrap would show the host's /proc), and its own
        copy of the seccomp filter."""
        if not self.filesystem:
            return ()
        return tuple(fd for fd in (self.pidns_fd, self._seccomp_fd) if fd is not None)

    def _close_seccomp(self) -> None:
        if self._seccomp_fd is not None:
            try:
                os.close(self._seccomp_fd)
            except OSError:
                pass
            self._seccomp_fd = None

    def preexec(self):
        """The function that runs in each candidate rank between fork and exec (as root, before dropping it)."""
        uid, enabled, pids_max, cpus, file_size = self.uid, self.enabled, self.pids_max, self.cpus, self.file_size_bytes
        netns_fd, ipcns_fd = self.netns_fd, self.ipcns_fd
        # The pid namespace is joined by bwrap (pass_fds); without the view the rank would stay outside it and only
        # its children would enter, so it is not joined there.
        join = self.cgroup.joiner() if self.cgroup else None
        drop_here = uid is not None and not self.filesystem  # with a view, setpriv drops inside it

        def confine() -> None:
            if join is not None:
                join()
            if netns_fd is not None and _LIBC.setns(netns_fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns(CLONE_NEWNET) failed")
            if ipcns_fd is not None and _LIBC.setns(ipcns_fd, CLONE_NEWIPC) != 0:
                raise OSError(ctypes.get_errno(), "setns(CLONE_NEWIPC) failed")
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
            if enabled:
                resource.setrlimit(resource.RLIMIT_NPROC, (pids_max, pids_max))
                if cpus:  # the cpuset bounds it for good; where there is none, a start on the right cores
                    os.sched_setaffinity(0, cpus)
                try:
                    with open("/proc/self/oom_score_adj", "w") as f:
                        f.write("1000")
                except OSError:
                    pass
            if drop_here:
                _LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after setuid, which clears it

        return confine
