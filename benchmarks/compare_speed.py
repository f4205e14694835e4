"""The judge's output comparison on a large output, sliced (problems/tolerance.py CHUNK) against one slice for the whole
tensor (what the check did before slicing), side by side in one run:

    python benchmarks/compare_speed.py [--elements 150000000] [--dtype bfloat16] [--repeats 3]

The candidate's output differs from the reference's by a little everywhere (the common case for a correct candidate:
bit-equal outputs take a fast path before this check). 150M elements is problem 77's output at W = 1.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import torch

from problems import tolerance as compare


def timed(expected, actual, chunk: int, repeats: int) -> float:
    compare.CHUNK = chunk
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        result = compare.compare(expected, actual, 1e-2, 1e-2)
        times.append(time.perf_counter() - began)
        assert result.ok
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=150_000_000)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    expected = torch.randn(args.elements, generator=torch.Generator().manual_seed(0)).to(dtype)
    actual = (expected.float() + 1e-3).to(dtype)
    sliced_chunk = compare.CHUNK
    whole = timed(expected, actual, args.elements, args.repeats)
    sliced = timed(expected, actual, sliced_chunk, args.repeats)
    compare.CHUNK = sliced_chunk
    print(
        f"{args.elements} {args.dtype} elements, {torch.get_num_threads()} threads: whole tensor {whole:.2f} s, "
        f"slices of {sliced_chunk} {sliced:.2f} s -> {whole / sliced:.1f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
