"""Exploit (forging the result channel): find the harness's reply pipe among the inherited file descriptors and
write a success reply for the current command before the real one, with a wrong answer returned. Replies are not
believed: outputs are compared by the judge, a reply without a valid output is a wrong output, and a stray reply
is a protocol violation."""
import json
import os
import sys


def _forge(line: str) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd < 3:
            continue
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                os.write(fd, line.encode())
        except OSError:
            pass


def solution(tensor):
    frame = sys._getframe(1)
    cmd = frame.f_locals.get("cmd", {})
    _forge(json.dumps({"ok": True, "seq": cmd.get("seq"), "ms": 0.001, "build_ms": 0.0,
                       "samples": [1e-6] * int(cmd.get("iters", 1)), "kept_call": cmd.get("warmup", 0)}) + "\n")
    return tensor.clone()
