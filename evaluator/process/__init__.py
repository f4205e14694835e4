"""The judge's process plumbing: starting, confining, pausing and reaping rank processes.

group.py: a group of W rank processes (start, pause and resume, teardown, logs); protocol.py: the commands and replies
between the judge and a group (the root cause of a failure); environment.py: what every rank gets (the scrubbed
environment, multicast off, death with the judge); sandbox.py and bwrap.py: what confines a candidate's ranks (own
uid, namespaces, limits, the filesystem view); processes.py: signalling and reaping a uid's processes and files;
warm.py: warm spares; builds.py: the cache of a candidate's compiled extensions.
"""
