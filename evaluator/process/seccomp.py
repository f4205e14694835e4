"""No user namespace inside a box: a seccomp filter that bwrap installs (``--seccomp FD``) before it runs the rank.

A user namespace would give the candidate a root of its own (capabilities over new mount, network and pid
namespaces), the kernel's widest attack surface for an unprivileged process. The judge runs bwrap as root and drops
to the box's uid with setpriv, so bwrap's own ``--disable-userns`` (0.8+, which needs ``--unshare-user``) does not
apply, and ``user.max_user_namespaces`` is per user namespace (setting it here would be the whole host's). The filter:

- ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` in their flags: EPERM;
- ``clone3``, whose flags are in memory a filter cannot read: ENOSYS, so glibc falls back to ``clone`` (threads,
  ``posix_spawn``), as container runtimes' default profiles do;
- a system call of another ABI (i386 through ``int 0x80``, x32 numbers): EPERM/ENOSYS, so no second syscall table
  slips past the checks above;
- everything else: allowed.

It is thirteen classic-BPF instructions, written out here rather than through a binding of libseccomp (none is
installed on the hosts, and the one on PyPI is unmaintained); ``program()`` is what tests run inside a box.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000
# Per machine: (AUDIT_ARCH_*, unshare, clone, clone3, has x32 numbers)
ARCHES = {"x86_64": (0xC000003E, 272, 56, 435, True), "aarch64": (0xC00000B7, 97, 220, 435, False)}
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data; arg0's low 32 bits (little endian)


def program(machine: str | None = None) -> bytes | None:
    """The filter as bwrap reads it (an array of struct sock_filter), or None on a machine it does not know."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, unshare, clone, clone3, x32 = arch
    eperm, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    # Each jump below is relative to the next instruction: (code, true offset, false offset, k).
    code = [
        (_LD_W_ABS, 0, 0, OFFSET_ARCH),  # 0
        (_JEQ, 0, 9, audit_arch),  # 1: another ABI -> 11 (EPERM)
        (_LD_W_ABS, 0, 0, OFFSET_NR),  # 2
        (_JGE, 8, 0, X32_SYSCALL_BIT) if x32 else (_JEQ, 0, 0, 0),  # 3: x32 -> 12 (ENOSYS); else a no-op
        (_JEQ, 3, 0, unshare),  # 4: -> 8 (flags)
        (_JEQ, 2, 0, clone),  # 5: -> 8 (flags)
        (_JEQ, 5, 0, clone3),  # 6: -> 12 (ENOSYS)
        (_RET, 0, 0, RET_ALLOW),  # 7
        (_LD_W_ABS, 0, 0, OFFSET_ARG0),  # 8
        (_JSET, 1, 0, CLONE_NEWUSER),  # 9: -> 11 (EPERM)
        (_RET, 0, 0, RET_ALLOW),  # 10
        (_RET, 0, 0, eperm),  # 11
        (_RET, 0, 0, enosys),  # 12
    ]
    return b"".join(struct.pack("=HBBI", op, jt, jf, k) for op, jt, jf, k in code)


def open_program() -> int | None:
    """An inheritable descriptor holding the filter, positioned at its start, for one bwrap (each reads its own to the
    end, so every rank gets a descriptor of its own); None where there is no filter for this machine."""
    data = program()
    if data is None:
        return None
    fd = os.memfd_create("pkb-seccomp", 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    return fd
