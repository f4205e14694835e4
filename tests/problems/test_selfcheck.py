"""`pkb selfcheck` through the real judge on CPU gloo worlds: every reference judged against itself, and the three
null answers (zeros, inputs unchanged, no communication) rejected, for W = 1, 2, 4 (issues 3, 5 and 6)."""

import pytest

from evaluator.judge import selfcheck

# All 87 in one session a world size, as `pkb selfcheck` runs them: one start of the two groups, not one a span.
RANGES = {"1-87": range(1, 88)}


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("span", list(RANGES))
def test_selfcheck(span, W):
    # The references' correctness and the nulls are what is checked here. Every problem's timing also runs (a few
    # calls a block, 40 ms a side instead of the judge's 600: the timing rules have tests of their own) at W = 1, the
    # one-GPU profile's world, and at W = 4; W = 2 is every timed red-team test's world.
    timed = W != 2
    report = selfcheck.run(
        list(RANGES[span]),
        W,
        "cpu",
        M=128,
        N=256,
        reduced=True,
        trials=3,
        seed=1234 + W,
        timing_budget_ms=40,
        timing=timed,
    )
    bad = [selfcheck.render_row(row) for row in report["rows"] if not row["ok"]]
    assert not bad, "\n".join(bad)
    judged = [row for row in report["rows"] if row["verdict"] != "skipped"]
    assert judged, "no problem allows this world size?"
    for row in judged:
        assert row["verdict"] == "correct" and row["output_shapes"] is not None
        assert (row["timing"]["reference_ms"] > 0) if timed else row["timing"] is None
        expected_nulls = {"zeros", "inputs"} | ({"nocomm"} if W > 1 else set())
        assert set(row["nulls"]) == expected_nulls
