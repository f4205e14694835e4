"""One long-lived judge per worker thread, for warm spares (settings.PKB_WARM_SPARES > 0).

A fresh ``python -m evaluator.cli eval`` per job starts its rank groups from nothing: on a GPU host that is most of
the job's wall time. ``evaluator.serve`` keeps a pool of groups started ahead of the jobs (evaluator/process/warm.py)
and runs the same judge requests (evaluator/contract/requests.py, JudgeRequest); this module owns one such process per
worker thread and gives each job the same guarantees as judge_process.supervise: the job's log in its own directory, the
lease renewed while it runs, and on the deadline or a lost lease the judge is killed (with every job of its pool) and
started again for the next job. A judge that died or answered nothing readable is an infra_error, as with a per-job
judge.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from django.conf import settings

from evaluator.contract.schema import JudgeRequest, serve_command
from leaderboard.jobs import judge_process

_local = threading.local()


def launch(
    request: JudgeRequest, workdir: Path, heartbeat, deadline: float, what: str, warm_spares: int = 0
) -> tuple[str, int | None]:
    """Judge one request: in this thread's long-lived judge when ``warm_spares`` (settings.PKB_WARM_SPARES) asks for
    one, else in a judge process of its own (judge_process.supervise, ``request.command()``). Returns (exited |
    timeout | lease_lost, the judge's exit status)."""
    # A shared-device world (every rank on one GPU) never uses warm spares: they would hold the GPU beside its groups.
    if warm_spares and not request.shared_device:
        service = for_thread(request.world_size, request.device, warm_spares)
        return service.run(request, workdir, heartbeat, deadline, what)
    return judge_process.supervise(request.command(), workdir, heartbeat, deadline, what)


def for_thread(world_size: int, device: str, depth: int) -> JudgeService:
    """This thread's judge for that world size and device (another one is stopped first: one pool per thread)."""
    service = getattr(_local, "service", None)
    if service is None or service.key != (world_size, device, depth):
        if service is not None:
            service.stop()
        service = _local.service = JudgeService(world_size, device, depth)
    return service


class JudgeService:
    def __init__(self, world_size: int, device: str, depth: int):
        self.key = (world_size, device, depth)
        self.process: subprocess.Popen | None = None
        self.reply_fd: int | None = None
        self.buffer = b""
        self.seq = 0
        self.directory: Path | None = None

    def run(
        self, request: JudgeRequest, workdir: Path, heartbeat, deadline: float, what: str
    ) -> tuple[str, int | None]:
        """Judge one request; same return as judge_process.supervise: (exited | timeout | lease_lost, exit status)."""
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self._start()
        self.seq += 1
        log_path = workdir / "judge.log"
        log_path.touch()
        line = json.dumps({"id": self.seq, "argv": request.argv(), "log": str(log_path)}) + "\n"
        try:
            self.process.stdin.write(line.encode())
            self.process.stdin.flush()
        except OSError:  # it died between jobs
            return "exited", self.stop() or 1
        return judge_process.watch(self._wait, self.stop, heartbeat, deadline, what)

    def _wait(self, timeout: float) -> int | None:
        with selectors.DefaultSelector() as selector:
            selector.register(self.reply_fd, selectors.EVENT_READ)
            if not selector.select(timeout):
                return None
        chunk = os.read(self.reply_fd, 65536)
        if not chunk:  # the judge died in the middle of the job
            return self.stop() or 1
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                reply = json.loads(line)
            except ValueError:
                return self.stop() or 1
            if reply.get("id") == self.seq:
                status = reply.get("status")
                return status if isinstance(status, int) else 1
        return None

    def _start(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="judge-service-", dir=judge_process.work_root()))
        read_fd, write_fd = os.pipe()
        world_size, device, depth = self.key
        command = serve_command(world_size, device, depth, write_fd)
        with open(self.directory / "service.log", "ab") as log:
            try:
                self.process = subprocess.Popen(
                    command,
                    cwd=str(settings.BASE_DIR),
                    env=judge_process.judge_env(self.directory),
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(write_fd,),
                    start_new_session=True,
                    preexec_fn=judge_process.die_with_parent,
                )
            finally:
                os.close(write_fd)
        self.reply_fd, self.buffer = read_fd, b""

    def stop(self) -> int | None:
        """Kill the judge and everything it started (judge_process.kill: spares and job ranks included), and remove its
        directory. Returns its exit status."""
        status = None
        if self.process is not None:
            status = judge_process.kill(self.process, self.directory)
            self.process = None
        if self.reply_fd is not None:
            os.close(self.reply_fd)
            self.reply_fd = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
        return status
