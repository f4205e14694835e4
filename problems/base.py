"""The problem contract: what every one of the 87 workloads provides.

A problem module (``problems/pNN_<rest>.py``) defines ``make_inputs(ctx)`` and ``solution(*inputs)`` and ends with
``PROBLEM = Problem(...)``. Catalogue facts (title, category, signature, default bytes/FLOPs) come from
``problems/catalogue.json``, a copy of the shared specification's data, so a module only states what the spec leaves
to us: the world-size rule as code, tolerances, and the input builder and reference.

This module imports torch only; it never imports Django or the evaluator.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import pathlib
from collections.abc import Callable
from typing import Any

import torch

CATALOGUE_PATH = pathlib.Path(__file__).with_name("catalogue.json")
_CATALOGUE: dict[int, dict] | None = None


def catalogue() -> dict[int, dict]:
    global _CATALOGUE
    if _CATALOGUE is None:
        _CATALOGUE = {entry["id"]: entry for entry in json.loads(CATALOGUE_PATH.read_text())}
    return _CATALOGUE


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts; stable across processes and Python versions (unlike hash())."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


@dataclasses.dataclass
class InputContext:
    """Everything an input builder may depend on, for rank ``rank`` of ``world_size`` in one trial.

    ``seed`` is picked by the judge per trial; builders never use a constant seed. Call ``ctx.seed(key)`` before each
    draw that the spec says is shared by a set of ranks, with a key that is equal exactly on those ranks (``ctx.rank``
    for rank-specific data, ``"shared"`` for data identical on every rank, ``("tp", tp_rank)`` for data shared by a
    TP group...).
    """

    rank: int
    world_size: int
    M: int = 1024
    N: int = 1024
    dtype: torch.dtype = torch.bfloat16
    device: torch.device | str = "cpu"
    seed_base: int = 0
    trial: int = 0
    problem_id: int = 0
    # True only in CPU development runs (tests, ``pkb selfcheck --reduced``): a builder whose spec fixes sizes that
    # are far too large for a CPU world may shrink those (and must say so in its docstring). Interface, dtypes and
    # semantics stay the same; the judge never sets it on GPU hosts or for ranked runs.
    reduced: bool = False
    groups: dict = dataclasses.field(default_factory=dict)

    def seed(self, key: Any = None) -> int:
        """Seed torch's global RNGs (CPU and CUDA) from the trial seed, the problem and ``key``; returns the seed."""
        value = derive_seed(self.seed_base, self.problem_id, self.rank if key is None else key)
        torch.manual_seed(value)
        return value

    def generator(self, key: Any = None) -> torch.Generator:
        """A private generator on the rank's device, seeded like ``seed(key)``."""
        gen = torch.Generator(device=self.device)
        gen.manual_seed(derive_seed(self.seed_base, self.problem_id, self.rank if key is None else key))
        return gen

    def new_group(self, ranks: list[int] | tuple[int, ...]):
        """A process group over ``ranks``, created once per process and reused across trials.

        Every rank must call this for every group, in the same order (torch.distributed's rule), even for groups it
        is not a member of; the return value is then a non-member handle.
        """
        import torch.distributed as dist

        key = tuple(int(r) for r in ranks)
        if key not in self.groups:
            self.groups[key] = dist.new_group(list(key))
        return self.groups[key]


@dataclasses.dataclass
class Problem:
    id: int
    make_inputs: Callable[[InputContext], tuple]
    solution: Callable[..., Any]
    allows_world_size: Callable[[int], bool] = lambda w: w >= 1
    atol: float = 1e-2
    rtol: float = 1e-2
    # Optional extra absolute tolerance for one expected tensor at world size W: slack(expected, W) -> float. Used
    # for outputs whose value depends on the order of low-precision additions (documented in the module docstring).
    slack: Callable[[torch.Tensor, int], float] | None = None
    # Optional full override: compare(expected, actual, W) -> None if equal, else a message. Only where an
    # element-wise check cannot express the semantics (e.g. a set whose order is free); documented in the docstring.
    compare: Callable[[Any, Any, int], str | None] | None = None
    # Why this problem's spec fixes the output dtype (e.g. a quantizer's fp8 payload), or None: the judge's dtype rule
    # then applies (docs/dtype.md: integers by value, another floating dtype within tolerance is correct but flagged).
    strict_dtype: str | None = None
    # Optional timed-argument override (name); defaults to the catalogue's timed_arg.
    timed_arg: str | None = None
    # Seconds the judge allows for one command (one trial or one timing block) before declaring a hang.
    timeout_s: float = 120.0
    # Null answers (evaluator/nulls.py) that are correct by the spec's own semantics: kind -> reason, or kind ->
    # callable(W) returning the reason at world sizes where it applies (else None). The self-check reports them as
    # exempt instead of failing. Only for quirks kept for PKB compatibility, each explained in the docstring.
    nulls_that_pass: dict = dataclasses.field(default_factory=dict)
    # Optional: speed_of_light(M, N, W, dtype) -> {"bytes_per_rank": int, "flops_per_rank": int}.
    speed_of_light: Callable[..., dict] | None = None

    def null_exemption(self, kind: str, world_size: int) -> str | None:
        reason = self.nulls_that_pass.get(kind)
        return reason(world_size) if callable(reason) else reason

    # --- catalogue facts -------------------------------------------------------------------------------------------
    @property
    def facts(self) -> dict:
        return catalogue()[self.id]

    @property
    def stem(self) -> str:
        return self.facts["stem"]

    @property
    def title(self) -> str:
        return self.facts["title"]

    @property
    def category(self) -> str:
        return self.facts["category"]

    @property
    def world_size_rule(self) -> str:
        return self.facts["world_size_rule"]

    @property
    def module(self):
        return inspect.getmodule(self.solution)

    @property
    def docstring(self) -> str:
        return inspect.getdoc(self.module) or ""

    def source(self) -> str:
        return inspect.getsource(self.module)

    def timed_arg_name(self) -> str:
        return self.timed_arg or self.facts.get("timed_arg") or next(iter(self.parameter_names()), "")

    def parameter_names(self) -> list[str]:
        return list(inspect.signature(self.solution).parameters)

    def timed_arg_index(self) -> int:
        names = self.parameter_names()
        name = self.timed_arg_name()
        return names.index(name) if name in names else 0

    def light(self, M: int = 1024, N: int = 1024, W: int = 8, dtype=torch.bfloat16) -> dict:
        """Bytes each rank must move and FLOPs it performs; the catalogue's defaults when no formula is given."""
        if self.speed_of_light is not None:
            return self.speed_of_light(M, N, W, dtype)
        return {
            "bytes_per_rank": self.facts.get("default_bytes_per_rank_moved", 0),
            "flops_per_rank": self.facts.get("default_flops_per_rank", 0),
            "at_defaults_only": True,
        }

    def summary(self) -> dict:
        return {
            "id": self.id,
            "stem": self.stem,
            "title": self.title,
            "category": self.category,
            "parallelism": self.facts.get("parallelism", ""),
            "origin": self.facts.get("origin", ""),
            "world_size_rule": self.world_size_rule,
            "signature": self.facts.get("signature", ""),
            "timed_arg": self.timed_arg_name(),
            "atol": self.atol,
            "rtol": self.rtol,
            "default_bytes_per_rank_moved": self.facts.get("default_bytes_per_rank_moved", 0),
            "default_flops_per_rank": self.facts.get("default_flops_per_rank", 0),
        }


def bf16_sum_slack(expected: torch.Tensor, world_size: int, terms_per_rank: int = 1) -> float:
    """Extra tolerance for a sum of ``world_size`` low-precision partials added in an unknown order.

    Each addition in bf16 rounds with a relative error of at most 2**-8 of the running sum, so W partials summed in
    any order (ring, tree, fp32 with one rounding) differ by at most about (W - 1) * 2**-8 * |running sum|. We bound
    the running sum by a few RMS of the result. A no-communication or all-zeros answer misses by O(RMS), far beyond.
    """
    if world_size <= 1 or expected.numel() == 0 or not expected.is_floating_point():
        return 0.0
    rms = expected.detach().float().pow(2).mean().sqrt().item()
    unit = 2.0**-8 if expected.dtype in (torch.bfloat16, torch.float16) else 2.0**-23
    return (world_size - 1) * terms_per_rank * unit * 3.0 * rms
