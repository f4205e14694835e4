"""The build cache's key and Triton's cache, each pinned alone (issue 45, item 9): a build made by one torch, CUDA or
Python is never handed to a job on another (a compiled module linked against another ABI would load, or crash, in
the candidate's ranks and be blamed on it), and Triton's cache lives in the group's own build directory, so it is
cached under this file's key only and never shared with the host's or another group's. Unit-level: no rank
process, no compiler."""

from __future__ import annotations

import os
import sys
import types

import pytest
import torch

from evaluator.process import builds, environment


@pytest.fixture
def candidate(tmp_path):
    path = tmp_path / "13_gemm_allreduce_triton.py"
    path.write_bytes(b"import torch\n\ndef solution(A_local, B_local):\n    return A_local @ B_local\n")
    return str(path)


def _python(monkeypatch, version_info):
    monkeypatch.setattr(builds, "sys", types.SimpleNamespace(**{**vars(sys), "version_info": version_info}))


def test_the_key_changes_with_torch_cuda_and_python(candidate, monkeypatch):
    base = builds.key(candidate, "cuda")
    assert base and builds.key(candidate, "cuda") == base  # a function of its inputs, nothing random

    monkeypatch.setattr(torch, "__version__", torch.__version__ + ".other")
    torch_changed = builds.key(candidate, "cuda")
    monkeypatch.undo()
    monkeypatch.setattr(torch.version, "cuda", "99.9" if torch.version.cuda != "99.9" else "98.0")
    cuda_changed = builds.key(candidate, "cuda")
    monkeypatch.undo()
    _python(monkeypatch, (sys.version_info[0], sys.version_info[1] + 1, 0, "final", 0))
    python_changed = builds.key(candidate, "cuda")
    monkeypatch.undo()

    keys = {"base": base, "torch": torch_changed, "cuda": cuda_changed, "python": python_changed}
    assert len(set(keys.values())) == 4, keys
    assert builds.key(candidate, "cpu") != base


def _built(build_dir: str) -> None:
    """What a group's build leaves: an extension module and a Triton kernel in its cache."""
    os.makedirs(os.path.join(build_dir, "torch_extensions", "ext_abc"))
    with open(os.path.join(build_dir, "torch_extensions", "ext_abc", "ext_abc.so"), "wb") as f:
        f.write(b"\x7fELF module")
    os.makedirs(os.path.join(build_dir, "triton_cache", "K3Y"))
    with open(os.path.join(build_dir, "triton_cache", "K3Y", "matmul.cubin"), "wb") as f:
        f.write(b"cubin")


def test_a_build_kept_under_one_torch_is_not_restored_under_another(candidate, tmp_path, monkeypatch):
    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))
    first = tmp_path / "job1"
    _built(str(first))
    assert builds.harvest(builds.key(candidate, "cuda"), str(first))

    monkeypatch.setattr(torch, "__version__", torch.__version__ + ".upgraded")
    upgraded = tmp_path / "job2"
    upgraded.mkdir()
    assert not builds.restore(builds.key(candidate, "cuda"), str(upgraded), uid=None)
    assert not any(upgraded.iterdir())
    monkeypatch.setattr(torch, "__version__", torch.__version__.removesuffix(".upgraded"))

    same = tmp_path / "job3"
    same.mkdir()
    assert builds.restore(builds.key(candidate, "cuda"), str(same), uid=None)
    assert (same / "triton_cache" / "K3Y" / "matmul.cubin").read_bytes() == b"cubin"


def test_triton_s_cache_is_the_group_s_own(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/var/cache/shared-triton")  # the host's, never a rank's
    rank_dir, build_dir = str(tmp_path / "rank0"), str(tmp_path / "build")
    os.makedirs(rank_dir)
    grouped = environment.rank_environment(0, 2, 29500, rank_dir, trusted=False, build_dir=build_dir)
    assert grouped["TRITON_CACHE_DIR"] == os.path.join(build_dir, "triton_cache")
    assert grouped["TORCH_EXTENSIONS_DIR"] == os.path.join(build_dir, "torch_extensions")
    alone = environment.rank_environment(0, 2, 29500, rank_dir, trusted=True)
    assert alone["TRITON_CACHE_DIR"] == os.path.join(rank_dir, "triton_cache")
