"""What runs inside a rank process (``python -m evaluator.rank.worker``): untrusted when its role is ``cand``.

worker.py: the command loop (start, load, trial, check, time, kept); timed.py: the timed loop of one block, shaped
like Triton's ``do_bench``; clocks.py: the harness's clocks, bound before any candidate code; host.py: what a rank
reports of its host, and its cores; outputs.py: output files and the check; messages.py: a candidate's failure in its
author's terms; profiling.py: profile mode; gloo_compat.py: NCCL's collective forms on gloo (the CPU profile). What
candidates may import: evaluator/pkb_utils/.
"""
