"""A trusted rank forked from the judge's fork server (evaluator/process/forkserver.py): the child's side.

The forked child becomes the rank its request describes (its own session, death with the server, its standard streams
and reply pipe, environment, working directory and cores) and runs the rank program's main as ``python -m
evaluator.rank.worker`` would. The server imports this module, by the name its command line gives, before it forks
anything: with it torch and the rank program, nothing of which has run, so that no child imports them again.
"""

from __future__ import annotations

import fcntl
import os
import signal
import sys

from evaluator.process import environment
from evaluator.rank import worker  # the point of the server: torch and the rank program, imported once


def become_rank(
    request: dict, stdin: int, stdout: int, stderr: int, reply: int, server_pid: int, session_ready: int
) -> int:
    """In the forked child: turn into the rank ``request`` describes and run it. Returns its exit code."""
    os.setsid()
    os.write(session_ready, b"1")
    environment.die_with_judge()
    if os.getppid() != server_pid:  # the server died between fork and the parent-death signal
        return 1
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # Copied above every target first, so that no dup2 below overwrites a descriptor still to be moved. The reply
    # pipe lands on descriptor 3, the server's REPLY_FD (the rank program's --reply-fd); nothing above it stays open.
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (stdin, stdout, stderr, reply)]
    for target, fd in enumerate(moved):
        os.dup2(fd, target)
    for name in os.listdir("/proc/self/fd"):
        if int(name) >= len(moved):
            try:
                os.close(int(name))
            except OSError:
                pass
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    try:
        os.sched_setaffinity(0, request["cores"])
    except OSError:
        pass
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", buffering=1, closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", buffering=1, closefd=False)
    # As for ``python -m``: the working directory first on the path, the module's file as argv[0] (argparse's name).
    sys.path[0] = request["cwd"]
    sys.argv = [worker.__file__] + request["args"]
    try:
        code = worker.main(request["args"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - as an uncaught exception ends a fresh interpreter
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    return code
