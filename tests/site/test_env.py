"""Strict environment parsing (leaderboard/env.py)."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from leaderboard import env


def test_bool_parsing_is_strict(monkeypatch):
    monkeypatch.setenv("X_FLAG", "yes")
    assert env.env_bool("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "ture")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env.env_bool("X_FLAG", False)


def test_int_parsing_is_strict(monkeypatch):
    monkeypatch.setenv("X_NUM", "10k")
    with pytest.raises(ImproperlyConfigured, match="X_NUM"):
        env.env_int("X_NUM", 1)
    monkeypatch.setenv("X_NUM", "-3")
    with pytest.raises(ImproperlyConfigured, match=">= 0"):
        env.env_int("X_NUM", 1)
    monkeypatch.delenv("X_NUM")
    assert env.env_int("X_NUM", 7) == 7


def test_database_urls(tmp_path):
    pg = env.database_from_url("postgres://u:p%40ss@db.example:6543/arena?sslmode=require", tmp_path)
    assert (pg["ENGINE"], pg["NAME"], pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"]) == (
        "django.db.backends.postgresql",
        "arena",
        "u",
        "p@ss",
        "db.example",
        "6543",
    )
    assert pg["OPTIONS"] == {"sslmode": "require"}
    assert env.database_from_url("sqlite:///var/x.sqlite3", tmp_path)["NAME"] == str(tmp_path / "var/x.sqlite3")
    assert env.database_from_url("sqlite:////abs/x.sqlite3", tmp_path)["NAME"] == "/abs/x.sqlite3"
    for bad in ("mysql://x/y", "postgres://host/", "sqlite://"):
        with pytest.raises(ImproperlyConfigured):
            env.database_from_url(bad, tmp_path)


def test_broker_urls():
    assert env.broker_from_url("")[0].endswith("StubBroker")
    assert env.broker_from_url("amqp://guest:guest@127.0.0.1:5672/") == (
        "dramatiq.brokers.rabbitmq.RabbitmqBroker",
        {"url": "amqp://guest:guest@127.0.0.1:5672/"},
    )
    assert env.broker_from_url("redis://127.0.0.1:6379/0")[0].endswith("RedisBroker")
    with pytest.raises(ImproperlyConfigured, match="BROKER_URL"):
        env.broker_from_url("kafka://x")
