"""GPU smoke test: the judge under NCCL on one GPU, with events timing and real Triton/CUDA candidates.

Skipped without a GPU (CI has none); run on the lent H200 with
``python3 -m pytest -q -p no:django tests/evaluator/test_gpu_smoke.py``.
"""

import pathlib

import pytest
import torch

from evaluator import judge
from evaluator.contract import schema

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
CANDIDATES = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "candidates"


def test_reference_a_a_on_gpu():
    result = judge.evaluate(1, "reference", 1, "cuda", seed=5)
    assert result["verdict"] == schema.CORRECT, result["message"]
    timing = result["timing"]
    assert timing["method"] == "cuda_events" and timing["ranked"] is True
    assert timing["speedup_ci"][0] <= 1.0 <= timing["speedup_ci"][1] or not timing["faster"]
    assert result["environment"]["backend"] == "nccl" and result["environment"]["gpus"]
    # Both sides' spin wishes come from block 0's warm-up calls, so the spin is one value from block 1 on (it grew
    # from block to block before (docs/calibration.md), with no change in the calls' medians).
    spins = timing["spin_us_per_block"]
    assert len(set(spins[1:])) == 1, spins


def test_placement_experiment_and_pairs_on_gpu():
    # Each block's data placed anew (evaluator/rank/worker.py, _new_placement: cache handed back, a random pad held) in
    # two pairs.
    result = judge.evaluate(13, "reference", 1, "cuda", seed=6, pairs=2, replace_memory=True)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert result["timing"]["pairs"]["count"] == 2 and not result["timing"]["faster"]


@pytest.mark.parametrize(
    "name,problem", [("p01_allreduce_triton", 1), ("p01_allreduce_cuda", 1), ("p13_gemm_allreduce_triton", 13)]
)
def test_gpu_backends_are_correct(name, problem):
    result = judge.evaluate(problem, str(CANDIDATES / f"{name}.py"), 1, "cuda", seed=9)
    assert result["verdict"] == schema.CORRECT, result["message"] + str(result.get("logs"))[-2000:]


def test_compare_on_the_gpu_gives_the_hosts_verdicts():
    """Reference ranks compare on their device (evaluator/rank/outputs.py): the same verdicts, error sizes and first bad
    index as on the host, for the cases the host tests pin down."""
    from evaluator.rank.outputs import copy_plain
    from problems.tolerance import compare

    g = torch.Generator().manual_seed(5)
    base = torch.randn(3000, 700, generator=g)
    near = base + 1e-3 * torch.randn(base.shape, generator=g)
    far = near.clone()
    far[2999, 5] += 1.0
    nan = near.clone()
    nan[10, 10] = float("nan")
    ints = torch.arange(5000)
    cases = [
        (base.bfloat16(), near.bfloat16()),
        (base, near),
        (base, far),
        (base, nan),
        (base.double(), far.double()),
        (ints, ints.clone()),
        (ints, torch.where(ints == 4321, 0, ints)),
        ((base, {"k": ints}), (near, {"k": ints})),
    ]
    for expected, actual in cases:
        on_host = compare(expected, actual, 1e-2, 1e-2).to_dict()
        on_gpu = compare(
            copy_plain(expected, torch.Tensor.cuda), copy_plain(actual, torch.Tensor.cuda), 1e-2, 1e-2
        ).to_dict()
        assert on_gpu == pytest.approx(on_host) if on_host["ok"] else on_gpu == on_host


def test_wrong_gpu_candidate_is_incorrect(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def solution(tensor):\n    return tensor * 2\n")
    assert judge.evaluate(1, str(bad), 1, "cuda", seed=2, timing=False)["verdict"] == schema.INCORRECT


def test_p77_fused_gpu_attention_matches_fp32_math(tmp_path):
    """Problem 77's reference takes the fused (4-D) attention kernel on the GPU; at full size and W = 1 it must agree
    with attention computed in float32 from the same inputs, within the problem's tolerance."""
    import math

    import torch.distributed as dist

    import problems
    from problems.base import InputContext
    from problems.tolerance import compare

    prob = problems.get(77)
    dist.init_process_group("nccl", rank=0, world_size=1, store=dist.HashStore(), device_id=torch.device("cuda", 0))
    try:
        ctx = InputContext(
            rank=0, world_size=1, dtype=torch.bfloat16, device=torch.device("cuda", 0), seed_base=77, problem_id=77
        )
        query, key_value, k_ranges, R, C, _ = inputs = prob.make_inputs(ctx)
        out = prob.solution(*inputs)
        torch.cuda.synchronize()
    finally:
        dist.destroy_process_group()
    d = query.shape[-1]
    spb = query.shape[0] // R
    expected = torch.empty_like(out)
    for i in range(R):
        q = query[i * spb : (i + 1) * spb].float().transpose(0, 1)  # (H, spb, d); at W = 1 spb == C
        kv = key_value[i * C : (i + 1) * C].float()
        k = kv[..., :d].repeat_interleave(q.shape[0] // kv.shape[1], dim=1).transpose(0, 1)
        v = kv[..., d:].repeat_interleave(q.shape[0] // kv.shape[1], dim=1).transpose(0, 1)
        weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1)
        expected[i * spb : (i + 1) * spb] = (weights @ v).transpose(0, 1).to(out.dtype)
    result = compare(expected.cpu(), out.cpu(), prob.atol, prob.rtol)
    assert result.ok, result.mismatch.message


def test_a_candidate_gets_the_whole_device_beside_the_reference():
    # Problem 68 at W = 1: a 56.8 GB table; the candidate copies it (two tables at once). The reference's ranks hold
    # only their output while it runs, so it fits as it would beside a reference run in turn.
    result = judge.evaluate(68, str(CANDIDATES / "p68_table_copy_torch.py"), 1, "cuda", seed=3, trials=2, timing=False)
    assert result["verdict"] == schema.CORRECT, result["message"]


def test_a_cuda_extension_builds_once_and_the_next_job_of_the_file_not_at_all(tmp_path, monkeypatch):
    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))
    path = str(CANDIDATES / "p01_allreduce_cuda.py")
    first = judge.evaluate(1, path, 1, "cuda", seed=4, trials=2, timing=False)
    second = judge.evaluate(1, path, 1, "cuda", seed=4, trials=2, timing=False)
    assert first["verdict"] == second["verdict"] == schema.CORRECT, (first["message"], second["message"])
    assert first["build"]["compiled"] >= 1 and first["build"]["from_cache"] is False, first["build"]
    assert second["build"]["compiled"] == 0 and second["build"]["from_cache"] is True, second["build"]
    print(
        f"cuda build: first {first['phases_s']['build']} s compiling, wall {first['wall_s']} s; "
        f"second {second['phases_s']['build']} s, wall {second['wall_s']} s"
    )
