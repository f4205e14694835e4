"""The init of a sandbox box, run by the judge as ``python -S box_init.py EMPTY_DIR SHM_BYTES`` (standard library only,
no site, no torch), already inside the box's control group.

It makes the box's namespaces and keeps them alive while the box lives:
- network and IPC: loopback only, and System V shared memory bounded to SHM_BYTES in all (the host's limits are
  unlimited, and a namespace's own start from them) with segments removed when their last user goes
  (``shm_rmid_forced``);
- a pid namespace, whose first process (pid 1) this program forks: the ranks' processes join it, see one another and
  nothing else, and every process orphaned inside is reaped here, so no zombie reaches the worker. pid 1 runs in an
  empty root of its own (it is root, and a candidate must not reach the host's files through it) and dies with its
  parent; when it dies the kernel kills everything in the namespace.

The parent prints ``ok PID`` (pid 1's pid as the judge sees it) and waits for its standard input to close.
"""

import ctypes
import fcntl
import os
import signal
import socket
import struct
import sys

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x20000000, 0x40000000, 0x08000000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
PR_SET_PDEATHSIG = 1
PAGE = os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    empty, shm_bytes = sys.argv[1], int(sys.argv[2])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID) != 0:
        print(f"unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID) failed: errno {ctypes.get_errno()}", flush=True)
        sys.exit(1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0)))[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 0x1 | 0x40))
    s.close()
    for name, value in (
        ("shmmax", shm_bytes),
        ("shmall", max(1, shm_bytes // PAGE)),
        ("shmmni", 64),
        ("shm_rmid_forced", 1),
    ):
        with open("/proc/sys/kernel/" + name, "w") as f:
            f.write(str(value))
    pid = os.fork()
    if pid == 0:
        init(libc, empty)
    print(f"ok {pid}", flush=True)
    try:
        sys.stdin.read()
    finally:
        os.kill(pid, signal.SIGKILL)


def init(libc, empty: str) -> None:
    """pid 1 of the box: reap every child, forever (until killed by the judge, or with its parent)."""
    try:
        # A parent that died before this line leaves pid 1 running: the judge's kill of the box's group ends it.
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.unshare(CLONE_NEWNS)
        libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
        os.chroot(empty)
        os.chdir("/")
    except OSError:
        pass
    os.closerange(0, 3)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        signal.sigtimedwait({signal.SIGCHLD}, 1.0)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


if __name__ == "__main__":
    main()
