"""One rank of a group (evaluator/process/group.py) started: its command line (``python -m evaluator.rank.worker``
and the job's arguments), its environment, its log files and its reply pipe. A trusted rank is forked from the judge's
fork server where that is on (evaluator/process/forkserver.py), else started fresh; an untrusted one starts fresh,
inside its group's box (evaluator/process/sandbox.py), seeing only its group's directories.
"""

from __future__ import annotations

import os
import subprocess
import sys

from evaluator.process import environment, forkserver
from evaluator.process.protocol import Rank


def start_rank(group, rank, role, world_size, device, problem, candidate, M, N, dtype, reduced, port, log_dir) -> Rank:
    """Start rank ``rank`` of ``group`` (a RankGroup, whose directories and box it uses) and return it."""
    read_fd, write_fd = os.pipe()
    rank_dir = os.path.join(group.workdir, f"rank{rank}")
    os.makedirs(rank_dir, exist_ok=True)
    stdout_path = os.path.join(log_dir, f"rank{rank}.stdout.log")
    stderr_path = os.path.join(log_dir, f"rank{rank}.stderr.log")

    def worker_args(reply_fd: int) -> list:
        return [
            "--role",
            role,
            "--rank",
            str(rank),
            "--world-size",
            str(world_size),
            "--device",
            device,
            "--problem",
            str(problem),
            "--candidate",
            candidate,
            "--M",
            str(M),
            "--N",
            str(N),
            "--dtype",
            dtype,
            "--out",
            group.out_dir,
            "--reply-fd",
            str(reply_fd),
        ] + (["--reduced"] if reduced else [])

    argv = [sys.executable, "-m", "evaluator.rank.worker"] + worker_args(write_fd)
    box = group.sandbox
    fds: tuple[int, ...] = (write_fd,)
    try:
        if box is None:
            group_tmp = os.path.join(group.workdir, "tmp")
            os.makedirs(group_tmp, exist_ok=True)
            env = environment.rank_environment(rank, world_size, port, rank_dir, trusted=True, group_tmp=group_tmp)
            proc = _forked(
                group.device, worker_args(forkserver.REPLY_FD), env, rank_dir, stdout_path, stderr_path, write_fd
            )
            preexec = environment.die_with_judge
        else:
            env = environment.rank_environment(
                rank,
                world_size,
                port,
                rank_dir,
                trusted=False,
                loopback_only=box.loopback_only,
                user=box.user_name,
                build_dir=group.build_dir,
                group_tmp="/tmp" if box.filesystem else _box_tmp(group.workdir, box),
            )
            box.own(rank_dir)
            proc, preexec = None, box.preexec()
            argv = box.command(argv, rank_dir, writable=[group.out_dir, group.build_dir], readable=[group.src_dir])
            fds += box.pass_fds()
        if proc is None:
            with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=out,
                    stderr=err,
                    env=env,
                    cwd=rank_dir,
                    pass_fds=fds,
                    start_new_session=True,
                    preexec_fn=preexec,
                )
    finally:
        os.close(write_fd)
    os.set_blocking(read_fd, False)
    return Rank(rank, proc, read_fd, stdout_path=stdout_path, stderr_path=stderr_path)


def _box_tmp(workdir: str, box) -> str:
    """Without a filesystem view (the box's /tmp is the group's own there), a TMPDIR the group's ranks share."""
    path = os.path.join(workdir, "tmp")
    os.makedirs(path, exist_ok=True)
    box.own(path)
    return path


def _forked(device, args, env, rank_dir, stdout_path, stderr_path, reply_fd):
    """A trusted rank forked from this judge's fork server (evaluator/process/forkserver.py), or None: the caller
    starts a fresh process (the server is off for this device, or failed: never the candidate's fault)."""
    server = forkserver.server() if forkserver.enabled(device) else None
    if server is None:
        return None
    try:
        return server.spawn(args, env, rank_dir, stdout_path, stderr_path, reply_fd)
    except forkserver.ForkServerError as exc:
        forkserver.broken(str(exc))
        return None
