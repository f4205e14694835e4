"""Count live judge rank workers from /proc (no psutil dependency)."""
import os


def rank_workers(marker: str = "") -> int:
    """Rank workers alive now; with ``marker``, only those whose command line contains it (e.g. a private temp dir,
    so that judges run by other processes on the same machine do not count)."""
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"evaluator.rank.worker" in cmdline and marker.encode() in cmdline:
            count += 1
    return count
