"""The 87 ParallelKernelBench workloads, discovered from ``problems/pNN_*.py`` and keyed by id and by PKB stem."""

from __future__ import annotations

import importlib
import pkgutil
import re

from problems.base import InputContext, Problem, catalogue

_MODULE_RE = re.compile(r"^p(\d{2})_\w+$")
_REGISTRY: dict[int, Problem] | None = None
# Modules that failed to import, by id: one broken problem must not take the other 86 down with it.
BROKEN: dict[int, str] = {}


class UnknownProblem(LookupError):
    pass


def registry() -> dict[int, Problem]:
    global _REGISTRY
    if _REGISTRY is None:
        found: dict[int, Problem] = {}
        for info in pkgutil.iter_modules(__path__):
            match = _MODULE_RE.match(info.name)
            if not match:
                continue
            try:
                module = importlib.import_module(f"problems.{info.name}")
                problem: Problem = module.PROBLEM
            except Exception as exc:  # noqa: BLE001 - reported by get() and `pkb problems list`
                BROKEN[int(match.group(1))] = f"problems/{info.name}.py failed to import: {type(exc).__name__}: {exc}"
                continue
            if problem.id != int(match.group(1)):
                raise RuntimeError(f"problems/{info.name}.py declares id {problem.id}")
            found[problem.id] = problem
        _REGISTRY = dict(sorted(found.items()))
    return _REGISTRY


def get(key) -> Problem:
    """A problem by id (13, "13") or by PKB stem ("13_gemm_allreduce"); raises UnknownProblem."""
    text = str(key).strip()
    if text.isdigit():
        problem = _one(int(text)) if _REGISTRY is None else _REGISTRY.get(int(text))
    else:
        problem = next((p for p in registry().values() if p.stem == text), None)
        if problem is None:
            # A stem we know from the catalogue but whose module is not written yet.
            known = {entry["stem"] for entry in catalogue().values()}
            if text in known:
                raise UnknownProblem(f"problem {text!r} is in the catalogue but not implemented yet")
    if problem is None and text.isdigit() and int(text) in BROKEN:
        raise UnknownProblem(BROKEN[int(text)])
    if problem is None:
        raise UnknownProblem(f"unknown problem {key!r}: give an id 1-87 or a stem such as 13_gemm_allreduce")
    return problem


def _one(problem_id: int) -> Problem | None:
    """One problem by id without importing the other 86: every rank process starts with this, and importing all of
    them (with their helpers) is a measurable part of a rank's start."""
    names = [
        info.name
        for info in pkgutil.iter_modules(__path__)
        if info.name.startswith(f"p{problem_id:02d}_") and _MODULE_RE.match(info.name)
    ]
    if len(names) != 1:
        return registry().get(problem_id)  # none or ambiguous: the full scan reports it
    try:
        problem = importlib.import_module(f"problems.{names[0]}").PROBLEM
    except Exception:  # noqa: BLE001 - the full scan records it in BROKEN with its message
        return registry().get(problem_id)
    return problem if problem.id == problem_id else registry().get(problem_id)


def stem_of(problem_id: int) -> str:
    return catalogue()[problem_id]["stem"]


__all__ = ["InputContext", "Problem", "UnknownProblem", "get", "registry", "catalogue", "stem_of"]
