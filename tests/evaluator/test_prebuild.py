"""The build stage (evaluator/judge/prebuild.py): a candidate's lazily built extensions are built before its job, on
CPU, in the sandbox, and kept for the job; a build failure is the file's compile_error without a job; a kernel the
stage cannot reach builds in its job as before. Real judge, real C++ extensions (the CPU path of
compile_cuda_extension): the job here is a CPU job, so the stage targets the "cpu" build key."""
import pathlib
import shutil

import pytest

from evaluator import judge, schema
from evaluator.judge.prebuild import prebuild

HERE = pathlib.Path(__file__).parent
LAZY = HERE / "compat" / "candidates" / "lazy_cpp_extension.py"
JOB = dict(M=64, N=32, trials=2, seed=5, timing=False, timeout_s=500)

pytestmark = pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None,
                                reason="needs a C++ compiler")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))


def test_the_stage_builds_a_file_once_and_its_job_then_compiles_nothing(tmp_path):
    stage = prebuild(1, str(LAZY), target_device="cpu")
    assert stage["status"] == "built", stage
    assert stage["build"]["compiled"] == 1 and stage["build"]["failed"] == 0, stage
    job = judge.evaluate(1, str(LAZY), 2, "cpu", **JOB)
    assert job["verdict"] == schema.CORRECT, job["message"]
    assert job["build"]["from_cache"] is True
    assert job["build"]["compiled"] == 0 and job["build"]["loaded_built"] == 2, job["build"]


def test_a_build_for_the_gpu_job_is_not_taken_by_a_cpu_job_of_the_same_file():
    stage = prebuild(1, str(LAZY), target_device="cuda")
    assert stage["status"] == "built", stage
    job = judge.evaluate(1, str(LAZY), 2, "cpu", **JOB)
    assert job["build"]["from_cache"] is False and job["build"]["compiled"] == 1, job["build"]


def test_a_build_failure_is_the_files_compile_error_without_a_job():
    stage = prebuild(1, str(HERE / "candidates" / "broken_cpp_extension.py"), target_device="cpu")
    assert stage["status"] == schema.COMPILE_ERROR, stage
    assert "this_method_does_not_exist" in stage["message"], stage["message"]


def test_a_kernel_the_stage_cannot_reach_still_builds_in_its_job():
    path = str(HERE / "candidates" / "builds_after_gpu_work.py")
    stage = prebuild(1, path, target_device="cpu")
    assert stage["status"] == "unreached", stage
    assert "needs its GPU" in stage["message"]
    job = judge.evaluate(1, path, 2, "cpu", **JOB)
    assert job["verdict"] == schema.CORRECT, job["message"]
    assert job["build"]["from_cache"] is False and job["build"]["compiled"] == 1, job["build"]


def test_plain_pytorch_has_nothing_to_build():
    stage = prebuild(1, str(HERE.parent / "redteam" / "candidates" / "honest_allreduce.py"), target_device="cpu")
    assert stage["status"] == "nothing_built", stage
