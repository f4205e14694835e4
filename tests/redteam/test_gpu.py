"""GPU-only red-team tests (NCCL, CUDA events): skipped without CUDA. Run on the lent H200 with
``python3 -m pytest -q -p no:django tests/redteam/test_gpu.py`` (one GPU: W=1, problem 1 at 1024 x 1024 bf16).

Covers what CPU gloo cannot show: stale allocator memory on the device, CUDA graph replay of stale results, patched
CUDA events, side-stream work the events miss, GPU memory exhaustion, and the sandbox under NCCL.
"""

import pytest
import torch

from evaluator import judge
from evaluator.contract import schema
from tests.redteam.harness import CANDIDATES, assert_never_correct_and_faster, logs, notes

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the lent H200)")
GPU = dict(trials=2, seed=5, timing=False, timeout_s=120)
GPU_TIMED = dict(GPU, timing=True, timing_budget_ms=600)


def run(name, **options):
    return judge.evaluate(1, str(CANDIDATES / f"{name}.py"), 1, "cuda", **{**GPU, **options})


def test_gpu_honest_control_under_the_sandbox():
    result = run("honest_allreduce", **GPU_TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"] + logs(result)[-3000:]
    assert result["flags"] == [], result["timing"]["crosscheck"]
    assert result["timing"]["faster"] is False  # it is the reference's own code
    print("sandbox notes:", notes(result))


def test_gpu_stale_allocator_memory_is_incorrect():
    result = run("stale_memory")
    assert result["verdict"] == schema.INCORRECT, result["message"]


def test_gpu_graph_replay_of_stale_results_is_incorrect():
    result = run("gpu_graph_replay", **GPU_TIMED)
    assert result["verdict"] in (schema.INCORRECT, schema.RUNTIME_ERROR), result["message"]
    assert_never_correct_and_faster(result)


def test_gpu_patched_events_are_flagged():
    result = run("gpu_event_patch", **GPU_TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert schema.FLAG_TIMING_CROSSCHECK in result["flags"], result["timing"]["crosscheck"]
    assert_never_correct_and_faster(result)


def test_gpu_side_stream_work_is_flagged():
    result = run("gpu_side_stream", **GPU_TIMED)
    assert result["verdict"] in (schema.CORRECT, schema.INCORRECT), result["message"]
    if result["verdict"] == schema.CORRECT:
        assert schema.FLAG_TIMING_CROSSCHECK in result["flags"], result["timing"]["crosscheck"]
    assert_never_correct_and_faster(result)


def test_gpu_memory_exhaustion_is_blamed_on_the_candidate():
    result = run("gpu_memory_hog", **GPU_TIMED)
    assert result["verdict"] == schema.RUNTIME_ERROR, result["message"] + logs(result)[-2000:]


def test_gpu_patched_synchronize_is_never_correct_and_faster():
    result = run("gpu_sync_patch", **GPU_TIMED)
    assert result["verdict"] != schema.CORRECT or schema.FLAG_TIMING_CROSSCHECK in result["flags"], result["timing"][
        "crosscheck"
    ]
    assert_never_correct_and_faster(result)


class HoleOpen(Exception):
    """The exploit was judged correct, faster and unflagged."""


# Problem 1 at 24576 x 32768 bf16 (1.5 GiB; the reference's clone takes ~0.76 ms on an H200): a call the GPU, not the
# host, paces, and large enough that the work hidden beside the spin exceeds one pair's allowance in the probe blocks'
# wall (evaluator/timing/rules.py, _probe_check: 0.51 ms a call). Measured (docs/calibration.md): at 16384 x 16384
# (0.26 ms) the excess read 0.07 ms; at 32768 x 32768 a trial's 2 GiB output file passes the sandbox's per-file limit
# (RLIMIT_FSIZE). Each at the site's timing budget (None: 2 s) and at the short one of these tests: the fewer the calls,
# the more a block's fixed cost weighs in its wall per call. How many calls fit depends on the trials' input-building
# time too: measured runs had 18-68 calls a probe block at the site's budget, 18-22 at the short one. Earlier rules
# missed the exploit at the short budget (0.43-0.78 ms excess against 0.51-1.14 ms) while each rank handed ~10 GB back
# and re-allocated it inside every block. Since then the cache is kept between blocks (evaluator/rank/worker.py):
# flagged in 5 of 5 runs (0.60-1.06 ms against 0.51-0.53), the honest control unflagged at both budgets.
GPU_DEVICE_BOUND = dict(GPU_TIMED, M=24576, N=32768)
BUDGETS = pytest.mark.parametrize("budget_ms", [None, 600], ids=["site_budget", "short_budget"])


@BUDGETS
def test_gpu_work_beside_the_judges_spin_is_flagged_on_a_device_bound_call(budget_ms):
    result = run("gpu_beside_spin", **{**GPU_DEVICE_BOUND, "timing_budget_ms": budget_ms})
    assert result["verdict"] == schema.CORRECT, result["message"]  # anything else: the exploit itself is broken
    print("probe:", result["timing"]["crosscheck"].get("probe"), "speedup:", result["timing"]["speedup"])
    assert schema.FLAG_TIMING_CROSSCHECK in result["flags"], result["timing"]["crosscheck"]
    assert_never_correct_and_faster(result)


@BUDGETS
def test_gpu_honest_control_at_the_device_bound_size_is_not_flagged(budget_ms):
    # Probed although it cannot be faster (the reference's own code): the probe check must not flag it.
    result = run("honest_allreduce", **{**GPU_DEVICE_BOUND, "timing_budget_ms": budget_ms}, probe_always=True)
    assert result["verdict"] == schema.CORRECT, result["message"]
    print("probe:", result["timing"]["crosscheck"].get("probe"))
    assert result["timing"]["crosscheck"]["probe"]["blocks"] == 3
    assert result["flags"] == [], result["timing"]["crosscheck"]


@pytest.mark.xfail(
    strict=True,
    raises=HoleOpen,
    reason="known limit (docs/threat-model.md, 'Work beside the spin'): one pair's probe allowance "
    "(0.51 ms a call, the noise of the judge's wall clock) is far above problem 1's call at "
    "1024 x 1024 (~0.005 ms). Strict: a run in which the judge catches it fails here, and the "
    "threat model must be corrected",
)
def test_gpu_work_beside_the_judges_spin_on_a_host_paced_call_is_not_yet_caught():
    result = run("gpu_beside_spin", **GPU_TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"]  # anything else: the exploit itself is broken
    timing = result["timing"]
    print("probe:", timing["crosscheck"].get("probe"), "speedup:", timing["speedup"])
    if timing["faster"] and not result["flags"]:
        raise HoleOpen(f"{timing['speedup']}x {timing['speedup_ci']}, cross-check {timing['crosscheck']}")
    assert_never_correct_and_faster(result)
