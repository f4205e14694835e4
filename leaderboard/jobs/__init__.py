"""Leased work: evaluation jobs and their results, the lease engine, the runner and the dramatiq actors."""
