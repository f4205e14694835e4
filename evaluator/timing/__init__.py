"""The timing rules, torch-free: from both sides' timed blocks to the timing document's speedup, interval and flags
(the evidence; "faster" and "ranked" are decided from it by evaluator/contract/verdict.py alone).

rules.py: one pair's timing document, its noise floors, the spun blocks' cross-check and the probe check;
pairs.py: K pairs combined, triage of suspect pairs, the pooled probe check; stats.py: medians and the bootstrap;
physics.py: the speed-of-light floor; calibration.py: every calibrated constant, each with its reason.
"""
