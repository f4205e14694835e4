"""Compile once (evaluator/process/builds.py): the ranks of a job share one build, and a later job of the same file
compiles nothing. Real judge, real C++ extension (the CPU path of compile_cuda_extension; pybind11 alone, a few seconds
a build: the inline path with torch/extension.h has its own tests in compat/), W = 2 on gloo."""

import pathlib
import shutil

import pytest

from evaluator import judge
from evaluator.contract import schema
from evaluator.process import builds

CANDIDATE = pathlib.Path(__file__).parent / "candidates" / "light_cpp_extension.py"
OPTIONS = dict(M=64, N=32, trials=2, seed=5, timing=False, timeout_s=500)

pytestmark = pytest.mark.skipif(
    shutil.which("c++") is None and shutil.which("g++") is None, reason="needs a C++ compiler"
)


def test_one_build_per_job_and_none_for_the_next_job_of_the_same_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))
    first = judge.evaluate(1, str(CANDIDATE), 2, "cpu", **OPTIONS)
    assert first["verdict"] == schema.CORRECT, first["message"]
    # Both ranks called compile_cuda_extension; one compiled, the other loaded what it built.
    assert first["build"]["compiled"] == 1 and first["build"]["loaded_built"] == 1, first["build"]
    assert first["build"]["from_cache"] is False and first["phases_s"]["build"] > 0
    assert len(list((tmp_path / "cache").iterdir())) == 1  # kept by the judge

    second = judge.evaluate(1, str(CANDIDATE), 2, "cpu", **OPTIONS)
    assert second["verdict"] == schema.CORRECT, second["message"]
    assert second["build"]["from_cache"] is True
    assert second["build"]["compiled"] == 0 and second["build"]["loaded_built"] == 2, second["build"]


def test_another_file_never_gets_this_files_build(tmp_path, monkeypatch):
    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))
    other = tmp_path / "1_allreduce_cuda.py"
    other.write_text(CANDIDATE.read_text() + "\n# a different file\n")
    a = builds.key(str(CANDIDATE), "cpu")
    b = builds.key(str(other), "cpu")
    assert a and b and a != b and a != builds.key(str(CANDIDATE), "cuda")


def test_the_cache_keeps_regular_files_only_and_within_bounds(tmp_path, monkeypatch):
    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))
    build = tmp_path / "build"
    (build / "torch_extensions" / "x").mkdir(parents=True)
    (build / "torch_extensions" / "x" / "x.so").write_bytes(b"\x7fELF")
    (build / "torch_extensions" / "x" / "secret").symlink_to("/etc/hostname")
    (build / "builds.log").write_text('{"compiled": true, "seconds": 1.5}\n')
    assert builds.harvest("k", str(build))
    kept = tmp_path / "cache" / "k" / "torch_extensions" / "x"
    assert (kept / "x.so").read_bytes() == b"\x7fELF"
    assert not (kept / "secret").exists() and not (tmp_path / "cache" / "k" / "builds.log").exists()
    monkeypatch.setattr(builds, "ENTRY_LIMIT_BYTES", 2)
    assert not builds.harvest("k2", str(build)) and not (tmp_path / "cache" / "k2").exists()


def test_a_build_that_fails_is_compiled_once_and_every_rank_reports_its_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))
    broken = CANDIDATE.parent / "broken_cpp_extension.py"
    result = judge.evaluate(1, str(broken), 2, "cpu", **OPTIONS)
    assert result["verdict"] == schema.COMPILE_ERROR, result["message"]
    assert "this_method_does_not_exist" in result["message"]
    # One rank compiled and failed; the other took the recorded failure instead of compiling the same error again.
    assert result["build"]["compiled"] == 1 and result["build"]["failed"] == 2, result["build"]
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())  # nothing built, kept
