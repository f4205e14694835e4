"""What the site knows of its workers: one row per worker process, written at its boot (its gates, or the refusal
that stopped it) and renewed by its heartbeat while it runs (leaderboard/ops/heartbeat.py)."""

from __future__ import annotations

from django.db import models


class WorkerRecord(models.Model):
    RUNNING, REFUSED, STOPPED = "running", "refused", "stopped"
    STATES = [(RUNNING, "running"), (REFUSED, "refused at boot"), (STOPPED, "stopped")]

    worker = models.CharField(max_length=200, unique=True, help_text="the id its leases carry (host:pid:nonce)")
    hostname = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    gpus = models.CharField(max_length=100, blank=True, help_text="PKB_GPUS: empty when not pinned")
    queues = models.JSONField(default=list)
    profiles = models.JSONField(default=list, help_text="the hardware profiles its queues serve")
    state = models.CharField(max_length=8, choices=STATES, default=RUNNING)
    gates = models.JSONField(default=list, help_text="[{gate, ok, detail}] as decided at boot")
    refusal = models.TextField(blank=True, help_text="why it refused to start")
    host = models.JSONField(default=dict, blank=True, help_text="the host record taken at boot (GPUs, versions)")
    booted_at = models.DateTimeField()
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-booted_at"]
        indexes = [models.Index(fields=["state", "last_heartbeat_at"], name="worker_state_heartbeat")]

    def __str__(self) -> str:
        return f"worker {self.worker} ({self.state})"
