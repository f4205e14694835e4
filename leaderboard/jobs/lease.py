"""The one lease engine for every row a worker leases (LeasedWork: evaluation jobs and feedback runs).

The row is the truth; a broker message carries only its id and wakes a worker. A worker claims a queued row by
compare-and-swap (UPDATE ... WHERE status = 'queued'), renews the lease while it works, and only the lease holder
may finish it. An attempt the platform failed (the judge crashed, the worker died) is never the candidate's fault:
the row goes back to the queue until its attempts are spent, then fails. The reaper re-queues rows whose lease
expired and re-sends the messages a broker lost. What differs between jobs and feedback runs (what a finished row
stores, what a failed one refunds) stays with their services; the lifecycle is written once, here.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.catalogue.models import HardwareProfile
from leaderboard.jobs import broker

log = logging.getLogger("leaderboard.jobs.lease")
REAP_BATCH = 1000
_REAPERS: list[tuple[Lease, object]] = []  # every leased model with its reaper (register)


def register(lease: Lease, reap) -> None:
    """Make ``reap()`` (the services' reaper of ``lease``'s rows) part of ``release_leases_of``. Each app registers
    at start-up (AppConfig.ready), so the jobs app never imports the apps whose rows it leases."""
    if all(known is not lease for known, _ in _REAPERS):
        _REAPERS.append((lease, reap))


def release_leases_of(worker: str) -> int:
    """End every lease ``worker`` holds (it is known dead) and re-queue its rows as the reapers would once the leases
    expired. Returns how many it held."""
    past = timezone.now() - timedelta(seconds=1)
    held = sum(
        lease.model.objects.filter(status=lease.model.RUNNING, lease_owner=worker).update(lease_expires_at=past)
        for lease, _ in _REAPERS
    )
    if held:
        for _, reap in _REAPERS:
            reap()
    return held


class Lease:
    """The lifecycle of one LeasedWork model. ``actor``: the dramatiq actor a message for a row goes to;
    ``queue_of(profile)``: the queue of a profile's rows; ``what``: the row's name in logs and messages."""

    def __init__(self, model, actor: str, queue_of, what: str, claim_related=(), logger: logging.Logger = log):
        self.model, self.actor, self.queue_of, self.what = model, actor, queue_of, what
        self.claim_related, self.log = claim_related, logger

    # --- a worker's side -----------------------------------------------------------------------------------------

    def claim(self, pk: int, worker: str, now=None):
        """Take a queued row whose attempts are not spent; None if another worker has it or it is finished. A
        running row whose lease expired is first re-queued by the reaper, which records the lost attempt."""
        now = now or timezone.now()
        taken = self.model.objects.filter(pk=pk, status=self.model.QUEUED, attempts__lt=F("max_attempts")).update(
            status=self.model.RUNNING,
            lease_owner=worker,
            heartbeat_at=now,
            started_at=now,
            lease_expires_at=now + timedelta(seconds=settings.PKB_LEASE_SECONDS),
            attempts=F("attempts") + 1,
        )
        if taken != 1:
            return None
        return self.model.objects.select_related(*self.claim_related).get(pk=pk)

    def heartbeat(self, pk: int, worker: str) -> bool:
        """Extend the lease; False when it is no longer ours (the worker must stop and write nothing)."""
        now = timezone.now()
        return (
            self.model.objects.filter(pk=pk, status=self.model.RUNNING, lease_owner=worker).update(
                heartbeat_at=now, lease_expires_at=now + timedelta(seconds=settings.PKB_LEASE_SECONDS)
            )
            == 1
        )

    def held(self, pk: int, worker: str, related=()):
        """The row, locked for this transaction, if ``worker`` still holds its lease; else None (logged): a worker
        whose lease was taken over writes nothing."""
        row = self.model.objects.select_for_update().select_related(*related).filter(pk=pk).first()
        if row is None or row.status != self.model.RUNNING or row.lease_owner != worker:
            self.log.warning("%s %s: result from %s dropped (lease not held)", self.what, pk, worker)
            return None
        return row

    # --- ending an attempt -----------------------------------------------------------------------------------------

    def done(self, row, **fields) -> None:
        self._end(row, self.model.DONE, last_error="", finished_at=timezone.now(), **fields)

    def failed(self, row, message: str, **fields) -> None:
        """The row ends without a verdict (refused arguments, retries spent)."""
        self._end(row, self.model.FAILED, last_error=message[:2000], finished_at=timezone.now(), **fields)

    def retry_or_fail(self, row, message: str, on_fail=None, **fields) -> str:
        """The platform failed this attempt: back to the queue (the message is re-sent when the transaction
        commits) while attempts remain, else failed with ``on_fail`` fields too. Returns "requeued" or "failed"."""
        if row.attempts < row.max_attempts:
            self._end(row, self.model.QUEUED, last_error=message[:2000], enqueued_at=timezone.now(), **fields)
            self.send_on_commit(row.pk, self.queue_of(row.profile))
            return "requeued"
        self.failed(row, message, **fields, **(on_fail or {}))
        return "failed"

    def _end(self, row, status: str, **fields) -> None:
        self.model.objects.filter(pk=row.pk).update(status=status, lease_owner="", lease_expires_at=None, **fields)

    # --- messages ------------------------------------------------------------------------------------------------

    def send_on_commit(self, pk: int, queue: str) -> None:
        """The broker message leaves when the transaction that queued the row commits."""
        transaction.on_commit(lambda: self.send_quietly(pk, queue))

    def send_quietly(self, pk: int, queue: str) -> None:
        """Send, logging a failure instead of raising it: a lost message is repaired by the reaper, so a broker
        outage must not fail the request that queued the row."""
        try:
            broker.send(self.actor, pk, queue)
        except Exception:
            self.log.exception("could not send %s %s to queue %s; the reaper will re-send it", self.what, pk, queue)

    # --- the reaper ------------------------------------------------------------------------------------------------

    def reap(self, on_expired, now=None, broker_depth=None, resend_all: bool = False) -> dict:
        """Hand each row whose lease expired (its worker is gone) to ``on_expired(row, message)``, which records the
        lost attempt and returns "requeued" or "failed"; then re-send the messages a broker lost."""
        now = now or timezone.now()
        counts = {"requeued": 0, "failed": 0, "resent": 0}
        expired = list(
            self.model.objects.filter(status=self.model.RUNNING, lease_expires_at__lt=now).values_list("pk", flat=True)[
                :REAP_BATCH
            ]
        )
        for pk in expired:
            with transaction.atomic():
                row = (
                    self.model.objects.select_for_update(skip_locked=True)
                    .select_related("profile")
                    .filter(pk=pk, status=self.model.RUNNING, lease_expires_at__lt=now)
                    .first()
                )
                if row is None:
                    continue
                message = (
                    f"worker {row.lease_owner or '?'} lost: its lease expired at {row.lease_expires_at:%H:%M:%S} UTC"
                )
                counts[on_expired(row, message)] += 1
        counts["resent"] = self.resend_lost(now, broker_depth, resend_all)
        if any(counts.values()):
            self.log.info("reaper (%s): %s", self.what, counts)
        return counts

    def resend_lost(self, now, broker_depth=None, resend_all: bool = False) -> int:
        """Re-send the oldest stale queued rows of each profile's queue, as many as the broker holds fewer messages
        than rows. A row is claimed for re-sending by moving its ``enqueued_at``, so two reapers never send it twice."""
        depth_of = broker_depth or broker.queue_depth
        stale_before = now if resend_all else now - timedelta(seconds=settings.PKB_REQUEUE_QUEUED_AFTER_SECONDS)
        resent = 0
        for profile in HardwareProfile.objects.all():
            queued = self.model.objects.filter(profile=profile, status=self.model.QUEUED)
            waiting = queued.count()
            if not waiting:
                continue
            queue = self.queue_of(profile)
            depth = depth_of(queue)
            missing = waiting - depth if depth is not None else waiting
            if missing <= 0:
                continue
            stale = list(
                queued.filter(enqueued_at__lte=stale_before)
                .order_by("enqueued_at")
                .values_list("pk", flat=True)[:missing]
            )
            for pk in stale:
                if self.model.objects.filter(pk=pk, status=self.model.QUEUED).update(enqueued_at=now) == 1:
                    self.send_quietly(pk, queue)
                    resent += 1
        return resent
