"""The ``pkb`` command line's site client: ``pkb submit``/``pkb publish`` (submit.py) and ``pkb feedback``
(feedback.py, with the feedback text in report.py). Standard library only (rich, lazily, for a progress bar), so
the judge's command line (evaluator/cli.py) can import it without Django; it talks to a site over HTTP only and
never imports ``leaderboard``, ``evaluator`` or ``problems`` (tests/test_layers.py)."""
