"""The build stage: a candidate's extensions built before its GPU job, on CPU cores, in the sandbox, so that the job
holding the GPUs loads them instead of waiting for nvcc.

Kernels written for PKB build lazily, inside ``solution()`` (``compile_cuda_extension``, ``load_inline``). The stage
starts the candidate's group on CPU (gloo, the problem's smallest world size, reduced shapes) in a box like any job,
and runs one trial: the candidate's first call makes its compile calls into the group's build directory, which the
judge then keeps in its build cache (evaluator/process/builds.py) under the key of the GPU job that will load it
(the file's bytes and the toolchain, for ``target_device``). Whatever the trial does after compiling (a CUDA launch
on CPU tensors fails) does not matter; only the builds do.

Outcomes (``status``):
- ``built``: something compiled (or was already cached) and nothing failed: the GPU job compiles nothing;
- ``compile_error``: a compile call failed: the verdict of the file, without ever taking a GPU (the same compiler on
  the same host would fail in the job the same way);
- ``nothing_built``: the first call made no compile call (plain PyTorch, or Triton, which compiles only against a
  GPU at its first launch);
- ``unreached``: the candidate failed before any compile call (it needs a GPU first, a collective the CPU world
  lacks, ...): its GPU job builds as it does without a stage, so nothing can become wrong because of it.
Run the stage with ``CUDA_VISIBLE_DEVICES`` empty and ``TORCH_CUDA_ARCH_LIST`` set to the GPU job's architecture
(a CPU-only process cannot read it from a device): ``pkb prebuild`` (evaluator/cli.py, its PrebuildRequest in
evaluator/contract/requests.py) does both. A ``compile_error`` comes with the file's result document
(:func:`result_document`), which the site stores as the job's verdict without a GPU job.
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import time
from typing import TypedDict

import problems
from evaluator.contract import schema
from evaluator.process import builds, removal, sandbox, warm
from evaluator.process.group import RankGroup, close_all
from evaluator.process.protocol import GroupFailure


class _Shape(TypedDict):
    M: int
    N: int
    dtype: str


SHAPE = _Shape(M=64, N=32, dtype="bfloat16")  # the smallest that every problem's reduced inputs accept
SEED = 1


def smallest_world_size(prob) -> int:
    return next(w for w in range(1, 9) if prob.allows_world_size(w))


def prebuild(
    problem, candidate: str, target_device: str = "cuda", timeout_s: float = 900.0, required: bool | None = None
) -> dict:
    """Build ``candidate``'s extensions for ``problem``'s GPU job and keep them in the build cache; see the module
    docstring for the outcomes. ``required``: the whole sandbox or no run (default: ``PKB_SANDBOX``)."""
    prob = problems.get(problem)
    began = time.monotonic()
    report = {
        "problem": prob.stem,
        "problem_id": prob.id,
        "candidate": os.path.basename(candidate),
        "candidate_sha256": _sha256(candidate),
        "target_device": target_device,
        "arch": os.environ.get("TORCH_CUDA_ARCH_LIST", ""),
    }
    if builds.cache_root() is None:
        return dict(report, status="nothing_built", message="the build cache is off (PKB_BUILD_CACHE=off)", seconds=0.0)
    required = sandbox.required_by_default() if required is None else required
    world_size = smallest_world_size(prob)
    workdir = warm.make_workdir()
    group = None
    logs: list = []
    try:
        group = RankGroup(
            "cand",
            world_size,
            "cpu",
            str(prob.id),
            candidate,
            os.path.join(workdir, "cand"),
            reduced=True,
            trusted=False,
            isolate=sandbox.enabled_by_default(),
            required=required,
            build_device=target_device,
            **SHAPE,
        )
        failure = None
        try:
            group.collect(timeout_s)
            group.command({"cmd": "trial", "trial": 0, "seed": SEED, "tag": "build"}, timeout_s)
        except GroupFailure as exc:
            failure = exc
    except sandbox.SandboxUnavailable as exc:
        return dict(
            report,
            status=schema.INFRA_ERROR,
            message=f"sandbox unavailable: {exc}",
            seconds=round(time.monotonic() - began, 3),
        )
    finally:
        close_all([group])
        built = group.build_report() if group is not None else {}
        logs = group.logs() if group is not None else []  # read before the directory goes
        removal.remove_tree(workdir)  # the candidate's build tree, whatever its shape
    report.update(build=built, world_size=world_size, seconds=round(time.monotonic() - began, 3))
    if built.get("failed"):
        message = failure.message if failure is not None else "a compile call failed"
        # The compiler's output is in the ranks' logs: the file's result shows them as a judged compile_error would.
        return dict(report, status=schema.COMPILE_ERROR, message=message, logs=logs)
    if built.get("compiled") or built.get("loaded_built") or built.get("from_cache"):
        return dict(report, status="built", message="built before the GPU job; it loads the build")
    if failure is not None:
        return dict(
            report,
            status="unreached",
            message=f"no compile call before it failed on CPU "
            f"({failure.kind}: {failure.message[:300]}); the GPU job "
            "builds as without a stage",
        )
    return dict(report, status="nothing_built", message="its first call made no compile call")


def result_document(report: dict) -> dict:
    """The file's result when the stage found its build broken: a ``compile_error`` document shaped as the judge's
    (evaluator/contract/schema.py), marked as the build stage's (``build_stage``), from CPU cores: no GPU was held, so
    it carries no wall time to count as device time."""
    import torch

    stage = {k: report.get(k) for k in ("status", "target_device", "arch", "seconds", "world_size")}
    return {
        "schema": schema.SCHEMA_VERSION,
        "problem": report["problem"],
        "problem_id": report.get("problem_id"),
        "candidate": report.get("candidate", ""),
        "candidate_sha256": report.get("candidate_sha256", ""),
        "world_size": report.get("world_size"),
        "device": "cpu",
        "shape": dict(SHAPE, reduced=True),
        "verdict": schema.COMPILE_ERROR,
        "message": f"{report.get('message', '')} (the build stage, before the {report.get('target_device')} job)",
        "flags": [],
        "trials": [],
        "timing": None,
        "environment": {
            "host": socket.gethostname(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "backend": "gloo",
            "build_stage": True,
        },
        "logs": report.get("logs") or [],
        "attempts": 1,
        "build": report.get("build") or {},
        "build_stage": stage,
    }


def _sha256(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return ""
