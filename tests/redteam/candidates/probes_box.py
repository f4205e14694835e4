"""Exploit probe (escape from the box, run by several judges at once): what this rank can see of the host and of the
other jobs started beside it. It prints one ``probe NAME: WHAT`` line per attempt and returns the right answer, so the
job's verdict is correct and the test reads the probes. Defences: the box (own uid from a box id, own pid namespace,
own control group, /etc by whitelist); see docs/threat-model.md."""
import os
import sys

import torch.distributed as dist

SECRET_PATH = "__SECRET_PATH__"


def _probe(name, what):
    print(f"probe {name}: {what}", file=sys.stderr, flush=True)


def _try_read(path):
    try:
        with open(path, "rb") as f:
            f.read(64)
        return "READ"
    except OSError as exc:
        return f"refused ({exc.strerror})"


if int(os.environ.get("RANK", "0")) == 0:
    _probe("uid", os.getuid())
    _probe("pids", " ".join(sorted(p for p in os.listdir("/proc") if p.isdigit())))
    _probe("etc", " ".join(sorted(os.listdir("/etc"))))
    for path in ("/etc/shadow", "/root/.bashrc", "/proc/1/environ", "/proc/1/root/etc/passwd"):
        _probe(f"read {path}", _try_read(path))
    _probe("read secret", _try_read(SECRET_PATH))
    with open("/proc/self/cgroup") as f:
        _probe("cgroup", " ".join(line.strip() for line in f))


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
