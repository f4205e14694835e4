"""The shared-device kernels of benchmarks/shared_device/ that use torch.distributed collectives run on the CPU
profile too (CPU gloo, W = 2): judged here end to end, so CI exercises them between GPU runs. Symmetric-memory and
Triton files need a GPU (docs/calibration.md, "Shared-device worlds on one GPU", records those runs).

Two files judged correct (a send/recv tree and a batch_isend_irecv all-to-all) and one planted-wrong twin
(benchmarks/shared_device/wrong/: the tree stops a level early) judged incorrect, so a check that cannot see the
fault fails here. Three judgements, one trial each: the files' other twins ran on the GPU."""

import pathlib

import pytest

from evaluator import judge
from evaluator.contract import schema

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "shared_device"
SMALL = dict(M=64, N=32, trials=1, seed=5, timing=False)


def run(path: pathlib.Path):
    problem = int(path.name.split("_")[0])
    return judge.evaluate(problem, str(path), 2, "cpu", **SMALL)


@pytest.mark.parametrize("name", ["3_broadcast_torch.py", "8_alltoall_torch.py"])
def test_kernel_is_correct(name):
    result = run(KERNELS / name)
    assert result["verdict"] == schema.CORRECT, result["message"]


def test_wrong_twin_is_incorrect():
    result = run(KERNELS / "wrong" / "3_broadcast_torch.py")
    assert result["verdict"] == schema.INCORRECT, result["message"]
