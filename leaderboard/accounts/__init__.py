"""Submitters, their API tokens and their evaluation quota."""
