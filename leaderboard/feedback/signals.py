"""What the feedback app announces, for the apps above it to follow (docs/architecture.md, the apps' order: feedback
never imports them). Sent synchronously, inside the sender's transaction, as the direct call was.

- ``feedback_changed(submission_id)``: the feedback that counts for this submission changed (a session linked to it,
  a run of a linked session landed): its measured costs follow (leaderboard/scoring/apps.py connects
  leaderboard/scoring/costs.py's refresh).
"""

from django.dispatch import Signal

feedback_changed = Signal()
