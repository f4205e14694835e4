"""``pkb`` for the site client alone: ``pkb submit|status|wait|list|publish|withdraw|delete|feedback`` (installed as
``pkb-client`` beside the judge, and as ``pkb`` by the client's own install, client/pyproject.toml). Standard library:
nothing of the judge (torch, numpy) or the site (Django) is imported to run them (tests/test_client_alone.py).

Any other command is the judge's (``pkb eval``, ``pkb selfcheck``, ...): the judge's own ``pkb`` (evaluator/cli.py,
installed with the judge, which dispatches these commands here) runs them; this one refuses them with a line that
says so.
"""

from __future__ import annotations

import sys

COMMANDS = {
    "submit": "upload a directory of candidates to a pkb-arena site (--wait: follow verdicts)",
    "status": "a submission's evaluations now: counts, each finished file's verdict and reason",
    "wait": "follow a submission (one made without --wait) until every evaluation finished",
    "list": "your submissions, newest first (--status, --profile, --published)",
    "publish": "list one of your submissions on the site's leaderboard (asks first)",
    "withdraw": "take one of your published submissions off the leaderboards (asks first)",
    "delete": "delete one of your submissions that was never published (asks first)",
    "feedback": "feedback sessions and runs on a pkb-arena site (agentic protocol; pkb feedback --help lists its "
    "subcommands)",
}


def run(command: str, argv: list[str]) -> int:
    """One of COMMANDS with the rest of its line (its own parser, in submit.py, manage.py or feedback.py, reads it)."""
    if command == "feedback":
        from pkb_client import feedback

        return feedback.main(argv)
    from pkb_client import manage, submit, visibility

    return {
        "submit": submit.main,
        "publish": visibility.publish_main,
        "withdraw": visibility.withdraw_main,
        "status": manage.status_main,
        "wait": manage.wait_main,
        "list": manage.list_main,
        "delete": manage.delete_main,
    }[command](argv)


def version() -> str:
    """The installed distribution's version: the client's own install, or the judge's (which ships this package)."""
    from importlib import metadata

    for name in ("pkb-arena-client", "pkb-arena"):
        try:
            return f"pkb {metadata.version(name)} ({name})"
        except metadata.PackageNotFoundError:
            continue
    return "pkb (not installed: run from a checkout)"


def usage() -> str:
    return (
        "usage: pkb [--version] {"
        + ",".join(COMMANDS)
        + "} ...\n\n"
        + "\n".join(f"  {name:<10} {text}" for name, text in COMMANDS.items())
        + ("\n\nenvironment: PKB_URL, the site (default http://127.0.0.1:8000); PKB_TOKEN, your API token")
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return run(argv[0], argv[1:])
    if argv[:1] == ["--version"]:
        print(version())
        return 0
    if argv and argv[0] not in ("-h", "--help"):
        # The judge is not published on a package index: it installs from a checkout of the repository.
        print(
            f"pkb {argv[0]}: not a site client command: the judge's commands come with the judge's own install "
            "(pkb eval, pkb selfcheck, ...), from a checkout of the repository (pip install ., with torch), which "
            "runs both kinds",
            file=sys.stderr,
        )
        print(usage(), file=sys.stderr)
        return 2
    print(usage())
    return 0 if argv else 2


if __name__ == "__main__":
    sys.exit(main())
