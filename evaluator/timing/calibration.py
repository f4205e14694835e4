"""Every calibrated constant of the judge's timing rules and of the timed loop, each with a one-line reason; the
measurements behind them are in docs/calibration.md, under each constant's name. The contract's limits (PAIR_OFFSET_SD,
PAIR_Z, HOST_PACED_FLOOR, ONE_PAIR_FLOOR, MAX_PAIRS) live in evaluator/contract/schema.py, which the site reads too.

Torch-free and standard library only: read by the judge (evaluator/timing/, evaluator/judge/) and by the rank
processes' timed loop (evaluator/rank/).
"""

from __future__ import annotations

from evaluator.contract.schema import HOST_PACED_FLOOR, ONE_PAIR_FLOOR

# --- the schedule of timing blocks (evaluator/judge/schedule.py) ----------------------------------------------------

MAX_ITERS = 100  # timed calls per block, per side, when one pair does all the timing
# A probe block (no spin) has up to this many times a spun block's calls: its fixed cost then weighs less per call.
PROBE_CALLS_FACTOR = 4.0
# From block 1 on, a candidate's wish can lengthen the shared spin to this many times the reference's, no more.
CANDIDATE_SPIN_SHARE = 2.0

# --- the spin ahead of each timed call, in each rank (evaluator/rank/timed.py) --------------------------------------

SPIN_HOST_FACTOR = 3.0  # the spin covers this many times the host's time to enqueue one call (the median warm-up)
SPIN_MARGIN_US = 100.0  # plus this margin, which the tiniest calls' host time needs beyond the factor
SPIN_MAX_US = 5_000.0  # and never more: the spin's idle GPU is room for work the events do not see

# --- device memory between commands, in each rank (evaluator/rank/worker.py) ----------------------------------------

# A rank hands its cached device memory back above the larger of these (the other side shares the GPU); below it,
# re-allocating inside each block took milliseconds that varied from block to block, noise in the judge's wall clock.
RELEASE_CACHE_BYTES = 4 * 2**30
RELEASE_CACHE_SHARE = 8  # of the device's memory: no side holds more than an eighth of it idle while the other runs

# --- one pair's interval (evaluator/timing/rules.py) -----------------------------------------------------------------

# Two process groups running identical code differ by a relative offset the bootstrap cannot see: one pair's
# interval is widened by this (CUDA: exp(2.65 x 0.030) - 1 = 8.3%; CPU: the host-paced floor).
PROCESS_NOISE_FLOOR = ONE_PAIR_FLOOR
# Host-paced calls (the GPU done when the host returns) time the host, whose pace differs far more between processes.
HOST_BOUND_NOISE_FLOOR = HOST_PACED_FLOOR
HOST_BOUND_SHARE = 0.2  # a side is host-bound from this share of its timed calls (median over blocks)
# A reference block with this share of spun-short calls timed the reference's host: "faster" is withheld.
SPIN_SHORT_BLOCK_SHARE = 0.5

# --- the spun blocks' cross-check (evaluator/timing/rules.py, _crosscheck) ------------------------------------------

# The allowance for a candidate's unexplained time per call is the largest of a floor per call, a per-block cost
# spread over the block's calls, a share of the candidate's own wall per call, and the reference's own spread:
CROSSCHECK_FLOOR_MS = {"cuda": 0.05, "cpu": 2.0}  # a floor per call for the harness's own jitter (barrier, sync)
CROSSCHECK_BLOCK_MS = {"cuda": 2.0, "cpu": 30.0}  # a block's start-up, input building and replies (noisy on CPU)
CROSSCHECK_SHARE = 0.25  # of the candidate's wall per call less the judge's spin, which must never widen it
# Times the range of the reference's per-call walls over the blocks read: ~3 sigma of the two medians' difference.
CROSSCHECK_RANGE_FACTOR = 1.0

# --- the probe check (evaluator/timing/rules.py, _probe_check) ------------------------------------------------------

# Its allowance per call is the largest of these: a floor, a factor times the reference's probe blocks' range, a
# per-block cost spread over the calls, and a share of the candidate's own cost per call.
PROBE_FLOOR_MS = {"cuda": 0.51, "cpu": 9.0}  # 3 SD of the honest excess where the host is quiet
PROBE_RANGE_FACTOR = 1.7  # 1.7 x the range of three blocks is ~3 sigma of the difference of two medians
PROBE_BLOCK_MS = {"cuda": 2.0, "cpu": 30.0}  # the judge's wall around a block varies by milliseconds, whatever the call
PROBE_SHARE = 0.25  # of the candidate's cost per call less the harness's

# --- K pairs (evaluator/timing/pairs.py) ----------------------------------------------------------------------------

# A few honest pairs in a hundred fail the cross-check: with K pairs a suspect one is set aside, and the result is
# flagged only when more than this share of its pairs are suspect.
MAX_SUSPECT_SHARE = 0.25
# The pooled probe check's least allowance per call: a judged run's pairs are not independent, so their mean excess
# spreads more than 1/sqrt(K) says (3 SD of that spread).
PROBE_POOLED_FLOOR_MS = {"cuda": 0.25, "cpu": 4.5}
