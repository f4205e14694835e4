"""A long-lived judge for one worker: ``python -m evaluator.serve --world-size W --device D --warm N --reply-fd FD``.

It holds a WarmPool (evaluator/process/warm.py) and runs, one after another, the judge requests it reads on stdin as
JSON lines ``{"id": ..., "argv": JudgeRequest.argv(), "log": PATH}`` (evaluator/contract/requests.py: the request's own
command line, read back by JudgeRequest.from_argv): exactly what ``python -m evaluator.cli`` would do with that request
(the result goes where its ``json_out`` says), except that the job's rank groups come from the pool. What
the command prints goes to ``log``; when it is done, ``{"id": ..., "status": EXIT_STATUS}`` is written to the reply fd.

It runs no candidate code itself (that only ever runs in rank processes), so one crashed or killed job does not
spoil the next: its owner (leaderboard.jobs.judge_service) kills and restarts it whenever a job overruns or it dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback

from evaluator import cli
from evaluator.contract import requests as contract
from evaluator.process import warm


def serve(requests, reply, pool) -> None:
    for line in requests:
        request = json.loads(line)
        with (
            open(request["log"], "a", buffering=1) as log,
            contextlib.redirect_stdout(log),
            contextlib.redirect_stderr(log),
        ):
            try:
                status = cli.run_eval(contract.JudgeRequest.from_argv(request["argv"]), pool=pool)
            except SystemExit as exc:  # argparse's way of refusing arguments
                if not isinstance(exc.code, int):
                    print(exc.code)
                status = exc.code if isinstance(exc.code, int) else 2
            except Exception:  # noqa: BLE001 - a judge failure: the job is the platform's problem (non-zero)
                traceback.print_exc()
                status = 1
        reply.write(json.dumps({"id": request.get("id"), "status": status}) + "\n")
        reply.flush()


def main(argv=None) -> int:
    args = contract.serve_parser(__doc__).parse_args(argv)
    reply = os.fdopen(args.reply_fd, "w", buffering=1)
    with warm.WarmPool(args.world_size, args.device, depth=args.warm) as pool:
        serve(sys.stdin, reply, pool)
    return 0


if __name__ == "__main__":
    sys.exit(main())
