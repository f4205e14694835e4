"""GPU smoke test: the judge under NCCL on one GPU, with events timing and real Triton/CUDA candidates.

Skipped without a GPU (CI has none); run on the lent H200 with
``python3 -m pytest -q -p no:django tests/evaluator/test_gpu_smoke.py``.
"""
import pathlib

import pytest
import torch

from evaluator import judge, schema

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
CANDIDATES = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "candidates"


def test_reference_a_a_on_gpu():
    result = judge.evaluate(1, "reference", 1, "cuda", seed=5)
    assert result["verdict"] == schema.CORRECT, result["message"]
    timing = result["timing"]
    assert timing["method"] == "cuda_events" and timing["ranked"] is True
    assert timing["speedup_ci"][0] <= 1.0 <= timing["speedup_ci"][1] or not timing["faster"]
    assert result["environment"]["backend"] == "nccl" and result["environment"]["gpus"]


@pytest.mark.parametrize("name,problem", [("p01_allreduce_triton", 1), ("p01_allreduce_cuda", 1),
                                          ("p13_gemm_allreduce_triton", 13)])
def test_gpu_backends_are_correct(name, problem):
    result = judge.evaluate(problem, str(CANDIDATES / f"{name}.py"), 1, "cuda", seed=9)
    assert result["verdict"] == schema.CORRECT, result["message"] + str(result.get("logs"))[-2000:]


def test_wrong_gpu_candidate_is_incorrect(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def solution(tensor):\n    return tensor * 2\n")
    assert judge.evaluate(1, str(bad), 1, "cuda", seed=2, timing=False)["verdict"] == schema.INCORRECT
