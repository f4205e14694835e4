"""The decompression bombs of issue 25 against the upload path: time to refuse and peak memory of the parsing process.

    .venv/bin/python benchmarks/upload_bombs.py [--cache /tmp/pkb-bombs] [--bzip2-megabytes 3072]

Bombs (tests/site/security/bombs.py builds them without holding the inflated bytes; the bzip2 one takes ~40 s to
compress once and is cached):
    deflate-1     a ~1 MB zip: one deflate member of 1 GiB of zeros whose headers claim 1,000 bytes
    deflate-12    a ~12 MB zip: twelve such members
    bzip2         a ~2.4 KB zip: one bzip2 member of 3 GiB of zeros claiming 1,000 bytes
    tar.gz        a ~1 MB .tar.gz: one member of 1 GiB of zeros (honest tar header, gzip ~1000:1)
and, for comparison, an honest upload of 87 files x 3 attempts.

Each runs in a fresh process (production settings module, site defaults: 16 MiB per upload, 512 KiB per file) that
reads the bomb from disk, then calls what the web view calls before any database work
(submissions_services.upload_members, then uploads.parse), and prints the wall time of that call and the process's peak
RSS (ru_maxrss) before and after. Target from the issue: refused in under 1 s with the process under 200 MB peak.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def build(cache: Path, bzip2_megabytes: int) -> dict[str, Path]:
    from tests.site.conftest import GOOD_1, zip_bytes
    from tests.site.security import bombs

    cache.mkdir(parents=True, exist_ok=True)
    makers = {
        "deflate-1.zip": lambda: bombs.deflate_bomb(members=1, megabytes=1024),
        "deflate-12.zip": lambda: bombs.deflate_bomb(members=12, megabytes=1024),
        f"bzip2-{bzip2_megabytes}.zip": lambda: bombs.bzip2_bomb(megabytes=bzip2_megabytes),
        "bomb.tar.gz": lambda: bombs.tar_gz_bomb(megabytes=1024),
        "honest.zip": lambda: zip_bytes(
            {f"attempt_{a}/{p}_x_cuda.py": GOOD_1 for a in (1, 2, 3) for p in range(1, 88)}
        ),
    }
    paths = {}
    for name, make in makers.items():
        path = cache / name
        if not path.exists():
            started = time.perf_counter()
            path.write_bytes(make())
            print(f"built {name}: {path.stat().st_size:,} bytes in {time.perf_counter() - started:.1f} s", flush=True)
        paths[name] = path
    return paths


def child(path: Path) -> None:
    """One measurement, in this fresh process."""
    import resource

    import django

    django.setup()
    from leaderboard.submissions import services as submissions_services
    from leaderboard.submissions import uploads

    data = path.read_bytes()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    try:
        members = submissions_services.upload_members([(path.name, data)])
        uploads.parse(members, {f"{p}_x": p for p in range(1, 88)}, submissions_services.upload_limits())
        outcome = "accepted"
    except uploads.UploadRejected as exc:
        outcome = f"refused: {exc.errors[-1].rule} ({len(exc.errors)} error(s))"
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mb": peak / 1024,
                "before_mb": before / 1024,
                "outcome": outcome,
                "bytes": len(data),
            }
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/pkb-bombs"))
    parser.add_argument("--bzip2-megabytes", type=int, default=3072)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    paths = build(args.cache, args.bzip2_megabytes)
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
        PKB_DATA_DIR=str(args.cache / "site"),
        DATABASE_URL=f"sqlite:///{args.cache}/site/db.sqlite3",
        DJANGO_SECRET_KEY="bench",
    )
    for name in ("PKB_MAX_UPLOAD_BYTES", "PKB_MAX_FILE_BYTES", "PKB_MAX_ATTEMPTS"):
        env.pop(name, None)
    print(f"{'upload':<22}{'size':>12}{'time':>10}{'peak RSS':>11}{'RSS before':>12}  outcome")
    worst_time = worst_peak = 0.0
    for name, path in paths.items():
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(path)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            print(f"{name}: the child failed\n{done.stderr}")
            return 1
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{name:<22}{row['bytes']:>12,}{row['seconds']:>9.3f}s{row['peak_mb']:>9.0f}MB{row['before_mb']:>10.0f}MB"
            f"  {row['outcome']}"
        )
        if name != "honest.zip":
            worst_time, worst_peak = max(worst_time, row["seconds"]), max(worst_peak, row["peak_mb"])
    verdict = "met" if worst_time < 1.0 and worst_peak < 200 else "NOT met"
    print(
        f"bombs: slowest refusal {worst_time:.3f} s, highest peak {worst_peak:.0f} MB; target (< 1 s, < 200 MB) "
        f"{verdict}"
    )
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())
