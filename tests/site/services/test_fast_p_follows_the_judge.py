"""fast_1.5 and fast_2.0 count what the judge decided ("faster at p", evaluator/contract/verdict.py), never a bound the
site compares itself: a result whose "faster" the judge withheld counts at no bar, and fast_p <= fast_1.0 always."""

import itertools

from evaluator.contract import schema, verdict
from leaderboard.scoring.models import LeaderboardEntry
from tests.site.conftest import judge_document


def decided(lo, hi=None, flags=(), spun=()):
    """A correct result's document whose timing the judge's one decision concluded (as evaluate() does)."""
    document = judge_document(speedup=lo + 0.1, lo=lo, hi=hi or lo + 0.2, flags=flags)
    document["timing"]["reference_blocks_spun_short"] = list(spun)
    return verdict.conclude(document, "cuda")


def entry_after(owner, submit, finish, document):
    submission = submit(owner, profile="gpu-h200x8")
    finish(submission.jobs.get(), document)
    return LeaderboardEntry.objects.get(submission=submission), submission.scores.get(problem_id=1)


def test_a_withheld_result_counts_at_no_bar(owner, submit, finish, gpu):
    # Its interval lies above 2x, but a reference block timed its host: the judge withheld "faster".
    document = decided(2.4, spun=[1])
    assert document["timing"]["faster"] is False
    entry, score = entry_after(owner, submit, finish, document)
    assert (entry.fast_1_0, entry.fast_1_5, entry.fast_2_0) == (0, 0, 0)
    assert not (score.faster or score.faster_1_5 or score.faster_2_0)


def test_the_site_counts_the_stored_decision_not_the_bound(owner, submit, finish, gpu):
    document = decided(1.8)
    assert document["timing"]["faster_at"] == {"1.0": True, "1.5": True, "2.0": False}
    document["timing"]["faster_at"]["1.5"] = False  # the judge's word is what counts, whatever the bound says
    entry, _ = entry_after(owner, submit, finish, document)
    assert entry.fast_1_0 > 0 and entry.fast_1_5 == 0 and entry.fast_2_0 == 0


def test_an_older_document_without_faster_at_falls_back_to_its_faster_and_interval(owner, submit, finish, gpu):
    document = judge_document(speedup=2.6, lo=2.3, hi=2.9)
    assert "faster_at" not in document["timing"]
    entry, score = entry_after(owner, submit, finish, document)
    assert score.faster and score.faster_1_5 and score.faster_2_0 and entry.fast_2_0 == entry.fast_1_0 > 0
    withheld = judge_document(speedup=2.6, lo=2.3, hi=2.9, faster=False)
    assert schema.faster_at(withheld["timing"]) == {"1.0": False, "1.5": False, "2.0": False}


def test_fast_p_never_exceeds_fast_1_0_whatever_the_evidence():
    for lo, flagged, host in itertools.product((None, 0.9, 1.0, 1.2, 1.5, 1.7, 2.0, 2.5), (False, True), (False, True)):
        timing = {"speedup_ci": [lo, 3.0], "reference_blocks_spun_short": [0] if host else []}
        at = verdict.decide(timing, ["timing_crosscheck"] if flagged else [], "cuda")["faster_at"]
        assert at["1.0"] == timing["faster"] and at["1.0"] >= at["1.5"] >= at["2.0"], (lo, flagged, host)
        assert schema.faster_at(timing) == at


def test_a_score_that_does_not_count_as_correct_is_faster_at_no_bar(owner, submit, finish, gpu):
    # The site's own guard, whatever the document says: a flagged result on a ranked profile does not count as correct,
    # so it is faster at no bar even where its document (not concluded by the judge here) claims every bar.
    document = judge_document(speedup=2.6, lo=2.3, hi=2.9, flags=[schema.FLAG_UNSANDBOXED])
    document["timing"]["faster_at"] = {"1.0": True, "1.5": True, "2.0": True}
    entry, score = entry_after(owner, submit, finish, document)
    assert not score.correct and not (score.faster or score.faster_1_5 or score.faster_2_0)
    assert (entry.fast_1_0, entry.fast_1_5, entry.fast_2_0) == (0, 0, 0)
