"""What the jobs app announces, for the apps above it to follow (docs/architecture.md, the apps' order: jobs never
imports them). Sent synchronously, inside the sender's transaction: a receiver's failure fails the sender's write.

- ``results_changed(submission_id, problem_ids)``: the evaluations of these problems of a submission changed (a
  result stored, a run failed for good or re-queued): scoring recomputes their scores and the submission's row. Sent
  from leaderboard/jobs/services.py (``_after_result``, ``jobs_rerun``); its one receiver is
  leaderboard/scoring/services.py ``on_results_changed``, connected in leaderboard/scoring/apps.py
  (tests/site/test_app_signals.py holds it to exactly one).
- ``worker_refused(queues, reason)``: a worker's boot gate said no (leaderboard/jobs/worker_boot.py, sent before the
  refusal is raised): the ops app writes the worker's record (leaderboard/ops/apps.py connects
  leaderboard/ops/heartbeat.py ``refused``).
"""

from django.dispatch import Signal

results_changed = Signal()
worker_refused = Signal()
