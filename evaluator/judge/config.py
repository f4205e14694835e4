"""The judge's request: ``Config`` (what one evaluation is asked to do) and ``BadRequest`` (it cannot start)."""

from __future__ import annotations

import dataclasses

from evaluator.process import sandbox
from evaluator.process.group import GroupShape


class BadRequest(ValueError):
    """The evaluation cannot start: unknown problem, missing file, world size not allowed... (CLI exit status 2)."""


SHARED_DEVICE_NO_TIMING = (
    "a shared-device world judges correctness only: its ranks take turns on one GPU, so a timing "
    "there measures the time-slicing, nothing a real W-GPU run would do (no --pairs, no timing)"
)

_sandbox_required_by_default = sandbox.required_by_default  # (inside Config, ``sandbox`` names a field)


@dataclasses.dataclass
class Config:
    world_size: int
    device: str = "cpu"
    trials: int = 5
    seed: int | None = None
    M: int = 1024
    N: int = 1024
    dtype: str = "bfloat16"
    reduced: bool = False
    timing: bool = True
    multicast_allowed: bool = False
    timeout_s: float | None = None  # per command; default: the problem's own budget
    startup_timeout_s: float = 600.0
    timing_budget_ms: float | None = None  # per side; default 2000 on GPU, 600 on CPU
    max_attempts: int = 2  # infrastructure failures are retried, never scored
    # Hidden checks the candidate cannot predict (docs/threat-model.md, "hard-coded W or shapes"): one more trial at
    # a shape (M', N') the judge draws, and a correctness-only run at another world size.
    hidden_shape: bool = False
    hidden_world_size: int | None = None
    # False: candidate ranks run without uid/network isolation and are not paused (debugging, red-team tests).
    # PKB_SANDBOX=0 in the judge's environment switches it off for a whole deployment.
    sandbox: bool = dataclasses.field(default_factory=sandbox.enabled_by_default)
    # Fail closed: with every sandbox layer or not at all (an infra_error naming what is missing). Every ranked
    # profile's jobs ask for it; PKB_SANDBOX=required asks for it for a whole deployment.
    sandbox_required: bool = dataclasses.field(default_factory=_sandbox_required_by_default)
    light_ceilings: dict | None = None  # peak rates for the speed-of-light floor; default: the GPU's, none on CPU
    # Explicit, published trial seeds (feedback runs): each carries PUBLIC_SEED_BIT, which the judge's own secret
    # draws never do, so public and hidden seeds cannot mix. ``trials`` + 1 of them (the last re-checks after timing).
    seeds: list | None = None
    # Profile mode: torch profiler traces of both groups (evaluator/rank/profiling.py).
    profile_dir: str | None = None
    # Time in this many fresh process pairs and combine them (evaluator/timing/pairs.py); 1: one pair, the 8.3% floor.
    pairs: int = 1
    # A calibration switch, not a production setting (the site never sets it; docs/calibration.md): each timing
    # block's data placed anew in device memory (evaluator/rank/worker.py, REPLACE_PAD_BYTES). Kept because
    # benchmarks/judge_gpu.py (aa --replace-memory) measures with it and tests pin that it leaves a judgement correct.
    replace_memory: bool = False
    # Pairs 2..K: the first pair's per-call estimate. Their single trial is each process's first call, which is cold,
    # and a cold estimate sets a judge's spin many times too long, whose wall then varies with the GPU clock and reads
    # as a candidate's unexplained time (honest candidates flagged; docs/calibration.md).
    timing_estimate_ms: float | None = None
    # The same for the reference's own call alone: what the judge's spin starts from (evaluator/judge/schedule.py), so
    # that a candidate's reported call time cannot lengthen it.
    timing_reference_estimate_ms: float | None = None
    # Timing blocks with no spin, after the spun ones (evaluator/judge/schedule.py, _probe_check); None: three on CUDA
    # (their median is read), none on CPU, where no block spins.
    probe: int | None = None
    # A calibration switch, not a production setting: probe blocks in every pair, also where the candidate cannot be
    # faster. Kept because benchmarks/judge_gpu.py measures the probe check's honest noise with it, and red-team tests
    # use it to run the probe check on candidates that would otherwise skip it.
    probe_always: bool = False
    # Every rank of both groups on one GPU, the process group on gloo (evaluator/rank/shared_device.py): multi-rank
    # correctness of the candidate's logic on a host with fewer GPUs than ranks. Correctness only: time-sliced ranks
    # time nothing real, so a shared world with timing is refused (docs/site.md, "Shared-device worlds").
    shared_device: bool = False

    def __post_init__(self):
        if self.shared_device:
            if self.device != "cuda":
                raise BadRequest("a shared-device world shares a GPU: it needs --device cuda")
            if self.timing or self.pairs != 1:
                raise BadRequest(SHARED_DEVICE_NO_TIMING)

    @property
    def blocks(self) -> int:
        return 6 if self.device == "cuda" else 4

    @property
    def probe_blocks(self) -> int:
        return self.probe if self.probe is not None else (3 if self.device == "cuda" else 0)

    def budget_ms(self) -> float:
        return self.timing_budget_ms or (2000.0 if self.device == "cuda" else 600.0)

    def group_shape(self, problem: str) -> GroupShape:
        """What this request's two rank groups share (evaluator/process/group.py): its world, ``problem``'s shape."""
        return GroupShape(
            world_size=self.world_size,
            device=self.device,
            problem=problem,
            M=self.M,
            N=self.N,
            dtype=self.dtype,
            reduced=self.reduced,
        )
