"""The contract between the site, the judge and the client, torch-free and standard library only: the result
document and its vocabulary (schema.py), the requests that are the judge's command line (requests.py), the
backends (backends.py), the timing verdict both sides read (verdict.py), the GPU peak rates (hardware.py) and
the feedback as text (feedback_text.py). The site imports nothing else of the judge; the client ships these
alone (client/pyproject.toml)."""
