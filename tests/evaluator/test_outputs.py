"""Output files between processes (evaluator/rank/outputs.py): what a reference rank accepts from a candidate's file,
and the copy that takes a kept output out of the candidate's reach."""

import os
import types

import pytest
import torch

from evaluator.rank import outputs

PLAIN = types.SimpleNamespace(compare=None, slack=None, atol=1e-2, rtol=1e-2)


def _save(path, value):
    torch.save(value, str(path))
    return str(path)


def test_check_file_accepts_an_equal_output_and_deletes_the_file(tmp_path):
    expected = torch.randn(64, 32)
    path = _save(tmp_path / "t0_r0.pt", expected.clone())
    entry = outputs.check_file(PLAIN, expected, path, rank=0, world_size=1)
    assert entry["ok"] and entry["rank"] == 0 and entry["max_abs_error"] == 0.0
    assert entry["read_s"] >= 0 and entry["compare_s"] >= 0
    assert not os.path.exists(path)


def test_check_file_names_the_mismatch(tmp_path):
    expected = torch.zeros(4, 4)
    actual = expected.clone()
    actual[2, 1] = 1.0
    entry = outputs.check_file(PLAIN, expected, _save(tmp_path / "t.pt", actual), rank=3, world_size=4)
    assert not entry["ok"] and entry["rank"] == 3 and entry["first_mismatch_index"] == [2, 1]


@pytest.mark.parametrize("plant", ["missing", "symlink", "fifo", "garbage", "oversized"])
def test_check_file_turns_a_bad_file_into_a_wrong_output(tmp_path, plant):
    expected = torch.ones(1000)
    path = tmp_path / "t_r0.pt"
    if plant == "symlink":
        secret = _save(tmp_path / "secret.pt", expected.clone())  # a file the reader may read, the writer may not
        os.symlink(secret, path)
    elif plant == "fifo":
        os.mkfifo(path)
    elif plant == "garbage":
        path.write_bytes(b"not a tensor file" * 100)
    elif plant == "oversized":
        # Correct values, and a second tensor far beyond what an output of the reference's size can take.
        _save(path, (expected.clone(), torch.zeros(4 << 20)))
    entry = outputs.check_file(PLAIN, expected, str(path), rank=0, world_size=1)
    assert not entry["ok"] and entry["message"].startswith("unreadable output:"), entry
    if plant == "oversized":
        assert "more than" in entry["message"]


def test_a_problem_compare_that_raises_is_the_outputs_fault(tmp_path):
    def compare(expected, actual, world_size):
        if actual.shape != expected.shape:
            raise KeyError("a structure this function never expected")
        return None

    problem = types.SimpleNamespace(compare=compare, slack=None, atol=0, rtol=0)
    expected = torch.ones(3)
    assert outputs.check_file(problem, expected, _save(tmp_path / "a.pt", torch.ones(3)), 0, 1)["ok"]
    entry = outputs.check_file(problem, expected, _save(tmp_path / "b.pt", torch.ones(2)), 0, 1)
    assert not entry["ok"] and "could not be compared" in entry["message"]


def test_a_problem_compare_gets_contiguous_host_tensors(tmp_path):
    seen = {}

    def compare(expected, actual, world_size):
        seen.update(expected=expected, actual=actual)
        return None

    problem = types.SimpleNamespace(compare=compare, slack=None, atol=0, rtol=0)
    expected = torch.arange(12.0).reshape(3, 4).t()  # a non-contiguous view, as a reference may return
    assert outputs.check_file(problem, expected, _save(tmp_path / "a.pt", expected.contiguous()), 0, 1)["ok"]
    assert seen["expected"].is_contiguous() and seen["expected"].device.type == "cpu"


def test_a_file_with_leaves_no_rank_writes_is_refused_before_a_problem_compare_sees_it(tmp_path):
    # ``weights_only`` loads dtypes and devices too; a rank's own writer (outputs.portable) never writes them, so such
    # a file was forged, and a problem's ``compare`` (written for tensors and numbers) must not be handed one.
    seen = []
    problem = types.SimpleNamespace(compare=lambda e, a, w: seen.append(a), slack=None, atol=0, rtol=0)
    entry = outputs.check_file(problem, (torch.ones(3), 1), _save(tmp_path / "a.pt", (torch.ones(3), torch.int8)), 0, 1)
    assert not entry["ok"] and "output[1] is a dtype" in entry["message"] and seen == []


def test_every_copy_and_check_of_an_output_accepts_the_same_things():
    good = (torch.ones(2), [3, {"k": torch.zeros(1)}], None, "s")
    for walk in (outputs.check_plain, outputs.portable, outputs.snapshot, outputs.to_host):
        walk(good)
        with pytest.raises(TypeError, match=r"output\[1\]\[1\]\['k'\] is a Parameter"):
            walk((torch.ones(2), [3, {"k": torch.nn.Parameter(torch.zeros(1))}]))
        with pytest.raises(TypeError, match="is a device"):
            walk([torch.device("cpu")])


def test_take_copies_then_deletes_and_later_writes_do_not_reach_the_copy(tmp_path):
    source, target = tmp_path / "b0_r0.pt", tmp_path / "kept_b0_r0.pt"
    _save(source, torch.ones(256))
    with open(source, "r+b") as held:  # a writer that keeps the file open, as a hostile thread could
        outputs.take(str(source), str(target), max_bytes=1 << 20)
        held.seek(0)
        held.write(b"\0" * 64)
        held.flush()
    assert not source.exists()
    assert torch.equal(torch.load(str(target), weights_only=True), torch.ones(256))


@pytest.mark.parametrize("plant", ["symlink", "oversized", "missing"])
def test_take_refuses_what_it_must_not_copy(tmp_path, plant):
    source, target = tmp_path / "b0_r0.pt", tmp_path / "kept.pt"
    if plant == "symlink":
        os.symlink(_save(tmp_path / "secret.pt", torch.ones(4)), source)
    elif plant == "oversized":
        _save(source, torch.zeros(1 << 20))
    with pytest.raises((ValueError, FileNotFoundError)):
        outputs.take(str(source), str(target), max_bytes=1 << 16)
    assert not target.exists()


def test_size_limit_leaves_room_for_structure_only():
    assert outputs.size_limit(0) == outputs.FILE_SLACK_BYTES
    assert outputs.size_limit(300 << 20) == (600 << 20) + outputs.FILE_SLACK_BYTES
    assert outputs.nbytes((torch.ones(4), {"a": torch.ones(2, dtype=torch.bfloat16)}, 3)) == 20
