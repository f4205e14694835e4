"""Exploit (interference): kill the job's reference ranks (found by their command line). A failing reference is an
infra_error, retried and never counted against the candidate - a way to hide a failure, or to stall the platform.
Defences: the box's pid namespace (the reference's processes are not there to find), another uid (a kill is
refused); and where those layers are missing, the judge re-runs the failed command on a fresh reference alone and,
if it passes there, blames the candidate (runtime_error)."""
import os
import signal
import sys

import torch.distributed as dist

REF_OUT = os.path.normpath(os.path.join(os.environ.get("PKB_SCRATCH", "."), "..", "..", "ref", "out")).encode()
done = []


def kill_reference():
    found = 0
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"evaluator.rank.worker" in argv and b"ref" in argv and REF_OUT in argv:
            found += 1
            try:
                os.kill(int(pid), signal.SIGKILL)
                print(f"kills_reference: KILLED reference rank pid {pid}", file=sys.stderr)
            except OSError as exc:
                print(f"kills_reference: refused pid {pid}: {exc.strerror}", file=sys.stderr)
    print(f"kills_reference: {found} reference ranks visible", file=sys.stderr)


def solution(tensor):
    if not done and dist.get_rank() == 0:
        done.append(1)
        kill_reference()
    out = tensor.clone()
    dist.all_reduce(out)
    return out
