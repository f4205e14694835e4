"""``utils.cuda_helpers.compile_cuda_extension`` with ParallelKernelBench's defaults (issue 28): ``-O3`` always, then
the kernel's own flags; no ``--use_fast_math`` unless asked; ``TORCH_CUDA_ARCH_LIST=9.0`` unless the environment
gives one; build failures raise BuildError with the compiler's output. The arguments torch's loaders receive are
checked exactly; a real C++ (CPU) extension is built, loaded and broken through the same helper."""

import shutil

import pytest
from torch.utils import cpp_extension

from evaluator.pkb_utils.utils import cuda_helpers
from evaluator.pkb_utils.utils.cuda_helpers import compile_cuda_extension
from evaluator.rank import messages


@pytest.fixture
def calls(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    monkeypatch.setattr(cpp_extension, "load_inline", lambda **kw: seen.append(("load_inline", kw)) or "module")
    monkeypatch.setattr(cpp_extension, "load", lambda **kw: seen.append(("load", kw)) or "module")
    return seen


def test_inline_defaults(calls, tmp_path):
    assert compile_cuda_extension("k", "__global__ void f() {}", "void g();", ["g"]) == "module"
    ((loader, kw),) = calls
    assert loader == "load_inline"
    assert kw["extra_cuda_cflags"] == ["-O3"] and kw["extra_cflags"] == ["-O3"]  # no --use_fast_math by default
    assert kw["cuda_sources"] == ["__global__ void f() {}"] and kw["cpp_sources"] == ["void g();"]
    assert kw["functions"] == ["g"] and kw["with_cuda"] is True and kw["verbose"] is False
    assert kw["extra_ldflags"] == [] and kw["extra_include_paths"] == []
    assert kw["build_directory"].startswith(str(tmp_path))  # under the ranks' TORCH_EXTENSIONS_DIR
    assert cuda_helpers.os.environ["TORCH_CUDA_ARCH_LIST"] == "9.0"


def test_kernel_flags_follow_O3_and_fast_math_only_when_asked(calls):
    gencode = ["-gencode=arch=compute_90a,code=sm_90a", "--use_fast_math", "-lineinfo"]
    compile_cuda_extension(
        "k",
        cuda_source="x",
        extra_cuda_cflags=gencode,
        extra_cflags=["-std=c++17"],
        extra_ldflags=["-lcuda"],
        extra_include_paths=["/opt/inc"],
    )
    kw = calls[0][1]
    assert kw["extra_cuda_cflags"] == ["-O3"] + gencode
    assert kw["extra_cflags"] == ["-O3", "-std=c++17"]
    assert kw["extra_ldflags"] == ["-lcuda"] and kw["extra_include_paths"] == ["/opt/inc"]
    compile_cuda_extension("k2", cuda_source="y", extra_cuda_cflags=["-O3", "-Xptxas=-v"])
    assert calls[1][1]["extra_cuda_cflags"] == ["-O3", "-Xptxas=-v"]  # the kernel's own -O3 is not doubled


def test_arch_list_given_by_the_environment_is_kept(calls, monkeypatch):
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0;9.0a")
    compile_cuda_extension("k", cuda_source="x")
    assert cuda_helpers.os.environ["TORCH_CUDA_ARCH_LIST"] == "8.0;9.0a"


def test_source_keyword_spellings_and_cpp_only(calls):
    compile_cuda_extension("a", cuda_src="cu", cpp_src="cpp")
    compile_cuda_extension("b", cuda_sources=["cu1", "cu2"], cpp_sources=["cpp"], functions="f")
    compile_cuda_extension("c", cpp_source="PYBIND11_MODULE(...)")
    a, b, c = (kw for _, kw in calls)
    assert a["cuda_sources"] == ["cu"] and a["cpp_sources"] == ["cpp"]
    assert b["cuda_sources"] == ["cu1\ncu2"] and b["functions"] == ["f"]
    assert c["cuda_sources"] is None and c["with_cuda"] is False  # a C++-only extension builds without nvcc
    with pytest.raises(TypeError):
        compile_cuda_extension("d", "cu", cuda_src="cu again")


def test_source_files_go_to_load(calls, tmp_path):
    cu, cpp = tmp_path / "k.cu", tmp_path / "k.cpp"
    cu.write_text("__global__ void f() {}\n")
    cpp.write_text("// binding\n")
    compile_cuda_extension("files", str(cu), str(cpp), extra_cuda_cflags=["-gencode=arch=compute_90,code=sm_90"])
    loader, kw = calls[0]
    assert loader == "load" and kw["sources"] == [str(cu), str(cpp)] and kw["name"] == "files"
    assert kw["extra_cuda_cflags"] == ["-O3", "-gencode=arch=compute_90,code=sm_90"]


def test_a_build_failure_raises_build_error_with_the_log(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))

    def failing(**kw):
        raise RuntimeError("Error building extension 'k': [1/2] c++ main.cpp\nmain.cpp:3:1: error: expected ';'\n")

    monkeypatch.setattr(cpp_extension, "load_inline", failing)
    with pytest.raises(messages.BuildError) as info:
        compile_cuda_extension("k", cpp_source="x")
    assert str(info.value) == "Error building extension 'k'" and "expected ';'" in info.value.log
    # The same sources again (another rank, or a retry in the process): the recorded failure, not a second build.
    monkeypatch.setattr(cpp_extension, "load_inline", lambda **kw: pytest.fail("compiled the same error twice"))
    with pytest.raises(messages.BuildError) as again:
        compile_cuda_extension("k", cpp_source="x")
    assert "expected ';'" in again.value.log
    monkeypatch.setattr(cpp_extension, "load_inline", lambda **kw: (_ for _ in ()).throw(RuntimeError("other")))
    with pytest.raises(RuntimeError, match="other") as other:
        compile_cuda_extension("k", cpp_source="y")
    assert not isinstance(other.value, messages.BuildError)  # not a build failure: left as it was


# pybind11 alone, from a source file (torch's ``load``): a real compile, link and import in a few seconds, where a
# source including torch/extension.h takes about twenty. The inline path (load_inline) builds for real, and fails,
# in compat/ (lazy_cpp_extension, broken_build) through the judge.
CPP = r"""
#include <pybind11/pybind11.h>
double scaled(double x, double a) { return x * a; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scaled", &scaled); }
"""


@pytest.mark.skipif(shutil.which("c++") is None or shutil.which("ninja") is None, reason="needs c++ and ninja")
def test_a_real_cpp_extension_builds_loads_and_fails_with_the_first_error(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    good, bad = tmp_path / "scaled.cpp", tmp_path / "broken.cpp"
    good.write_text(CPP)
    bad.write_text(CPP.replace("x * a", "x * missing_name"))
    module = compile_cuda_extension("pkb_helpers_scaled", cpp_source=str(good))
    assert module.scaled(3.0, 2.0) == 6.0
    with pytest.raises(messages.BuildError) as info:
        compile_cuda_extension("pkb_helpers_broken", cpp_source=str(bad))
    assert messages.kind_of(info.value) == messages.COMPILE_ERROR
    assert "missing_name" in messages.first_error_line(info.value.log) and "-O3" in info.value.log
