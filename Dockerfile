# pkb-arena's images, one multi-stage file (docs/site.md, "Production layout"):
#
#   docker build --target web    -t pkb-arena-web .      the site: gunicorn, migrations, the reaper; no CUDA base
#   docker build --target worker -t pkb-arena-worker .   a GPU host's judging, build and feedback workers
#
# Both ship the same project files, copied once into the `source` stage below; tests/test_image_files.py builds a
# tree from its COPY lines and .dockerignore and runs the workers' and the judge's imports and `python -m
# evaluator.cli --help` there. deploy/docker-compose.yml runs the whole site from these two targets; deploy/systemd/
# has the same processes as units for bare-metal hosts (tests/test_layout_parity.py keeps the two alike).
#
#   docker run --gpus all --ipc=host --network=host --cap-add SYS_ADMIN --cgroupns=host \
#     -v /sys/fs/cgroup:/sys/fs/cgroup:rw -v /run/pkb-arena:/run/pkb-arena \
#     --security-opt apparmor=unconfined --security-opt seccomp=unconfined --restart unless-stopped \
#     -e DATABASE_URL=postgres://pkb:...@db.internal:5432/pkb_arena \
#     -e BROKER_URL=amqp://pkb:...@mq.internal:5672/ \
#     -e DJANGO_SECRET_KEY=... -e PKB_GPUS=0-7 \
#     pkb-arena-worker leaderboard.jobs.actors leaderboard.feedback.worker \
#       --queues gpu-h200x8 feedback-gpu-h200x8 --processes 1 --threads 1
#
# (Not built in this repository's CI: the development machines have no Docker daemon.)
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

# --- the project's files, the one list both targets ship ------------------------------------------------------------
FROM scratch AS source
COPY pyproject.toml README.md manage.py /src/
COPY evaluator /src/evaluator
COPY problems /src/problems
COPY leaderboard /src/leaderboard
COPY pkb_client /src/pkb_client
COPY templates /src/templates
COPY static /src/static

# --- web: gunicorn on a slim Python, torch's CPU build (load_problems reads the problems' references) ---------------
FROM ${PYTHON_IMAGE} AS web

ARG TORCH_VERSION=2.11.0
ARG TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=leaderboard.settings \
    PKB_DATA_DIR=/var/lib/pkb-arena \
    PKB_SERVE_STATIC=1

RUN python -m venv $VIRTUAL_ENV \
 && pip install --upgrade pip \
 && pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_CPU_INDEX}"

WORKDIR /srv/pkb-arena
COPY --from=source /src/ /srv/pkb-arena/
RUN pip install -e ".[site]" \
 && useradd --system --home /var/lib/pkb-arena pkb \
 && mkdir -p $PKB_DATA_DIR && chown pkb $PKB_DATA_DIR && chmod 700 $PKB_DATA_DIR \
 && chmod -R a+rX /opt/venv /srv/pkb-arena
USER pkb
EXPOSE 8000
# The site's own process: no candidate code ever runs here (the workers judge it), so it runs as an unprivileged user.
CMD ["gunicorn", "leaderboard.wsgi", "-w", "4", "-b", "0.0.0.0:8000"]

# --- worker: CUDA base, torch, bubblewrap; judging, build and feedback workers ---------------------------------------
FROM ${CUDA_IMAGE} AS worker

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
COPY --from=source /src/ /srv/pkb-arena/
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
# orphans), so no zombie accumulates under the worker. The arguments name the entry modules and queues: a judging
# worker `leaderboard.jobs.actors leaderboard.feedback.worker --queues gpu-h200x8 feedback-gpu-h200x8 ...`, a build
# worker `leaderboard.jobs.build_stage --queues build-gpu-h200x8 --processes 1 --threads 4` (deploy/docker-compose.yml).
EXPOSE 9191
ENTRYPOINT ["/usr/bin/tini", "--", "dramatiq"]
CMD ["leaderboard.jobs.actors", "leaderboard.feedback.worker", "--queues", "gpu-h200x8", "feedback-gpu-h200x8", "--processes", "1", "--threads", "1"]
