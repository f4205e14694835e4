"""Honest control under the sandbox: uses its scratch directory, TMPDIR, a helper thread, the PKB utils modules and
loopback networking between its own ranks (the process group itself) - everything a real kernel may need."""
import os
import tempfile
import threading

import torch
import torch.distributed as dist
from utils.triton_utils import cdiv  # noqa: F401  (PKB-compatible helpers must import inside the sandbox)

scratch = os.environ["PKB_SCRATCH"]
with open(os.path.join(scratch, "build.log"), "w") as f:
    f.write("compiled\n")
with tempfile.NamedTemporaryFile(dir=os.environ["TMPDIR"], delete=True) as f:
    f.write(b"x" * 1024)
cache = torch.zeros(4)
worker = threading.Thread(target=lambda: torch.save(cache, os.path.join(scratch, "cache.pt")))
worker.start()
worker.join()


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
