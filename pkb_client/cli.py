"""``pkb`` for the site client alone: ``pkb submit|publish|withdraw|feedback`` (installed as ``pkb-client`` beside the
judge, and as ``pkb`` by the client's own install, client/pyproject.toml). Standard library: nothing of the judge
(torch, numpy) or the site (Django) is imported to run them (tests/site/test_client_alone.py).

Any other command is the judge's (``pkb eval``, ``pkb selfcheck``, ...): the judge's own ``pkb`` (evaluator/cli.py,
installed with the judge, which dispatches these four commands here) runs them; this one refuses them with a line that
says so.
"""
from __future__ import annotations

import sys

COMMANDS = {
    "submit": "upload a directory of candidates to a pkb-arena site (--wait: follow verdicts)",
    "publish": "list one of your submissions on the site's leaderboard (asks first)",
    "withdraw": "take one of your published submissions off the leaderboards (asks first)",
    "feedback": "feedback sessions and runs on a pkb-arena site (agentic protocol; pkb feedback --help lists its "
                "subcommands)",
}


def run(command: str, argv: list[str]) -> int:
    """One of COMMANDS with the rest of its line (its own parser, in submit.py or feedback.py, reads it)."""
    if command == "feedback":
        from pkb_client import feedback

        return feedback.main(argv)
    from pkb_client import submit

    return {"submit": submit.main, "publish": submit.publish_main, "withdraw": submit.withdraw_main}[command](argv)


def usage() -> str:
    return "usage: pkb {" + ",".join(COMMANDS) + "} ...\n\n" + "\n".join(
        f"  {name:<10} {text}" for name, text in COMMANDS.items())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return run(argv[0], argv[1:])
    if argv and argv[0] not in ("-h", "--help"):
        print(f"pkb {argv[0]}: not a site client command: the judge's commands come with the judge's own install "
              "(pip install pkb-arena, with torch), whose pkb runs both", file=sys.stderr)
        print(usage(), file=sys.stderr)
        return 2
    print(usage())
    return 0 if argv else 2


if __name__ == "__main__":
    sys.exit(main())
