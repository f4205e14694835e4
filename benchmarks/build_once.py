"""Compile once, measured: the same C++-extension candidate (compiled lazily in solution(), the usual pattern) judged
twice at W ranks on this machine, through the real judge. Prints each judgement's wall, the compile seconds the
ranks reported, how many ranks compiled and how many loaded a build; the second judgement starts from the judge's
build cache. Before evaluator/process/builds.py every rank compiled in a directory of its own, every job again.

    python benchmarks/build_once.py [-W 2] [--device cpu] [--candidate PATH] [--problem 1]
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from evaluator import judge

DEFAULT = pathlib.Path(__file__).resolve().parents[1] / "tests/evaluator/compat/candidates/lazy_cpp_extension.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-W", "--world-size", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--problem", default="1")
    parser.add_argument("--candidate", default=str(DEFAULT))
    args = parser.parse_args()
    os.environ["PKB_BUILD_CACHE"] = tempfile.mkdtemp(prefix="pkb-build-cache-")  # a cold cache
    shape = dict(M=64, N=32) if args.device == "cpu" else {}
    rows = []
    for label in ("cold cache", "warm cache"):
        began = time.monotonic()
        result = judge.evaluate(
            args.problem,
            args.candidate,
            args.world_size,
            args.device,
            trials=2,
            seed=1,
            timing=False,
            timeout_s=600,
            **shape,
        )
        wall = time.monotonic() - began
        build = result.get("build") or {}
        rows.append(
            (
                label,
                result["verdict"],
                wall,
                build.get("compile_s"),
                build.get("compiled"),
                build.get("loaded_built"),
                build.get("from_cache"),
            )
        )
    print(f"{'judgement':<11} {'verdict':<9} {'wall s':>7} {'compile s':>9} {'compiled':>8} {'loaded':>6} cache")
    for label, verdict, wall, seconds, compiled, loaded, cached in rows:
        print(f"{label:<11} {verdict:<9} {wall:>7.1f} {seconds or 0:>9.1f} {compiled!s:>8} {loaded!s:>6} {cached}")
    print(f"second / first wall: {rows[1][2] / rows[0][2]:.2f}")


if __name__ == "__main__":
    main()
