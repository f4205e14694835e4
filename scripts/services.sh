#!/usr/bin/env bash
# Start PostgreSQL, Redis and RabbitMQ if they are down (as this machine kind starts them); Chromium and
# systemd-analyze if missing, unless called with --no-installs (the unit lane, `make test-fast`, needs neither).
set -uo pipefail
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if ! up 5432 && command -v pg_ctlcluster >/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if ! up 6379 && command -v redis-server >/dev/null; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
if ! up 5672 && command -v rabbitmq-server >/dev/null; then
  rabbitmq-server -detached || true
fi
installs=1; [ "${1:-}" = "--no-installs" ] && installs=0
if [ "$installs" = 1 ] && [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "chromium could not be installed; browser tests will fail" >&2
fi
# systemd-analyze checks the deploy units (tests/test_deploy_units.py); Debian's systemd package brings it.
if [ "$installs" = 1 ] && ! command -v systemd-analyze >/dev/null && [ "$(id -u)" = 0 ]; then
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null 2>&1 \
    || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null)) \
    || echo "systemd-analyze could not be installed; the deploy unit tests will fail" >&2
fi
# pg_dump, pg_restore, createdb, dropdb: the backup test (tests/site/test_backup.py); Debian's postgresql-client.
if ! command -v pg_restore >/dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client >/dev/null) \
    || echo "postgresql-client could not be installed; the backup test will fail" >&2
fi
for i in $(seq 1 60); do
  up 5432 && up 6379 && up 5672 && exit 0
  sleep 1
done
echo "services: PostgreSQL 5432 / Redis 6379 / RabbitMQ 5672 not all up after 60 s" >&2
exit 0
