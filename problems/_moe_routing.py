"""Shared pieces of the VeOmni expert-parallel problems 26-29: E = 8 experts split evenly over the W ranks of WORLD,
top-2 routing, the (synthetic) equal all-to-all splits, the per-local-expert counts, and the token permutations."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from problems.base import InputContext

NUM_EXPERTS = 8
TOP_K = 2


def divides_experts(world_size: int) -> bool:
    """The EP rule of problems 26, 28 and 29: each rank owns E / W experts."""
    return world_size >= 1 and NUM_EXPERTS % world_size == 0


def two_distinct_experts(ctx: InputContext) -> torch.Tensor:
    """(M, 2) int64: per token, the first two entries of a random permutation of the experts (slot order kept).

    PKB draws one randperm(8) per token in a Python loop; sorting M rows of uniform keys gives the same distribution.
    """
    return torch.rand(ctx.M, NUM_EXPERTS, device=ctx.device).argsort(dim=1)[:, :TOP_K]


def equal_splits(total: int, world_size: int) -> list[int]:
    """total // W rows per peer, the remainder (0 where the builders allow W) on the last one, as PKB builds them."""
    splits = [total // world_size] * world_size
    splits[-1] += total % world_size
    return splits


def require_equal_splits(rows: int, world_size: int) -> None:
    """PKB's remainder handling gives splits that disagree between ranks (the collective fails or hangs)."""
    if rows % world_size:
        raise ValueError(
            f"{rows} rows cannot be split equally over {world_size} ranks; the spec's splits only agree "
            "across ranks when they divide evenly"
        )


def per_local_expert_counts(ctx: InputContext) -> torch.Tensor:
    """(W, L) int64 ``num_global_tokens_per_local_expert``, identical on all ranks, consistent with the splits.

    Row i (a source rank) must add up to the 2M / W rows received from it. PKB makes every entry 2M / 8, which makes
    the regrouping chunks equal; we draw each row as a random composition of 2M / W into L parts (shared seed), so a
    regrouping that assumes equal chunks fails. At W = 8 (L = 1) the counts are forced and equal PKB's.
    """
    W = ctx.world_size
    L = NUM_EXPERTS // W
    per_source = 2 * ctx.M // W
    ctx.seed("expert counts")
    cuts = torch.randint(0, per_source + 1, (W, L - 1), dtype=torch.int64).sort(dim=1).values
    bounds = torch.cat([torch.zeros(W, 1, dtype=torch.int64), cuts, torch.full((W, 1), per_source)], dim=1)
    return bounds.diff(dim=1).to(ctx.device)


def permutation_by_expert(routing_map: torch.Tensor) -> torch.Tensor:
    """Token ids routed to each expert, expert-major and ascending within an expert: (number of routed pairs,)."""
    num_experts, num_tokens = routing_map.shape
    token_ids = torch.arange(num_tokens, device=routing_map.device).expand(num_experts, num_tokens)
    return token_ids.masked_select(routing_map.bool())


def sort_chunks(rows: torch.Tensor, sizes: Sequence[int], order: Sequence[int]) -> torch.Tensor:
    """Split ``rows`` into consecutive chunks of ``sizes`` and concatenate them in ``order``."""
    chunks = torch.split(rows, list(sizes), dim=0)
    return torch.cat([chunks[i] for i in order], dim=0)


def as_list(splits: Sequence[int] | torch.Tensor | None):
    """Split sizes as a Python list (a tensor is read back to the host, a sync, as in the original)."""
    if isinstance(splits, torch.Tensor):
        return [int(s) for s in splits.tolist()]
    return None if splits is None else list(splits)
