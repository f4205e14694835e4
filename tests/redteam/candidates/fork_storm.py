"""Exploit (exhausting the worker's pid space): fork thousands of children that exit at once and are never waited
for, from a helper in its own session that then exits too, so that each becomes a zombie that nobody reaps; plus a
double-forked daemon that keeps running. Defences: the box's init (pid 1 of its pid namespace) reaps every orphan, the
box's pids limit bounds the storm, and the end of the job kills the box's control group. MARKER is filled in by the
test so it can look for survivors."""
import os
import sys
import time

import torch.distributed as dist

MARKER = "__MARKER__"
STORM = 1000  # a thousand from each of two processes: every one an orphan or a zombie the box must clear


def storm():
    made = 0
    for _ in range(STORM):
        try:
            if os.fork() == 0:
                os._exit(0)
            made += 1
        except OSError:
            time.sleep(0.001)
    print(f"storm: {made} children never waited for", file=sys.stderr, flush=True)


if int(os.environ.get("RANK", "0")) == 0:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:  # a daemon that outlives the storm's helper
            os.execv(sys.executable, [sys.executable, "-S", "-c", "import time\nwhile True: time.sleep(1)", MARKER])
        storm()
        os._exit(0)  # its zombies are orphans now
    time.sleep(1.0)
    storm()  # and some of the rank's own, never waited for


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
