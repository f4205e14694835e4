"""Exploit (steering the judge with its own numbers): a correct all-reduce whose ranks report every trial call as
taking 100 s. The judge derived its timing plan from the slower side's trial time: how many calls fit a block, each
command's timeout and, on GPU, where the spin ahead of each timed call starts (a longer spin is more room for work
the events do not see). The judge's own clock around the command bounds the claim, and the spin starts from the
reference's trial time alone."""
import sys

import torch.distributed as dist

_patched = set()


def _inflating(reply):
    def send(**fields):
        if "build_ms" in fields:  # a trial's reply
            fields["ms"] = 100_000.0
        return reply(**fields)
    return send


def solution(tensor):
    frame = sys._getframe(1)
    while frame is not None and not hasattr(frame.f_locals.get("self"), "reply"):
        frame = frame.f_back
    if frame is not None:
        worker = frame.f_locals["self"]
        if id(worker) not in _patched:
            _patched.add(id(worker))
            worker.reply = _inflating(worker.reply)
            print("trial replies now claim 100 s", file=sys.stderr, flush=True)
    out = tensor.clone()
    dist.all_reduce(out)
    return out
