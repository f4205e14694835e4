"""Exploit (interference that slips past signals): a helper in its own session that forks and exits every millisecond,
so it has a new pid at every pass of a judge that stops the candidate's processes one by one with SIGSTOP, and that
sends SIGCONT to its own stopped rank. It appends one byte to /tmp/HOPS per iteration, so whoever can read the box's
/tmp counts the iterations it got. Defence: the box's freezer stops every process of its control group at once (forks
in flight included) while the reference runs, and SIGCONT does not thaw a frozen process."""
import os
import signal
import time

import torch.distributed as dist

HOPS = "/tmp/HOPS"


def hop(rank_pid):
    fd = os.open(HOPS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    while True:
        os.write(fd, b".")
        try:
            os.kill(rank_pid, signal.SIGCONT)
        except OSError:
            pass
        time.sleep(0.001)
        if os.fork() != 0:
            os._exit(0)  # the child goes on with a new pid


if int(os.environ.get("RANK", "0")) == 0:
    me = os.getpid()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            hop(me)
        os._exit(0)
    os.wait()


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
