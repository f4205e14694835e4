"""The build stage (evaluator/judge/prebuild.py): a candidate's lazily built extensions are built before its job, on
CPU, in the sandbox, and kept for the job; a build failure is the file's compile_error without a job; a kernel the
stage cannot reach builds in its job as before. Real judge, real C++ extensions (the CPU path of
compile_cuda_extension): the job here is a CPU job, so the stage targets the "cpu" build key."""

import json
import pathlib
import shutil
import subprocess

import pytest

from evaluator import judge
from evaluator.contract import requests as contract
from evaluator.contract import schema
from evaluator.judge.prebuild import prebuild

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[1]
# An extension of pybind11 alone (a few seconds a build): what is under test is the stage, not the compiler.
LAZY = HERE / "candidates" / "light_cpp_extension.py"
JOB = dict(M=64, N=32, trials=2, seed=5, timing=False, timeout_s=500)

pytestmark = pytest.mark.skipif(
    shutil.which("c++") is None and shutil.which("g++") is None, reason="needs a C++ compiler"
)


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


def run_stage(tmp_path, candidate, **options) -> dict:
    """``pkb prebuild`` as the site's build worker starts it (its PrebuildRequest's command line)."""
    out = tmp_path / "stage.json"
    request = contract.PrebuildRequest("1", str(candidate), json_out=str(out), **options)
    done = subprocess.run(request.command(), cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())


def test_the_job_loads_the_stages_build_only_for_the_architecture_the_stage_built_for(tmp_path, monkeypatch):
    """TORCH_CUDA_ARCH_LIST is part of every build's fingerprint: a job under another list than the stage's finds the
    entry and still compiles (what GPU jobs did on an H200 when the stage was given an arch list of its own), so the
    site gives the stage and the jobs one list (PKB_BUILD_ARCH)."""
    stage = run_stage(tmp_path, LAZY, target_device="cpu", arch="8.0", max_jobs=1, nice=5)
    assert stage["status"] == "built" and stage["arch"] == "8.0", stage
    assert stage["build"]["fingerprints"] and all(f.endswith("arch=8.0") for f in stage["build"]["fingerprints"])
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0")
    same = judge.evaluate(1, str(LAZY), 2, "cpu", **JOB)
    assert same["verdict"] == schema.CORRECT, same["message"]
    assert same["build"]["from_cache"] is True and same["build"]["compiled"] == 0, same["build"]
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    other = judge.evaluate(1, str(LAZY), 2, "cpu", **JOB)
    assert other["build"]["from_cache"] is True and other["build"]["compiled"] == 1, other["build"]


def test_the_command_line_gives_a_broken_build_its_files_result(tmp_path):
    stage = run_stage(tmp_path, HERE / "candidates" / "broken_cpp_extension.py", target_device="cpu")
    assert stage["status"] == schema.COMPILE_ERROR, stage
    result = stage["result"]
    assert result["verdict"] == schema.COMPILE_ERROR and result["build_stage"]["status"] == schema.COMPILE_ERROR
    assert "this_method_does_not_exist" in result["message"] + json.dumps(result["logs"]), result
    assert "wall_s" not in result and result["problem"] == "1_allreduce" and len(result["candidate_sha256"]) == 64


def test_the_command_line_refuses_a_missing_file(tmp_path):
    request = contract.PrebuildRequest("1", str(tmp_path / "absent.py"), json_out=str(tmp_path / "o.json"))
    done = subprocess.run(request.command(), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "not found" in done.stderr
