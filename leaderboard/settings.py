"""One settings file; every value from the environment, parsed strictly (see leaderboard/env.py).

Embedded default (``make serve``): SQLite under var/, dramatiq's in-memory StubBroker consumed by a worker thread
inside ``manage.py runserver_with_worker``, the CPU gloo profile. Production: DATABASE_URL=postgres://...,
BROKER_URL=amqp://... (or redis://...), DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS; see docs/site.md.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

from evaluator.contract.schema import sandbox_mode
from leaderboard.env import broker_from_url, database_from_url, env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("PKB_DATA_DIR", str(BASE_DIR / "var")))


def _secret_key() -> str:
    key = env_str("DJANGO_SECRET_KEY")
    if key:
        return key
    # Embedded mode: a key generated once and kept beside the SQLite database.
    path = DATA_DIR / "secret_key"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
SECURE_COOKIES = env_bool("DJANGO_SECURE_COOKIES", False)
SESSION_COOKIE_SECURE = SECURE_COOKIES
CSRF_COOKIE_SECURE = SECURE_COOKIES
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Behind HTTPS (DJANGO_SECURE_COOKIES=1) browsers are told to keep to it.
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 365 * 86400 if SECURE_COOKIES else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", SECURE_COOKIES)
# Preloading commits the domain to HTTPS in browsers' own lists (slow to undo): the operator's explicit choice.
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", False)
# Plain HTTP is redirected to HTTPS, except the probes a load balancer and Prometheus make inside the network.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SSL_REDIRECT", SECURE_COOKIES)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
# Content-Security-Policy (django-csp): scripts only from this site's own files, never inline, so a value that
# escaped escaping still cannot run. Page data travels in json_script elements (type application/json, not run);
# plotly.js sets inline styles on the figures it draws, hence style-src 'unsafe-inline' (styles cannot run code).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from /static/ (no CDN)
    "django_dramatiq",
    "axes",  # login failures counted and locked out (docs/site.md, Throttling)
    "leaderboard",  # the project: the tables' migration history, seed_demo and load_problems
    "leaderboard.catalogue",
    "leaderboard.accounts",
    "leaderboard.submissions",
    "leaderboard.jobs",
    "leaderboard.scoring",
    "leaderboard.feedback",  # feedback sessions and runs, profile runs
    "leaderboard.ops",  # worker records, /metrics, /readyz, the Workers page (docs/site.md, Production layout)
    "leaderboard.pages",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # /static/: compressed, hashed names cached for a year
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a lockout into leaderboard.accounts.throttle's 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "leaderboard.urls"
WSGI_APPLICATION = "leaderboard.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "leaderboard.pages.views.site_context",
            ]
        },
    }
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL", "sqlite:///var/pkb-arena.sqlite3"), BASE_DIR)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# django-axes' backend first: a locked-out client is refused before its password is even checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "account"
LOGOUT_REDIRECT_URL = "home"
# Password-reset mail (the only mail the site sends): printed on the console unless a backend is configured, e.g.
# django.core.mail.backends.smtp.EmailBackend with Django's EMAIL_HOST / EMAIL_PORT settings.
EMAIL_BACKEND = env_str("DJANGO_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 25, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "pkb-arena <noreply@localhost>")

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "leaderboard.staticfiles.PlotlyFinder",  # plotly.min.js from the plotly package, as vendor/plotly.min.js
]
STATIC_ROOT = DATA_DIR / "static"
# Static files go through collectstatic into STATIC_ROOT: names carry a content hash (cached for a year by browsers)
# and a gzip copy sits beside each, which WhiteNoise's middleware serves to browsers that accept them.
# `manage.py runserver_with_worker` (make serve, the browser tests) collects before it serves; a production host
# runs `manage.py collectstatic` on deploy. The test settings keep plain storage (no collection needed).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_MAX_AGE = 3600  # unhashed names (favicon.ico at the root); hashed ones get a year
# The embedded server serves /static/ itself (WhiteNoise); behind nginx set PKB_SERVE_STATIC=0 and let nginx serve
# STATIC_ROOT (runserver_with_worker then does not collect).
PKB_SERVE_STATIC = env_bool("PKB_SERVE_STATIC", True)

# --- uploads ------------------------------------------------------------------------------------------------------
PKB_MAX_UPLOAD_BYTES = env_int("PKB_MAX_UPLOAD_BYTES", 16 * 1024 * 1024, minimum=1024)
PKB_MAX_FILE_BYTES = env_int("PKB_MAX_FILE_BYTES", 512 * 1024, minimum=1024)
PKB_MAX_ATTEMPTS = env_int("PKB_MAX_ATTEMPTS", 16, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = PKB_MAX_UPLOAD_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = PKB_MAX_UPLOAD_BYTES + 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = 87 * PKB_MAX_ATTEMPTS + 16
DATA_UPLOAD_MAX_NUMBER_FIELDS = 200
FILE_UPLOAD_HANDLERS = [
    # Refuses bodies over the upload limit, counted as read.
    "leaderboard.submissions.upload_handlers.BoundedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
PKB_OPEN_SIGNUP = env_bool("PKB_OPEN_SIGNUP", True)

# --- throttling (leaderboard/accounts/throttle.py; docs/site.md, Throttling) ----------------------------------------
# Nobody may guess passwords or tokens, or create accounts, at the rate a script can: without this, 60 wrong
# passwords were answered in 37 s and the right one then logged in. These are the production values and the tests
# run with them (tests/site/security/test_throttling.py).
# Proxies in front of the site whose X-Forwarded-For is believed (nginx: 1); 0 reads REMOTE_ADDR only. A production
# web process refuses to start until it is stated (leaderboard/wsgi.py): no default is right for both layouts.
PKB_TRUSTED_PROXIES = env_int("PKB_TRUSTED_PROXIES", 0, minimum=0)
# A request is HTTPS when the trusted proxy says so (nginx: proxy_set_header X-Forwarded-Proto $scheme, which replaces
# whatever the client sent); with no proxy stated, only the connection itself counts.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if PKB_TRUSTED_PROXIES else None
PKB_TRUSTED_PROXIES_STATED = env_str("PKB_TRUSTED_PROXIES", "").strip() != ""
AXES_FAILURE_LIMIT = env_int("PKB_LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("PKB_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
# Counted per client address, whatever usernames it tries: one address can neither guess one account's password
# nor spray one password over many accounts. (Per username alone, anyone could lock any user out.)
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_RESET_ON_SUCCESS = True  # a successful log-in clears the address's count
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # the retry time the page states holds
AXES_CLIENT_IP_CALLABLE = "leaderboard.accounts.throttle.client_ip"
AXES_LOCKOUT_CALLABLE = "leaderboard.accounts.throttle.lockout_response"
AXES_DISABLE_ACCESS_LOG = True  # successful log-ins are not the site's to keep
AXES_VERBOSE = False
PKB_SIGNUP_LIMIT = env_int("PKB_SIGNUP_LIMIT", 5, minimum=1)  # sign-up form posts per address per window
PKB_SIGNUP_WINDOW_MINUTES = env_int("PKB_SIGNUP_WINDOW_MINUTES", 60, minimum=1)
PKB_TOKEN_FAILURE_LIMIT = env_int("PKB_TOKEN_FAILURE_LIMIT", 30, minimum=1)  # refused API tokens per address
PKB_TOKEN_WINDOW_MINUTES = env_int("PKB_TOKEN_WINDOW_MINUTES", 10, minimum=1)

# --- quotas: units are evaluations (one candidate file on one hardware profile) -------------------------------------
PKB_QUOTA_DAILY = env_int("PKB_QUOTA_DAILY", 1000, minimum=1)  # rolling 24 hours
PKB_QUOTA_TOTAL = env_int("PKB_QUOTA_TOTAL", 20000, minimum=1)
PKB_QUOTA_CONCURRENT = env_int("PKB_QUOTA_CONCURRENT", 600, minimum=1)  # queued + running at once

# --- jobs -----------------------------------------------------------------------------------------------------------
PKB_DEFAULT_PROFILE = env_str("PKB_DEFAULT_PROFILE", "cpu-gloo")
PKB_LEASE_SECONDS = env_int("PKB_LEASE_SECONDS", 120, minimum=2)
PKB_HEARTBEAT_SECONDS = env_int("PKB_HEARTBEAT_SECONDS", 20, minimum=1)
PKB_JOB_MAX_ATTEMPTS = env_int("PKB_JOB_MAX_ATTEMPTS", 3, minimum=1)
PKB_JOB_TIMEOUT_SECONDS = env_int("PKB_JOB_TIMEOUT_SECONDS", 3 * 3600, minimum=10)
PKB_REQUEUE_QUEUED_AFTER_SECONDS = env_int("PKB_REQUEUE_QUEUED_AFTER_SECONDS", 600, minimum=1)
PKB_REAPER_INTERVAL_SECONDS = env_int("PKB_REAPER_INTERVAL_SECONDS", 30, minimum=1)
# Hidden checks for jobs on ranked profiles (docs/threat-model.md, "hard-coded W or shapes"): the judge adds a trial
# at a shape it draws (--hidden-shape) and a correctness-only run at another world size the worker picks at random
# (--hidden-world-size). PKB_HIDDEN_CHECKS=0 switches both off (an extra trial and an extra launch per job).
PKB_HIDDEN_CHECKS = env_bool("PKB_HIDDEN_CHECKS", True)
# Warm spares (evaluator/process/warm.py): with N > 0 each worker thread keeps one long-lived judge (evaluator.serve)
# whose pool holds N pairs of rank groups started ahead of the jobs; every job still gets processes of its own. 0: a
# fresh judge per job. Worth it on GPU hosts, where start-up is most of a job (docs/calibration.md, Throughput).
PKB_WARM_SPARES = env_int("PKB_WARM_SPARES", 0, minimum=0)
# The build stage (leaderboard/jobs/build_stage.py; docs/site.md, "GPU hosts: the build stage"): a file that compiles
# an extension is built on CPU cores before its job takes the GPUs. PKB_BUILD_STAGE: cuda (GPU profiles), all (CPU
# profiles too), off. PKB_BUILD_WORKERS builds at once per build worker, PKB_BUILD_MAX_JOBS compile processes each:
# together at most about half the host's cores, so the judged jobs' ranks are never starved (the stage also runs at
# a lower CPU priority). PKB_BUILD_ARCH: TORCH_CUDA_ARCH_LIST of the builds and of this worker's judged jobs alike
# (part of every build's fingerprint); empty: both inherit the worker's environment (compile_cuda_extension: 9.0).
PKB_BUILD_STAGE = env_str("PKB_BUILD_STAGE", "cuda").lower()
if PKB_BUILD_STAGE not in ("cuda", "all", "off"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"PKB_BUILD_STAGE must be cuda, all or off, not {PKB_BUILD_STAGE!r}")
PKB_BUILD_WORKERS = env_int("PKB_BUILD_WORKERS", max(1, (os.cpu_count() or 1) // 4), minimum=1)
PKB_BUILD_MAX_JOBS = env_int("PKB_BUILD_MAX_JOBS", 2, minimum=1)
PKB_BUILD_ARCH = env_str("PKB_BUILD_ARCH", "")
PKB_BUILD_TIMEOUT_SECONDS = env_int("PKB_BUILD_TIMEOUT_SECONDS", 1800, minimum=10)
# Where the worker keeps candidate files and judge output while a job runs (one locked directory per worker process:
# leaderboard/jobs/workspace.py).
PKB_WORK_DIR = Path(env_str("PKB_WORK_DIR", str(DATA_DIR / "work")))
# A worker's GPUs ("0-3", "0,2"; empty: not pinned): CUDA_VISIBLE_DEVICES of its judges, each GPU locked under
# PKB_GPU_LOCK_DIR while it runs so no two workers of a host share one (leaderboard/jobs/gpus.py). Workers in separate
# containers must share that directory for their locks to meet.
PKB_GPUS = env_str("PKB_GPUS", "")
PKB_GPU_LOCK_DIR = Path(env_str("PKB_GPU_LOCK_DIR", "/run/pkb-arena/gpus"))
# The candidate sandbox (evaluator/process/sandbox.py). Every job a site runs, ranked or not, jobs and feedback runs,
# requires the whole sandbox: a worker on a host that cannot give every layer refuses to start, and is never
# re-decided per job. Only "off" (an operator's explicit choice: logged loudly at start, every result flagged
# unsandboxed and never ranked) runs strangers' code without it.
PKB_SANDBOX = sandbox_mode(env_str("PKB_SANDBOX", ""), default="required")  # the judge's own reading of it
PKB_SANDBOX_OFF = PKB_SANDBOX == "off"

# --- broker (django_dramatiq) -------------------------------------------------------------------------------------
BROKER_URL = env_str("BROKER_URL", "stub://")
_broker_class, _broker_options = broker_from_url(BROKER_URL)
DRAMATIQ_BROKER = {
    "BROKER": _broker_class,
    "OPTIONS": _broker_options,
    "MIDDLEWARE": [
        "dramatiq.middleware.ShutdownNotifications",
        "django_dramatiq.middleware.DbConnectionsMiddleware",
        "leaderboard.jobs.broker.OneMessageAtATime",
        # The worker's record, heartbeat and own metrics (its hooks: workers only).
        "leaderboard.ops.heartbeat.WorkerOps",
    ],
}

# --- operating it (leaderboard/ops/; docs/site.md, "Production layout": metrics, health, the Workers page) --------
# /metrics answers a request bearing PKB_METRICS_TOKEN ("Authorization: Bearer <token>") or coming from an address in
# PKB_METRICS_ALLOWED_IPS (addresses or networks, e.g. 10.0.0.0/8; read as leaderboard/accounts/throttle.client_ip
# does, behind PKB_TRUSTED_PROXIES); with neither set, nobody.
PKB_METRICS_TOKEN = env_str("PKB_METRICS_TOKEN", "")
PKB_METRICS_ALLOWED_IPS = env_list("PKB_METRICS_ALLOWED_IPS", [])
try:
    import ipaddress

    PKB_METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network(part, strict=False) for part in PKB_METRICS_ALLOWED_IPS]
except ValueError as exc:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"PKB_METRICS_ALLOWED_IPS: {exc}") from exc
# A worker's record is renewed this often; the Workers page calls one silent for three periods lost.
PKB_WORKER_HEARTBEAT_SECONDS = env_int("PKB_WORKER_HEARTBEAT_SECONDS", 15, minimum=1)
# A worker's own Prometheus metrics (leaderboard/ops/worker_metrics.py): a port per worker on a host; 0: not served.
PKB_WORKER_METRICS_PORT = env_int("PKB_WORKER_METRICS_PORT", 0, minimum=0)
PKB_WORKER_METRICS_ADDR = env_str("PKB_WORKER_METRICS_ADDR", "127.0.0.1")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.api.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "leaderboard.api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "leaderboard.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "pkb-arena API",
    "DESCRIPTION": "Submissions, evaluation jobs and leaderboards of pkb-arena.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every operation's refusals (400/401/403/404/405/406/413/415/429, api/errors.py's shape) declared in the schema.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "leaderboard.api.schema_hooks.declare_refusals",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "leaderboard": {"handlers": ["console"], "level": env_str("PKB_LOG_LEVEL", "INFO")},
        "dramatiq": {"handlers": ["console"], "level": "WARNING"},
        "pika": {"handlers": ["console"], "level": "WARNING"},
        # Django logs every 5xx (with its traceback) to django.request and refused hostile requests (bad Host,
        # too many fields) to django.security; with DEBUG off its default config only mails admins, so nothing
        # reached the operator's log.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        "django.security": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}
