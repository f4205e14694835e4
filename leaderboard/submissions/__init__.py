"""Uploads (the parser), submissions and their candidate files; owner and staff changes."""
