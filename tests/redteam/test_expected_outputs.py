"""Reading or reusing expected outputs: stale memory, gc scans, the reference's files, the reference module, other
ranks' results. See docs/threat-model.md, section A."""

from evaluator.contract import schema
from tests.redteam.harness import TIMED, assert_never_correct_and_faster, logs, notes, run, separate_uid


def test_honest_control_passes():
    result = run("honest_allreduce", **TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert result["flags"] == [] and result["timing"]["verified_timed_calls"] >= 4


def test_stale_allocator_memory_is_incorrect():
    result = run("stale_memory")
    assert result["verdict"] == schema.INCORRECT, result["message"]


def test_gc_scan_finds_nothing_to_steal():
    result = run("gc_scan")
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert "gc_scan:" in logs(result)


def test_reference_output_files_cannot_be_snooped():
    result = run("ref_output_snoop")
    assert result["verdict"] == schema.INCORRECT, result["message"]
    text = logs(result)
    assert "STOLE" not in text
    if notes(result).get("complete"):
        # Inside the filesystem view the reference's directory is not there at all.
        assert "No such file or directory" in text, text[-2000:]
    elif separate_uid(result):
        assert "Permission denied" in text  # the reference's directory is root-only


def test_calling_the_public_reference_is_correct_but_never_faster():
    result = run("calls_reference", **TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert result["timing"]["faster"] is False
    assert_never_correct_and_faster(result)


def test_every_rank_is_checked_not_only_rank_zero():
    result = run("rank0_only")
    assert result["verdict"] == schema.INCORRECT
    assert result["message"].startswith("trial 0: rank 1"), result["message"]
    assert result["trials"][0]["ranks"][0]["ok"] is True
