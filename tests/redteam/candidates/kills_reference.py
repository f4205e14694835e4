"""Exploit (interference): kill the job's reference ranks (found by their command line, or by their working directory
where they were forked from the judge's fork server). A failing reference is an
infra_error, retried and never counted against the candidate - a way to hide a failure, or to stall the platform.
Defences: the box's pid namespace (the reference's processes are not there to find), another uid (a kill is
refused); and where those layers are missing, the judge re-runs the failed command on a fresh reference alone and,
if it passes there, blames the candidate (runtime_error)."""
import os
import signal
import sys

import torch.distributed as dist

REF = os.path.normpath(os.path.join(os.environ.get("PKB_SCRATCH", "."), "..", "..", "ref"))
REF_OUT = os.path.join(REF, "out").encode()
done = []


def is_reference(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        if b"evaluator.rank.worker" in argv and b"ref" in argv and REF_OUT in argv:
            return True
        return os.path.dirname(os.readlink(f"/proc/{pid}/cwd")) == REF
    except OSError:
        return False


def kill_reference():
    found = 0
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        if is_reference(pid):
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
