"""The ``pkb`` command line's site client: ``pkb submit``/``pkb publish``/``pkb withdraw`` (submit.py) and ``pkb
feedback`` (feedback.py), dispatched by cli.py (the ``pkb-client`` script; ``pkb`` itself in the client's own install,
client/pyproject.toml). Standard library only (rich, lazily, for a progress bar) plus the judge's torch-free contract
(evaluator/contract/schema.py and what it imports: the feedback text in evaluator/contract/feedback_text.py), so it
installs and runs without torch, numpy or Django; it talks to a site over HTTP only and never imports ``leaderboard``,
``problems`` or the judge itself (tests/test_layers.py)."""
