"""Exploit (interference): a thread that keeps running while the judge runs the reference - to slow it down (burn
the CPU, fill caches, hold locks) or to watch its files. Here it only measures whether it gets to run: a heartbeat
every 2 ms, and a log line for every gap longer than 100 ms. Defence: the judge stops (SIGSTOP) every process of
the candidate while the reference runs, so the heartbeat has a gap for each reference block."""
import sys
import threading
import time

import torch.distributed as dist


def _heartbeat():
    last = time.monotonic()
    while True:
        time.sleep(0.002)
        now = time.monotonic()
        if now - last > 0.100:
            print(f"GAP {1e3 * (now - last):.0f} ms", file=sys.stderr, flush=True)
        last = now


threading.Thread(target=_heartbeat, daemon=True).start()


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
