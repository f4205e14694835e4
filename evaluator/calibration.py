"""Every calibrated constant of the judge's timing rules, each with a one-line reason; the measurements behind them
are in docs/calibration.md (the contract's limits, PAIR_OFFSET_SD, PAIR_Z, HOST_PACED_FLOOR, ONE_PAIR_FLOOR and
MAX_PAIRS, live in evaluator/schema.py)."""
from __future__ import annotations

from evaluator import pairs


MAX_ITERS = 100  # timed calls per block, per side, when one pair does all the timing
# A probe block (no spin) has up to this many times a spun block's calls: it costs less per call, and the block's own
# fixed cost, which varies by milliseconds, then weighs less in its wall per call (_probe_check).
PROBE_CALLS_FACTOR = 4.0


# From block 1 on, a candidate's wish can lengthen the spin both sides share to at most this many times the
# reference's (see Pair._time).
CANDIDATE_SPIN_SHARE = 2.0


# Relative offset between two process groups running identical code, measured by A/A runs (see _timing_document).
# CUDA: the one-sided bound on one pair's offset from the pairs' calibration, exp(2.65 x 0.030) - 1 = 8.3%
# (docs/calibration.md, ONE_PAIR_FLOOR). A 5% difference cannot be told from a change of process pair in one judged
# run: that takes several pairs (Config.pairs). CPU: see schema.py.
PROCESS_NOISE_FLOOR = pairs.ONE_PAIR_FLOOR
# A call is host-bound when its GPU work is already finished by the time the host returns from it (a host sync
# inside, or launches slower than the GPU runs them): then the events time the host's pace, which differs between
# processes far more than GPU work does (docs/calibration.md, HOST_PACED_FLOOR). Such timings get this wider
# floor, and say so; so does every CPU timing.
HOST_BOUND_NOISE_FLOOR = pairs.HOST_PACED_FLOOR
HOST_BOUND_SHARE = 0.2  # of a side's timed calls (median over blocks)
# A reference block with at least this share of spun-short calls timed the reference's host (_timing_document): the
# shares cluster low and high, and the high blocks' medians are far above the call's (docs/calibration.md).
SPIN_SHORT_BLOCK_SHARE = 0.5


# The probe check's allowance per call, the largest of: a floor, PROBE_RANGE_FACTOR times the spread of the
# reference's own probe blocks (trusted: a candidate that varies its blocks cannot widen it), a per-block share
# spread over the probe block's calls, and a share of the candidate's own cost per call. The judge's wall around a
# block varies by milliseconds with the harness's own work (building the block's inputs, barriers), whatever the call.
# The floor is 3 SD of the honest excess where it is quiet; 1.7 x the range of three blocks is ~3 sigma of the
# difference of two medians (docs/calibration.md, PROBE_FLOOR_MS). Across K pairs the mean excess is held to the
# median noise allowance / sqrt(K), at least 0.25 ms (pairs.probe_pooled).
PROBE_FLOOR_MS = {"cuda": 0.51, "cpu": 9.0}
PROBE_RANGE_FACTOR = 1.7
PROBE_BLOCK_MS = {"cuda": 2.0, "cpu": 30.0}
PROBE_SHARE = 0.25


# The spun cross-check's allowance also covers the reference's own spread: CROSSCHECK_RANGE_FACTOR times the range of
# its per-call walls (spin removed) over the blocks the check reads. Both sides run the same harness, so an honest
# candidate's overhead differs from the reference's by about as much as the reference's differs from block to block.
# With five blocks a side the difference of the two medians has an SD of about 0.8 sigma and the range of five is
# about 2.3 sigma, so 1 x range is ~3 sigma; without it honest A/A runs were flagged although retimed
# (docs/calibration.md, CROSSCHECK_RANGE_FACTOR).
CROSSCHECK_RANGE_FACTOR = 1.0
