"""Input tricks: mutating inputs, returning inputs or views of them, caches keyed by pointer, id or content,
telling timed calls from the others, right-then-wrong. See docs/threat-model.md, section B."""

from evaluator.contract import schema
from tests.redteam.harness import TIMED, assert_never_correct_and_faster, logs, run


def test_honest_buffer_reuse_is_correct_in_timed_calls():
    # Control for the kept-output check: one output buffer returned by every call must not look wrong.
    result = run("honest_reuses_buffer", **TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert result["timing"]["verified_timed_calls"] >= 4


def test_mutating_inputs_does_not_fool_the_check():
    result = run("mutates_inputs")
    assert result["verdict"] == schema.INCORRECT, result["message"]


def test_returning_a_view_of_the_input_is_incorrect():
    result = run("returns_input_view")
    assert result["verdict"] == schema.INCORRECT, result["message"]


def test_pointer_cache_never_hits_or_is_wrong_when_it_does():
    result = run("cache_by_pointer", **TIMED)
    assert_never_correct_and_faster(result)
    if result["verdict"] == schema.CORRECT:
        # No two calls share a buffer, but the allocator and CPython recycle addresses and ids between blocks: in
        # about one run in five here a stale answer went to a call no check read (a warm-up call, or a timed call
        # other than the block's kept one). Wrong and unseen, but too few calls to move any block's median.
        hits_per_rank = logs(result).count("cache_by_pointer: HIT") / 2
        timing = result["timing"]
        assert hits_per_rank < timing["samples"] / timing["blocks"] / 2, logs(result)[-2000:]
    else:
        assert result["verdict"] == schema.INCORRECT  # a recycled address served a stale answer


def test_content_cache_never_hits():
    result = run("cache_by_content", **TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert "HIT" not in logs(result)  # every call in the job has distinct inputs
    timing = result["timing"]
    assert timing["distinct_input_sets_per_block"] >= timing["calls_per_block"]
    assert_never_correct_and_faster(result)


def test_skipping_work_only_in_timed_calls_is_caught():
    result = run("detects_timed_calls", **TIMED)
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert "timed call" in result["message"]
    assert [t["verdict"] for t in result["trials"]] == [schema.CORRECT, schema.CORRECT]  # it fooled the trials


def test_correct_first_calls_then_wrong_is_caught():
    result = run("correct_then_wrong", **TIMED)
    assert result["verdict"] == schema.INCORRECT, result["message"]
