"""Exploit (reading expected outputs from files): the reference ranks write their outputs to files the judge reads.
A background thread watches the reference's output directory (its path follows from this rank's scratch directory)
and copies (hard-links) every file the moment it appears, before the judge deletes it; the solution then returns
the stolen expected output for the current trial. Defences: the reference's directory is root-only and the
candidate runs as another uid; the candidate's processes are stopped while the reference runs; the judge deletes
each reference file before it even tells the candidate to start."""
import os
import shutil
import sys
import threading
import time

import torch

SCRATCH = os.environ.get("PKB_SCRATCH", ".")
REF_OUT = os.path.normpath(os.path.join(SCRATCH, "..", "..", "ref", "out"))
STASH = os.path.join(SCRATCH, "stash")
os.makedirs(STASH, exist_ok=True)
errors = set()


def watch():
    while True:
        try:
            for name in os.listdir(REF_OUT):
                target = os.path.join(STASH, name)
                if not os.path.exists(target):
                    try:
                        os.link(os.path.join(REF_OUT, name), target)
                    except OSError:
                        shutil.copyfile(os.path.join(REF_OUT, name), target)
        except OSError as exc:
            if exc.strerror not in errors:
                errors.add(exc.strerror)
                print(f"snoop: {REF_OUT}: {exc}", file=sys.stderr)
        time.sleep(0.0005)


threading.Thread(target=watch, daemon=True).start()


def solution(tensor):
    frame = sys._getframe(1)
    tag = frame.f_locals.get("cmd", {}).get("tag", "")
    rank = int(os.environ.get("RANK", "0"))
    stolen = os.path.join(STASH, f"{tag}_r{rank}.pt")
    if os.path.exists(stolen):
        print(f"snoop: STOLE {tag}", file=sys.stderr)
        return torch.load(stolen)
    return torch.zeros_like(tensor)
