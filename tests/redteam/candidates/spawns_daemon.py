"""Exploit (escape: processes that outlive the job): double-fork two daemons in new sessions (out of reach of the
per-rank process-group kill); one keeps the environment, the other execs with an empty one (no trace of the job in
/proc/PID/environ). Each rewrites a heartbeat file every 50 ms forever. Defences: every process of the candidate's
uid is killed at the end; without a separate uid, processes carrying the job's scratch path in their environment
are. HEARTBEAT and MARKER are filled in by the test."""
import os
import sys

import torch.distributed as dist

HEARTBEAT = "__HEARTBEAT__"
MARKER = "__MARKER__"
LOOP = "import sys, time\nwhile True:\n    open(sys.argv[1], 'w').write(str(time.time()))\n    time.sleep(0.05)\n"


def daemon(path, clean_env):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            argv = [sys.executable, "-S", "-c", LOOP, path, MARKER]
            if clean_env:
                os.execve(sys.executable, argv, {})
            os.execv(sys.executable, argv)
        os._exit(0)
    os.waitpid(pid, 0)


if int(os.environ.get("RANK", "0")) == 0 and not HEARTBEAT.startswith("__"):
    daemon(HEARTBEAT + "-env", clean_env=False)
    daemon(HEARTBEAT + "-clean", clean_env=True)


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
