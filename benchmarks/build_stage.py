"""GPU-held seconds per file with and without the build stage (evaluator/judge/prebuild.py), side by side in one run.

For each kernel file, in turn:
- without a stage: a cold build cache, then the GPU job (``judge.evaluate``): the job holds the GPU for its whole
  wall, compiling included;
- with the stage: another cold cache, the stage on CPU cores (its own process, ``CUDA_VISIBLE_DEVICES`` empty,
  otherwise the job's environment), all files' stages at once up to --parallel, then the same GPU job.
Prints one row per file and the totals: GPU-held seconds, the compile seconds inside them and their share.

    python benchmarks/build_stage.py FILE:PROBLEM ... [-W 1] [--device cuda] [--parallel 4] [--json OUT]
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_STAGE = (
    "import json, sys\nfrom evaluator.judge.prebuild import prebuild\n"
    "print(json.dumps(prebuild(sys.argv[1], sys.argv[2], target_device=sys.argv[3])))"
)


def stage(path: str, problem: str, cache: str, device: str) -> dict:
    # The job's environment but for the GPUs: compile_cuda_extension's flags and fingerprint (TORCH_CUDA_ARCH_LIST
    # among them, 9.0 unless the host sets one) must be the job's, or the job compiles again.
    env = dict(os.environ, PKB_BUILD_CACHE=cache, CUDA_VISIBLE_DEVICES="")
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _STAGE, problem, path, device],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.monotonic() - began
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        report = {"status": "stage_failed", "message": done.stderr[-500:]}
    return dict(report, stage_wall_s=round(wall, 2))


def job(path: str, problem: str, cache: str, world_size: int, device: str) -> dict:
    from evaluator import judge

    os.environ["PKB_BUILD_CACHE"] = cache
    began = time.monotonic()
    result = judge.evaluate(problem, path, world_size, device, trials=2, timing=True)
    held = time.monotonic() - began
    build = result.get("build") or {}
    return {
        "verdict": result["verdict"],
        "gpu_held_s": round(held, 2),
        "compile_s": build.get("compile_s", 0.0),
        "compiled": build.get("compiled"),
        "from_cache": build.get("from_cache"),
        "message": (result.get("message") or "")[:200],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", help="FILE:PROBLEM")
    parser.add_argument("-W", "--world-size", type=int, default=1)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--parallel", type=int, default=4, help="stages at once (CPU cores)")
    parser.add_argument("--json")
    parser.add_argument("--skip-without", action="store_true", help="only the stage and its jobs (a re-check)")
    args = parser.parse_args()
    pairs = [f.rsplit(":", 1) for f in args.files]
    root = tempfile.mkdtemp(prefix="pkb-build-stage-")
    rows = []
    # Without a stage: each file's job on a cold cache of its own.
    for path, problem in pairs:
        if args.skip_without:
            rows.append(
                {
                    "file": os.path.basename(path),
                    "problem": problem,
                    "without": {"verdict": "-", "gpu_held_s": 0.0, "compile_s": 0.0},
                }
            )
            continue
        rows.append(
            {
                "file": os.path.basename(path),
                "problem": problem,
                "without": job(
                    path,
                    problem,
                    os.path.join(root, "without", problem + "-" + os.path.basename(path)),
                    args.world_size,
                    args.device,
                ),
            }
        )
        print("without the stage:", json.dumps(rows[-1]), flush=True)
    # With the stage: every file's stage at once (bounded), then the jobs, each on the cache its stage filled.
    caches = [os.path.join(root, "with", problem + "-" + os.path.basename(path)) for path, problem in pairs]
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        stages = list(pool.map(lambda i: stage(pairs[i][0], pairs[i][1], caches[i], args.device), range(len(pairs))))
    stage_wall = time.monotonic() - began
    print(f"stages: {stage_wall:.1f} s", json.dumps(stages), flush=True)
    for row, (path, problem), cache, st in zip(rows, pairs, caches, stages, strict=False):
        row["stage"] = {k: st.get(k) for k in ("status", "message", "stage_wall_s", "build")}
        if st.get("status") == "compile_error":  # the file's verdict: its GPU job never runs
            row["with"] = {
                "verdict": "compile_error",
                "gpu_held_s": 0.0,
                "compile_s": 0.0,
                "compiled": 0,
                "from_cache": None,
                "message": (st.get("message") or "")[:200],
            }
        else:
            row["with"] = job(path, problem, cache, args.world_size, args.device)
        print("with the stage:", json.dumps(row), flush=True)
    print(
        f"W={args.world_size} {args.device}; stages {args.parallel} at once took {stage_wall:.1f} s of wall on "
        "CPU cores, beside no GPU job"
    )
    print(
        f"{'file':<28} {'P':>3} {'without: verdict':<16} {'held s':>7} {'compile s':>9} | {'stage':<13} "
        f"{'stage s':>7} | {'with: verdict':<14} {'held s':>7} {'compile s':>9}"
    )
    for r in rows:
        w, s, t = r["without"], r["stage"], r["with"]
        print(
            f"{r['file']:<28} {r['problem']:>3} {w['verdict']:<16} {w['gpu_held_s']:>7.1f} {w['compile_s']:>9.1f} | "
            f"{s['status']:<13} {s['stage_wall_s'] or 0:>7.1f} | {t['verdict']:<14} {t['gpu_held_s']:>7.1f} "
            f"{t['compile_s']:>9.1f}"
        )
    for label in ("without", "with"):
        held = sum(r[label]["gpu_held_s"] for r in rows)
        comp = sum(r[label]["compile_s"] for r in rows)
        print(
            f"{label} the stage: GPU held {held:.1f} s, compiling {comp:.1f} s of it "
            f"({100 * comp / held if held else 0:.1f}%)"
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"rows": rows, "stage_wall_s": stage_wall}, indent=1))


if __name__ == "__main__":
    main()
