"""The candidate sandbox, decided once when a worker starts, before it takes any job: every dramatiq entry point that
runs candidates (the jobs' worker, the feedback worker, the embedded one) calls :func:`check_sandbox` at boot."""

from __future__ import annotations

import logging

log = logging.getLogger("leaderboard.jobs.actors")
_decided: dict = {}  # per worker process: a worker with both middlewares asks the host once


class SandboxUnavailableOnHost(RuntimeError):
    """This worker would run strangers' candidates on a host without the whole sandbox: it refuses to start rather
    than run them in a weaker one."""


def check_sandbox(queues) -> dict:
    """The host's sandbox, decided once, before a worker takes any job (jobs then run with --require-sandbox, so a
    transient failure later is an infra_error, never a weaker sandbox). Every queue needs it; only an operator's
    explicit PKB_SANDBOX=off starts without it, loudly."""
    from django.conf import settings

    from leaderboard.jobs import judge_commands

    if "support" in _decided:
        return _decided["support"]
    support = judge_commands.host_support()
    if support["complete"]:
        log.info("candidate sandbox: %s", support["summary"])
        _decided["support"] = support
        return support
    if not settings.PKB_SANDBOX_OFF:
        raise SandboxUnavailableOnHost(
            f"refusing to start: queues {sorted(queues)} run strangers' code, which needs "
            f"the whole candidate sandbox, and this host cannot give it: "
            f"{'; '.join(support['missing'])} (PKB_SANDBOX=off runs without it, every "
            "result flagged)"
        )
    log.warning("!" * 78)
    log.warning("PKB_SANDBOX=off: candidates run WITHOUT the sandbox: %s", support["summary"])
    log.warning("results of this worker are flagged 'unsandboxed' and never rank")
    log.warning("!" * 78)
    _decided["support"] = support
    return support
