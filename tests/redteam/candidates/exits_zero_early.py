"""Exploit (forging the result channel, exiting 0 early): write an output file and a success reply itself, then
exit with status 0 before the harness can do anything else."""
import json
import os
import sys

import torch


def solution(tensor):
    cmd = sys._getframe(1).f_locals.get("cmd", {})
    out_dir = sys.argv[sys.argv.index("--out") + 1]
    rank = int(os.environ.get("RANK", "0"))
    torch.save(torch.zeros_like(tensor), os.path.join(out_dir, f"{cmd.get('tag')}_r{rank}.pt"))
    reply_fd = int(sys.argv[sys.argv.index("--reply-fd") + 1])
    os.write(reply_fd, (json.dumps({"ok": True, "seq": cmd.get("seq"), "ms": 0.001}) + "\n").encode())
    os._exit(0)
