"""Exploit (forging the result channel): claim a platform failure. An infra_error is retried and never counts
against a candidate, so a failing candidate would hide its failure (and make the platform retry forever). Only
failures before the candidate's code ran (process-group start-up) are believed to be the platform's."""
import json
import os
import sys

reply_fd = int(sys.argv[sys.argv.index("--reply-fd") + 1])
os.write(reply_fd, (json.dumps({"ok": False, "kind": "infra_error",
                                "error": "CUDA error: GPU has fallen off the bus (not my fault)"}) + "\n").encode())


def solution(tensor):
    raise RuntimeError("never reached")
