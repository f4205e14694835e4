# GPU worker image for pkb-arena: CUDA base, torch, the project, and the Dramatiq worker as entry point.
# One container per GPU host; it owns all the host's GPUs and evaluates one job at a time from its profile's queue.
#
#   docker build -t pkb-arena-worker .
#   docker run --gpus all --ipc=host --network=host --cap-add SYS_ADMIN \
#     -e DATABASE_URL=postgres://pkb:...@db.internal:5432/pkb_arena \
#     -e BROKER_URL=amqp://pkb:...@mq.internal:5672/ \
#     -e DJANGO_SECRET_KEY=... \
#     pkb-arena-worker --queues gpu-h200x8
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
    NCCL_NVLS_ENABLE=0 \
    TORCH_SYMM_MEM_DISABLE_MULTICAST=1

RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential ninja-build git \
      ca-certificates \
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

# The worker stays root inside the container on purpose: the judge (evaluator/sandbox.py) then runs each candidate
# group under a fresh numeric uid with no_new_privs, in its own network namespace (needs --cap-add SYS_ADMIN), so
# candidate code can read neither this process's environment (database and broker URLs) nor the reference's files.
# The interpreter and the project are world-readable so those uids can start Python.
# One process, one thread, prefetch 1 (also forced by leaderboard.broker.OneMessageAtATime). The worker runs the
# lease reaper beside it, so a host that dies mid-job has its job re-queued by the others within a lease period.
ENTRYPOINT ["dramatiq", "leaderboard.actors", "--processes", "1", "--threads", "1"]
CMD ["--queues", "gpu-h200x8"]
