"""A rank's job: its command line (role, rank, world, problem, candidate, shape), the solution it loads, at its start or
on a ``load`` command (the problem's reference, a null answer from evaluator/nulls.py, or the candidate's file imported
as a module), and the shape fields a ``load`` may carry (M, N, dtype, reduced: a warm spare learns its job's with its
first load)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import torch

from evaluator import nulls

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def shape_of(cmd: dict) -> dict:
    """The shape fields a ``load`` may carry, checked: they come from the judge, but nothing here trusts a type."""
    shape = {}
    for key in ("M", "N"):
        if key in cmd:
            shape[key] = int(cmd[key])
    if "dtype" in cmd:
        if cmd["dtype"] not in DTYPES:
            raise ValueError(f"unknown dtype {cmd['dtype']!r}")
        shape["dtype"] = cmd["dtype"]
    if "reduced" in cmd:
        shape["reduced"] = bool(cmd["reduced"])
    return shape


def load_candidate(path: str):
    spec = importlib.util.spec_from_file_location("candidate_solution", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{os.path.basename(path)} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate_solution"] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "solution", None)
    if not callable(fn):
        raise ImportError(f"{os.path.basename(path)} defines no callable solution(*inputs)")
    return fn


def resolve_solution(problem, candidate: str):
    if candidate == "reference":
        return problem.solution
    if candidate.startswith("null:"):
        return nulls.make(candidate[5:], problem)
    return load_candidate(candidate)


def parse_args(argv=None, description: str | None = None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--role", choices=["ref", "cand"], required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world-size", type=int, required=True)
    parser.add_argument("--device", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--problem", required=True)
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--M", type=int, default=1024)
    parser.add_argument("--N", type=int, default=1024)
    parser.add_argument("--dtype", default="bfloat16", choices=sorted(DTYPES))
    parser.add_argument("--reduced", action="store_true")
    parser.add_argument("--out", required=True)
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--dist-timeout", type=float, default=600)
    return parser.parse_args(argv)
