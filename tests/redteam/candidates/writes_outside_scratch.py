"""Exploit (escape: writing outside the scratch directory): tamper with a file the judge owns (CANARY), drop files
in a judge-owned directory (DROP_DIR) and in the repository (a problem module would change the reference for every
later job), write into the reference's directory, and leave a file in /tmp (TMP_DROP) for a later job to find.
Defences: another uid (the first four are refused), and the sweep of its files in /tmp at the end. Paths are filled
in by the test."""
import os
import sys

import torch.distributed as dist

CANARY = "__CANARY__"
DROP_DIR = "__DROP_DIR__"
TMP_DROP = "__TMP_DROP__"
REPO_DROP = "__REPO_DROP__"
SCRATCH = os.environ.get("PKB_SCRATCH", ".")
REF_DIR = os.path.normpath(os.path.join(SCRATCH, "..", "..", "ref"))


def attempt(what, fn):
    try:
        fn()
        print(f"writes_outside_scratch: WROTE {what}", file=sys.stderr)
    except OSError as exc:
        print(f"writes_outside_scratch: refused {what}: {exc.strerror}", file=sys.stderr)


def write(path, mode="w"):
    def go():
        with open(path, mode) as f:
            f.write("tampered\n")
    return go


if int(os.environ.get("RANK", "0")) == 0 and not CANARY.startswith("__"):
    attempt("canary", write(CANARY, "a"))
    attempt("drop dir", write(os.path.join(DROP_DIR, "dropped.txt")))
    attempt("repository", write(REPO_DROP))
    attempt("reference dir", write(os.path.join(REF_DIR, "dropped.txt")))
    attempt("tmp", write(TMP_DROP))
    attempt("scratch", write(os.path.join(SCRATCH, "mine.txt")))


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
