"""Settings for the test suite: the real PostgreSQL (PKB_TEST_DATABASE_URL, default the local server) and the
in-memory StubBroker; the job-lifecycle tests swap in a real RabbitMQ or Redis broker themselves."""

import tempfile
from pathlib import Path

from leaderboard.env import database_from_url, env_str
from leaderboard.settings import *  # noqa: F403
from leaderboard.settings import BASE_DIR

DATABASES = {
    "default": database_from_url(
        env_str("PKB_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/pkb_arena"), BASE_DIR
    )
}
DATABASES["default"]["CONN_MAX_AGE"] = 0
DATABASES["default"]["TEST"] = {"NAME": env_str("PKB_TEST_DATABASE_NAME", "test_pkb_arena")}
SECRET_KEY = "tests-only-not-secret"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DRAMATIQ_BROKER = {
    "BROKER": "dramatiq.brokers.stub.StubBroker",
    "OPTIONS": {},
    "MIDDLEWARE": ["django_dramatiq.middleware.DbConnectionsMiddleware", "leaderboard.jobs.broker.OneMessageAtATime"],
}
PKB_WORK_DIR = Path(tempfile.gettempdir()) / "pkb-arena-test-work"
PKB_OPEN_SIGNUP = True
LOGGING = {"version": 1, "disable_existing_loggers": False}
# Plain static storage: Django's test client renders pages without a collectstatic run (the browser tests start the
# embedded server, which collects, so the compressed manifest storage is exercised there).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
WHITENOISE_AUTOREFRESH = True  # no collected STATIC_ROOT to scan at start-up
WHITENOISE_USE_FINDERS = True
