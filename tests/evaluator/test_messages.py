"""evaluator/rank/messages.py: a candidate's failure is told by its root cause (exception, then the candidate's
innermost frame), without the judge's frames or the server's paths; build failures are compile errors with the first
error."""

import importlib.util
import subprocess
import textwrap

import pytest

from evaluator.rank import messages

SOURCE = textwrap.dedent("""\
    import torch


    def helper(x):
        return torch.ones(3) @ torch.ones(4)


    def solution(x):
        return helper(x)
    """)


def _load(tmp_path, source=SOURCE, name="kernel.py"):
    upload = tmp_path / "pkb-judge-abc" / "cand" / "src"
    upload.mkdir(parents=True)
    path = upload / name
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("kernel_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path)


def _raised(fn, *args):
    try:
        fn(*args)
    except BaseException as exc:  # noqa: BLE001
        return exc
    raise AssertionError("did not raise")


def test_exception_first_then_the_candidates_innermost_frame(tmp_path):
    module, path = _load(tmp_path)
    exc = _raised(module.solution, None)
    text = messages.describe(exc, path)
    first, second = text.splitlines()[:2]
    assert first.startswith("RuntimeError: inconsistent tensor size")
    assert second == "  at kernel.py, line 5, in helper: return torch.ones(3) @ torch.ones(4)"
    assert str(tmp_path) not in text and "rank/worker" not in text and "Traceback" not in text
    assert messages.kind_of(exc) == messages.RUNTIME_ERROR


def test_server_paths_are_dropped_from_exception_messages(tmp_path):
    path = str(tmp_path / "src" / "kernel.py")
    exc = FileNotFoundError(f"[Errno 2] No such file: '/srv/pkb/var/jobs/17/cand/rank0/x.bin' near {path}")
    text = messages.describe(exc, path)
    assert text == "FileNotFoundError: [Errno 2] No such file: 'x.bin' near kernel.py"
    assert messages.scrub("see https://docs.nvidia.com/cuda/x.html") == "see https://docs.nvidia.com/cuda/x.html"


def test_a_torch_build_failure_is_a_compile_error_with_the_first_error_and_the_tail(tmp_path):
    module, path = _load(tmp_path, "def solution():\n    build()\n\n\ndef build():\n    raise RuntimeError(LOG)\n")
    module.LOG = (
        "Error building extension 'k': [1/3] /usr/local/cuda/bin/nvcc -O3 -c /tmp/pkb-judge-x/cand/rank0/"
        "torch_extensions/k/cuda.cu -o cuda.cuda.o\nFAILED: cuda.cuda.o\n/tmp/pkb-judge-x/cand/rank0/"
        'torch_extensions/k/cuda.cu(12): error: identifier "blockDimx" is undefined\n'
        '1 error detected in the compilation of "cuda.cu".\nninja: build stopped: subcommand failed.\n'
    )
    exc = _raised(module.solution)
    assert messages.kind_of(exc) == messages.COMPILE_ERROR
    lines = messages.describe(exc, path).splitlines()
    assert lines[0] == "RuntimeError: Error building extension 'k'"
    assert lines[1] == '  first error: cuda.cu(12): error: identifier "blockDimx" is undefined'
    assert lines[2] == "  at kernel.py, line 6, in build: raise RuntimeError(LOG)"
    assert lines[-1] == "    ninja: build stopped: subcommand failed."
    assert not any("/tmp/" in line or "/usr/local" in line for line in lines)


def test_what_counts_as_a_build_or_import_failure():
    ninja = subprocess.CalledProcessError(1, ["ninja", "-v"], output=b"main.cpp:1:1: error: x\n")
    assert messages.kind_of(ninja) == messages.COMPILE_ERROR
    assert "first error: main.cpp:1:1: error: x" in messages.describe(ninja)
    assert messages.kind_of(subprocess.CalledProcessError(1, ["python", "x.py"])) == messages.RUNTIME_ERROR
    wrapped = _raised(_reraise, messages.BuildError("Error building extension 'k'", "k.cu(1): error: y"))
    assert messages.kind_of(wrapped) == messages.COMPILE_ERROR  # found through the chain
    assert messages.kind_of(ModuleNotFoundError("No module named 'thunderkittens'")) == messages.COMPILE_ERROR
    assert messages.kind_of(ValueError("x"), loading=True) == messages.COMPILE_ERROR  # the module did not import
    assert messages.kind_of(ValueError("x")) == messages.RUNTIME_ERROR


def _reraise(exc):
    try:
        raise exc
    except RuntimeError as inner:
        raise ValueError("while loading the kernel") from inner


def test_long_messages_and_logs_are_bounded():
    exc = RuntimeError("x" * 10_000)
    assert len(messages.describe(exc)) < messages.MESSAGE_CHARS + 100
    log = "\n".join(f"line {i}" for i in range(500))
    text = messages.describe(messages.BuildError("Error building extension 'k'", log))
    assert "line 499" in text and "line 479" not in text and "line 480" in text


@pytest.mark.parametrize("source,line", [("x = (\n", 1), ("def solution(:\n    pass\n", 1)])
def test_syntax_errors_name_the_line(tmp_path, source, line):
    exc = _raised(_load, tmp_path, source)
    text = messages.describe(exc, str(tmp_path / "pkb-judge-abc" / "cand" / "src" / "kernel.py"))
    assert text.startswith("SyntaxError: ") and f"at kernel.py, line {line}" in text
