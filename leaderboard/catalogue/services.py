"""Writes of the catalogue: the default hardware profiles and the problems loaded from the registry."""

from __future__ import annotations

from django.db import transaction

from leaderboard.catalogue.models import HardwareProfile, Problem

DEFAULT_PROFILES = [
    dict(
        slug="cpu-gloo",
        name="CPU gloo, W=2 (development)",
        device="cpu",
        world_size=2,
        ranked=False,
        trials=3,
        gpu_type="",
        description="Any machine: gloo ranks on CPU. Wall-clock timings, never ranked.",
    ),
    dict(
        slug="gpu-h200x8",
        name="8x NVIDIA H200 (NVLink)",
        device="cuda",
        world_size=8,
        ranked=True,
        trials=5,
        gpu_type="NVIDIA H200",
        multicast_allowed=False,
        nvlink=True,
        accepting=False,
        description="One host with 8 H200 GPUs; NCCL over NVLink, multicast off. Staff open it for submissions "
        "(admin: accepting) once a worker consumes the gpu-h200x8 queue.",
    ),
    # For single-GPU hosts (docs/site.md, "Workers pinned to their GPUs"): a worker pinned to one H200.
    dict(
        slug="gpu-h200x1",
        name="1x NVIDIA H200",
        device="cuda",
        world_size=1,
        ranked=True,
        trials=5,
        gpu_type="NVIDIA H200",
        multicast_allowed=False,
        nvlink=False,
        accepting=False,
        description="One H200 GPU (W = 1), multicast off. Staff open it for submissions (admin: accepting) once a "
        "worker consumes the gpu-h200x1 queue.",
    ),
    # Development on one GPU (docs/site.md, "Shared-device worlds"): W = 8 ranks of each group share it, so a
    # multi-rank CUDA kernel's logic is judged where no 8-GPU host is at hand. Correctness only, never ranked.
    dict(
        slug="gpu-shared-w8",
        name="1 GPU shared by W=8 ranks (development)",
        device="cuda",
        world_size=8,
        ranked=False,
        trials=3,
        gpu_type="",
        multicast_allowed=False,
        nvlink=False,
        shared_device=True,
        accepting=False,
        description="Every rank of W = 8 on one GPU (gloo with CUDA tensors): shows a kernel's multi-rank logic is "
        "correct on CUDA; says nothing of NVLink transfers, NCCL itself or speed (never timed, never "
        "ranked). Staff open it once a worker pinned to one GPU consumes the gpu-shared-w8 queue.",
    ),
]


def profiles_ensure_defaults() -> list[HardwareProfile]:
    """Create the default profiles (CPU gloo, H200x8, H200x1, one GPU shared by 8 ranks) that are missing; never
    overwrite staff's edits. ``load_problems`` calls it, so a deployed database gains a new default profile at its next
    load."""
    out = []
    for spec in DEFAULT_PROFILES:
        profile, _ = HardwareProfile.objects.get_or_create(slug=spec["slug"], defaults=spec)
        out.append(profile)
    return out


def problems_load(catalogue: dict[int, dict], registry: dict, highlight=None) -> dict:
    """Upsert the 87 problems: catalogue facts for all, reference source and docstring for implemented ones."""
    existing = set(Problem.objects.values_list("id", flat=True))
    rows = [
        Problem(id=pid, **_problem_values(facts, registry.get(pid), highlight))
        for pid, facts in sorted(catalogue.items())
    ]
    with transaction.atomic():
        Problem.objects.bulk_create([p for p in rows if p.id not in existing])
        fields = [f.name for f in Problem._meta.fields if f.name != "id"]
        Problem.objects.bulk_update([p for p in rows if p.id in existing], fields, batch_size=100)
    created = sum(1 for p in rows if p.id not in existing)
    return {"created": created, "updated": len(rows) - created, "implemented": len(registry)}


def _problem_values(facts: dict, problem, highlight) -> dict:
    values = dict(
        stem=facts["stem"],
        title=facts.get("title", ""),
        category=facts.get("category", ""),
        parallelism=facts.get("parallelism", ""),
        origin=facts.get("origin", ""),
        world_size_rule=facts.get("world_size_rule", ""),
        signature=facts.get("signature", ""),
        timed_arg=facts.get("timed_arg", ""),
        output=facts.get("output", ""),
        collectives=facts.get("collectives", []),
        bytes_per_rank=facts.get("default_bytes_per_rank_moved", 0) or 0,
        flops_per_rank=facts.get("default_flops_per_rank", 0) or 0,
        implemented=problem is not None,
        atol=None,
        rtol=None,
        docstring="",
        reference_source="",
        reference_html="",
        light={},
    )
    if problem is not None:
        source = problem.source()
        values.update(
            atol=problem.atol,
            rtol=problem.rtol,
            docstring=problem.docstring,
            reference_source=source,
            reference_html=highlight(source) if highlight else "",
            light=_light(problem),
            timed_arg=problem.timed_arg_name(),
        )
    return values


def _light(problem) -> dict:
    try:
        return {str(w): problem.light(W=w) for w in (2, 8) if problem.allows_world_size(w)}
    except Exception as exc:  # noqa: BLE001 - a formula that fails in any way must not stop the catalogue from loading
        return {"error": str(exc)}
