"""The judge's process plumbing: starting, confining, pausing and reaping rank processes.

group.py: a group of rank processes and its command protocol; launch.py: starting one rank; sandbox.py,
confine.py, bwrap.py: the candidate's uid, namespaces, limits and filesystem view; processes.py: reaping a uid's
processes and files; warm.py: warm spares; builds.py: the build cache of a candidate's compiled extensions.
"""
