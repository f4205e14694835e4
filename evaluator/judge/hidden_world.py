"""The hidden world size a judge draws for ``--hidden-world-size auto`` (docs/threat-model.md, "hard-coded W or
shapes"): one world size other than the main run's, among those the problem allows and this host can run, drawn from
the OS's randomness (never from the request's seed or anything the candidate could learn), or none where there is no
other. The result's ``hidden_world_size.world_size`` records the one drawn.
"""

from __future__ import annotations

import random

from evaluator.contract.requests import HIDDEN_WORLD_AUTO

AUTO = HIDDEN_WORLD_AUTO
# A CPU run's hidden world sizes: gloo ranks are processes, but more than 4 of them on a CI host only costs time.
CPU_MAX_WORLD_SIZE = 4
# A shared-device run's (every rank on one GPU; docs/site.md, "Shared-device worlds").
SHARED_WORLD_SIZES = (2, 4)


def other_world_sizes(prob, world_size: int, device: str, shared_device: bool = False) -> list[int]:
    """Every world size other than ``world_size`` that ``prob`` allows and the host can run: 2 or 4 in a shared-device
    world; up to the main run's W on CUDA (a site worker holds just its profile's GPUs); 1..4 on CPU."""
    if shared_device:
        sizes: list[int] | range = list(SHARED_WORLD_SIZES)
    else:
        sizes = range(1, (world_size if device == "cuda" else CPU_MAX_WORLD_SIZE) + 1)
    return [w for w in sizes if w != world_size and prob.allows_world_size(w)]


def draw(prob, world_size: int, device: str, shared_device: bool = False) -> int | None:
    """One of :func:`other_world_sizes`, chosen by the OS's randomness; None where there is none."""
    other = other_world_sizes(prob, world_size, device, shared_device)
    return random.SystemRandom().choice(other) if other else None
