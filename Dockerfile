# GPU worker image for pkb-arena: CUDA base, torch, the project, and the Dramatiq worker as entry point.
# One container per GPU host; it owns all the host's GPUs and evaluates one job at a time from its profile's queue.
#
#   docker build -t pkb-arena-worker .
#   docker run --gpus all --ipc=host --network=host --cap-add SYS_ADMIN --cgroupns=host \
#     -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
#     --security-opt apparmor=unconfined --security-opt seccomp=unconfined --restart unless-stopped \
#     -e DATABASE_URL=postgres://pkb:...@db.internal:5432/pkb_arena \
#     -e BROKER_URL=amqp://pkb:...@mq.internal:5672/ \
#     -e DJANGO_SECRET_KEY=... \
#     pkb-arena-worker --queues gpu-h200x8
#
# (deploy/docker-compose.yml runs the whole site this way; deploy/systemd/ has units for bare-metal hosts.)
#
# (Not built in this repository's CI: the development machines have no Docker daemon.)
FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04

ARG TORCH_VERSION=2.11.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=leaderboard.settings \
    PKB_DATA_DIR=/var/lib/pkb-arena \
    dramatiq_queue_prefetch=1 \
    PKB_SANDBOX=required \
    NCCL_NVLS_ENABLE=0 \
    TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
    NVSHMEM_DISABLE_NVLS=1

RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential ninja-build git \
      ca-certificates bubblewrap util-linux tini \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv $VIRTUAL_ENV \
 && pip install --upgrade pip \
 && pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"

WORKDIR /srv/pkb-arena
COPY pyproject.toml README.md manage.py ./
COPY evaluator ./evaluator
COPY problems ./problems
COPY leaderboard ./leaderboard
COPY templates ./templates
COPY static ./static
RUN pip install -e ".[site]" \
 && chmod -R a+rX /opt/venv /srv/pkb-arena \
 && mkdir -p $PKB_DATA_DIR && chmod 700 $PKB_DATA_DIR

# The worker stays root inside the container on purpose: the judge (evaluator/process/sandbox.py) then runs each candidate
# group under a fresh numeric uid with no capabilities and no_new_privs, in its own network and IPC namespaces, and
# each rank in a bubblewrap mount namespace that shows only the system, the interpreter, evaluator/ and problems/
# (needs --cap-add SYS_ADMIN and no AppArmor/seccomp profile forbidding mount), each group in a box of its own: a
# control group (a writable cgroup hierarchy: --cgroupns=host and /sys/fs/cgroup mounted rw, or PKB_CGROUP_PARENT
# naming a delegated subtree) with memory and process limits and a freezer, and a pid namespace whose init reaps
# its orphans. Candidate code can then read neither
# this process's environment (database and broker URLs) nor the site's files, nor reach any socket. PKB_SANDBOX=required:
# a container started without those rights refuses to start its worker instead of running candidates unconfined.
# One process, one thread, prefetch 1 (also forced by leaderboard.jobs.broker.OneMessageAtATime). The worker runs the
# lease reaper beside it, so a host that dies mid-job has its job re-queued by the others within a lease period.
# tini is PID 1: it reaps whatever reaches the top of the container (the boxes' own inits reap the candidates'
# orphans), so no zombie accumulates under the worker.
ENTRYPOINT ["/usr/bin/tini", "--", "dramatiq", "leaderboard.jobs.actors", "--processes", "1", "--threads", "1"]
CMD ["--queues", "gpu-h200x8"]
