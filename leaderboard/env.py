"""Strict parsing of the environment: every setting comes from a variable, a bad value stops start-up.

A typo such as ``DJANGO_DEBUG=ture`` or ``PKB_QUOTA_DAILY=10k`` raises ImproperlyConfigured naming the variable,
instead of silently falling back to a default.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: expected one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, minimum: int | None = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value}: must be >= {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [part.strip() for part in raw.split(",") if part.strip()]


def database_from_url(url: str, base_dir) -> dict:
    """A Django DATABASES entry from ``sqlite:///path`` or ``postgres://user:pass@host:port/name?options``."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        # sqlite:///var/db.sqlite3 is relative to the project; sqlite:////abs/path is absolute.
        path = unquote(parts.path)
        if path.startswith("//"):
            path = path[1:]
        elif path.startswith("/"):
            path = str(base_dir / path.lstrip("/"))
        if not path:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r}: sqlite URL needs a path, e.g. sqlite:///var/db.sqlite3")
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            # The embedded worker writes from its own thread while the web thread reads: WAL + waiting on locks,
            # and IMMEDIATE transactions so a reader never has to upgrade to a writer mid-transaction.
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    if scheme in ("postgres", "postgresql", "pgsql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r}: PostgreSQL URL needs a database name")
        options = dict(parse_qsl(parts.query, strict_parsing=False))
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r}: bad port") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(port or ""),
            "CONN_MAX_AGE": int(options.pop("conn_max_age", "60")),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL={url!r}: unsupported scheme {scheme!r}; use sqlite:///path or postgres://user@host:port/name"
    )


def broker_from_url(url: str) -> tuple[str, dict]:
    """The dramatiq broker class path and options from ``stub://``, ``amqp://...`` or ``redis://...``."""
    scheme = urlsplit(url).scheme.lower() if url else "stub"
    if scheme == "stub":
        return "dramatiq.brokers.stub.StubBroker", {}
    if scheme in ("amqp", "amqps"):
        return "dramatiq.brokers.rabbitmq.RabbitmqBroker", {"url": url}
    if scheme in ("redis", "rediss"):
        return "dramatiq.brokers.redis.RedisBroker", {"url": url}
    raise ImproperlyConfigured(f"BROKER_URL={url!r}: unsupported scheme {scheme!r}; use amqp://, redis:// or stub://")
