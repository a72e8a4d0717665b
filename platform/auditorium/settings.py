"""Auditorium settings: one module, configured from the environment.

Embedded defaults need no service (SQLite, a channel layer in an SQLite file,
Celery running tasks in-process or over kombu's SQLite transport). Setting DATABASE_URL / REDIS_URL switches to
PostgreSQL, Redis-backed Celery and channels_redis without code changes.
DEBUG is off unless DJANGO_DEBUG=true (`./auditorium demo` and the tests set it).
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use true/false, 1/0, yes/no or on/off.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if minimum is not None and not value >= minimum:
        raise ImproperlyConfigured(f"{name}={raw} must be at least {minimum}.")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {', '.join(choices)}.")
    return value


def env_rate(name: str, default: str) -> str:
    """A rate limit written "count/seconds", e.g. 20/60; a count of 0 turns the limit off."""
    value = env_str(name, default).strip()
    if not re.fullmatch(r"\d+/[1-9]\d*", value):
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate; write count/seconds, e.g. 20/60.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_secret(name: str, default: str | None = None) -> str | None:
    """A secret from NAME, or from the file named by NAME_FILE (Docker/K8s secrets)."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc}") from None
    return os.environ.get(name, default)


def env_check_prefix(prefix: str, known: set[str]) -> None:
    """A variable under prefix that no setting reads is a typo: refuse to start and name the close match."""
    unknown = sorted(name for name in os.environ if name.startswith(prefix) and name not in known)
    if not unknown:
        return
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        problems.append(f"{name} (did you mean {close[0]}?)" if close else name)
    raise ImproperlyConfigured(
        f"Unknown {prefix}* variable in the environment: {'; '.join(problems)}. No setting reads it; the known ones are {', '.join(sorted(known))}."
    )


def development_secret(path: Path) -> str:
    """A random key kept in the data folder, for debug mode only: stable across restarts and processes, never shared."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    draft.write_text(secrets.token_urlsafe(50))
    draft.chmod(0o600)
    try:
        os.link(draft, path)  # atomic: when two processes start at once, the first key wins
    except FileExistsError:
        pass
    finally:
        draft.unlink()
    return path.read_text().strip()


DEBUG = env_bool("DJANGO_DEBUG", False)
DATA_DIR = Path(env_str("AUDITORIUM_DATA_DIR", str(BASE_DIR / "var")))

_secret = env_secret("DJANGO_SECRET_KEY")
if not _secret:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY (or DJANGO_SECRET_KEY_FILE) must be set when DJANGO_DEBUG is off, which is the default. "
            "For local development set DJANGO_DEBUG=true (./auditorium demo does)."
        )
    _secret = development_secret(DATA_DIR / "secret_key")
SECRET_KEY = _secret

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "annotation",
    "annotation.ratings",
    "scoring",
    "scoring.benchmarks",
    "arena",
]

# People's answers: never deleted through the admin, directly or by a cascade (common/admin.py).
ANSWER_MODELS = ["annotation.Judgment", "ratings.RatingSubmission", "ratings.Rating", "arena.Vote"]
# What the listening check of an answer was computed from: the admin keeps it as it keeps answers (common/admin.py).
EVIDENCE_MODELS = ["annotation.ListeningEvent", "ratings.RatingListeningEvent"]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # A view that cannot get a database connection in time answers 503 with Retry-After, not 500.
    "auditorium.dbpool.PoolTimeoutMiddleware",
    # Early, so refusals made by later middleware (413, CSRF 403) carry the headers too.
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "auditorium.security.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After authentication (staff may upload more), before anything reads the body.
    "common.limits.RequestBodyLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "auditorium.urls"
WSGI_APPLICATION = "auditorium.wsgi.application"
ASGI_APPLICATION = "auditorium.asgi.application"

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
                "annotation.context_processors.roles",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------
from auditorium.dbpool import pool_max_size  # noqa: E402

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    import dj_database_url

    try:
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0, minimum=0))}
    except Exception as exc:  # dj_database_url raises several types for bad URLs
        raise ImproperlyConfigured(f"DATABASE_URL cannot be parsed: {exc}") from None
    # Under ASGI every request runs in its own executor thread, so persistent
    # per-thread connections pile up until PostgreSQL refuses clients; a
    # per-process pool bounds them (DB_POOL_MAX_SIZE per worker process).
    if env_bool("DB_POOL", True):
        if DATABASES["default"]["CONN_MAX_AGE"]:
            raise ImproperlyConfigured("DB_CONN_MAX_AGE must be 0 when DB_POOL is on (the pool keeps the connections).")
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": env_int("DB_POOL_MIN_SIZE", 1, minimum=0),
            # From the server's concurrency (ASGI_THREADS / WEB_THREADS) unless DB_POOL_MAX_SIZE says otherwise.
            "max_size": pool_max_size(),
            "timeout": env_int("DB_POOL_TIMEOUT", 10, minimum=1),
        }
    # The hot paths' queries run as prepared statements of the session (common/precompiled.py);
    # off behind a pooler that shares one session between clients (PgBouncer in transaction mode).
    DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (postgres://...); leave it unset for the embedded SQLite.")
    DATABASES["default"].setdefault("TEST", {})["NAME"] = env_str("DATABASE_TEST_NAME", "test_auditorium")
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env_str("SQLITE_PATH", str(DATA_DIR / "auditorium.sqlite3")),
            # IMMEDIATE takes the write lock at BEGIN, so two writers never
            # deadlock on a read->write upgrade; WAL lets readers go on meanwhile.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            "TEST": {"NAME": env_str("SQLITE_TEST_PATH", str(DATA_DIR / "test.sqlite3"))},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis, Celery, Channels -----------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "memory://")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL or "cache+memory://")
# Without a broker server, tasks run in the calling process: the "local worker".
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not (REDIS_URL or os.environ.get("CELERY_BROKER_URL")))
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 1800, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 1500, minimum=1)
# Seconds a polling broker's worker sleeps after finding no job it may take (an empty queue, or its
# prefetch slots full). kombu's default of 1 s capped the demo's SQLite broker at about two jobs a
# second whatever the jobs cost. Polling an idle SQLite broker 10 times a second costs the worker about
# 3 % of a core (0.5 % at 1 s).
# Redis delivers by blocking pop and never polls. Applied by a worker step (auditorium/celery.py):
# kombu's SQLAlchemy transport would hand a transport option to create_engine, which refuses it.
CELERY_BROKER_POLLING_INTERVAL = env_float("CELERY_BROKER_POLLING_INTERVAL", 0.1, minimum=0.01)
# kombu's SQLAlchemy transport (the demo's broker) hands its options to create_engine, which refuses this one.
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {} if CELERY_BROKER_URL.startswith("sqla+") else {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)}
)

CHANNELS_SQLITE_PATH = Path(env_str("CHANNELS_SQLITE_PATH", str(DATA_DIR / "channels.sqlite3")))
if REDIS_URL:
    # redis-py times out socket reads after 5 s, the same as channels-redis's blocking receive;
    # a longer socket timeout keeps idle websocket consumers from crashing every few seconds.
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 15}]}}
    }
    CACHES = {
        "default": {
            "BACKEND": "common.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"pool_class": "common.cache.SharedConnectionPool"},
        }
    }
else:
    # The worker is another process (./auditorium demo), and its pushes must reach the web server's
    # open pages: a layer in a small SQLite file of its own that both open (common/sqlite_layer.py).
    CHANNEL_LAYERS = {"default": {"BACKEND": "common.sqlite_layer.SQLiteChannelLayer", "CONFIG": {"path": str(CHANNELS_SQLITE_PATH)}}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Sessions read from the cache first (one query less per request); the database stays
# the record, and Django falls back to it on a cache miss. The embedded defaults serve
# from one web process, so its local cache sees every logout.
SESSION_ENGINE = "common.sessions"

# --- Auth -----------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# The throttled backend checks every password and reads the user of every request from the cache
# (dropped on each save; see auth_backend.py); ModelBackend after it only restores users of sessions
# signed in before the throttle existed.
AUTHENTICATION_BACKENDS = ["common.login_throttle.ThrottledModelBackend", "django.contrib.auth.backends.ModelBackend"]
# Failed sign-ins allowed per window ("count/seconds"): per account from one address, per address, and per
# account from addresses it has not signed in from in 30 days (high: it must not lock the owner out).
# Past one, the password checks it covers are refused (the right one too) until the window ends. 0/N turns one
# off. The rules are in common/login_throttle.py.
AUDITORIUM_LOGIN_ACCOUNT_ADDRESS_RATE = env_rate("AUDITORIUM_LOGIN_ACCOUNT_ADDRESS_RATE", "10/900")
AUDITORIUM_LOGIN_IP_RATE = env_rate("AUDITORIUM_LOGIN_IP_RATE", "50/900")
AUDITORIUM_LOGIN_ACCOUNT_RATE = env_rate("AUDITORIUM_LOGIN_ACCOUNT_RATE", "100/3600")
# Wrong resume codes on recruitment links, counted the same way: per participant id from one address, per
# address (all links), per participant id from anywhere (annotation/services/recruitment.py).
AUDITORIUM_RESUME_PARTICIPANT_ADDRESS_RATE = env_rate("AUDITORIUM_RESUME_PARTICIPANT_ADDRESS_RATE", "5/900")
AUDITORIUM_RESUME_IP_RATE = env_rate("AUDITORIUM_RESUME_IP_RATE", "20/900")
AUDITORIUM_RESUME_PARTICIPANT_RATE = env_rate("AUDITORIUM_RESUME_PARTICIPANT_RATE", "100/3600")
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- I18n, files ----------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(DATA_DIR / "media")))
MEDIA_URL = "/media-internal/"  # never routed: audio is served through access-checked views
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Request sizes (common/limits.py): checked against the declared length before any body is read.
# Only the upload paths (the dataset imports, for users allowed to import there) take AUDITORIUM_MAX_UPLOAD_BYTES per file.
AUDITORIUM_MAX_UPLOAD_BYTES = env_int("AUDITORIUM_MAX_UPLOAD_BYTES", 512 * 1024 * 1024, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024, minimum=1024)
AUDITORIUM_MAX_REQUEST_BYTES = env_int("AUDITORIUM_MAX_REQUEST_BYTES", 2 * DATA_UPLOAD_MAX_MEMORY_SIZE, minimum=DATA_UPLOAD_MAX_MEMORY_SIZE)
AUDITORIUM_UPLOAD_PATHS = env_list("AUDITORIUM_UPLOAD_PATHS", ["/admin/annotation/study/import-pairs/", "/manage/import/"])
# Who may send an upload-sized body to those paths (the request-size limit asks before reading it).
AUDITORIUM_UPLOAD_ALLOWED = "annotation.selectors.uploads_allowed"
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "common.limits.CappedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# --- DRF ------------------------------------------------------------------------
# HTTP Basic is a second password check with no throttle and no form: off unless a deployment asks for it.
AUDITORIUM_API_BASIC_AUTH = env_bool("AUDITORIUM_API_BASIC_AUTH", False)
# JSON bodies nested deeper than this are refused with a 400 (common/parsers.py).
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", 32, minimum=2)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        *(["rest_framework.authentication.BasicAuthentication"] if AUDITORIUM_API_BASIC_AUTH else []),
    ],
    "DEFAULT_PARSER_CLASSES": [
        "common.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "common.schema.AutoSchema",
    "EXCEPTION_HANDLER": "common.api_errors.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Auditorium API",
    "DESCRIPTION": "Pairwise music annotation, arena battles and automatic judges.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # A/B answers share one enum instead of one per question.
    "ENUM_NAME_OVERRIDES": {"ScreenSideEnum": ["A", "B"]},
    # Swagger UI from the installed package, served by whitenoise: no CDN, nothing unpinned (auditorium.security).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Ids in paths (common/converters.py): larger numbers miss (404), they never reach the database.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}},
}

# --- Security (tightened automatically outside debug) ----------------------------
# X-Forwarded-Proto says "this came over HTTPS"; any client can send it, so it is believed only when a
# proxy that sets it (and drops the client's) is named in front (platform/deploy/nginx.conf).
AUDITORIUM_BEHIND_PROXY = env_bool("AUDITORIUM_BEHIND_PROXY", False)
# The proxies' own addresses (or networks): X-Forwarded-For is believed only from these (common/proxy.py).
AUDITORIUM_TRUSTED_PROXIES = env_list("AUDITORIUM_TRUSTED_PROXIES", ["127.0.0.1", "::1"])
for _proxy in AUDITORIUM_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"AUDITORIUM_TRUSTED_PROXIES: {_proxy!r} is not an address or network.") from None
if AUDITORIUM_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Sent on every response (auditorium/security.py). Pages use only their own static scripts and styles;
# audio comes from the access-checked views; the live pages open websockets to the same host.
AUDITORIUM_CSP = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "media-src": ["'self'", "blob:"],
    "connect-src": ["'self'"],
    "font-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
SESSION_COOKIE_HTTPONLY = True
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    # Only for plain-HTTP loopback set-ups (benchmarks): never turn off in front of users.
    SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- Logging: one JSON object per line, so log shippers need no parsing rules ----
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(f"LOG_LEVEL={LOG_LEVEL!r} is not a logging level.")
# "plain" suits a terminal (./auditorium demo sets it); deployments keep JSON.
LOG_FORMAT = env_choice("LOG_FORMAT", "json", ("json", "plain"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "common.logging.JsonFormatter"},
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Django's own defaults give "django" and "django.server" plain console handlers of their own;
    # replacing them (and not propagating) prints each line once, in the format chosen above.
    "loggers": {
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django.server": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django.db.backends": {"level": "WARNING"},
    },
}

# --- Auditorium -----------------------------------------------------------------
# Salt for hashing visitor IPs and ids; raw IPs are never stored.
AUDITORIUM_HASH_SALT = env_secret("AUDITORIUM_HASH_SALT") or SECRET_KEY
# Root under which judge weights are looked up when a judge names a relative path.
AUDITORIUM_MODEL_DIR = Path(env_str("AUDITORIUM_MODEL_DIR", str(DATA_DIR / "models")))
# /healthz/workers/ checks the workers at most once per this many seconds; callers in between get the cached answer.
AUDITORIUM_HEALTH_WORKERS_SECONDS = env_int("AUDITORIUM_HEALTH_WORKERS_SECONDS", 15, minimum=1)
# Reward-model trainings one user may have waiting or running at once (each registers a judge and holds a GPU worker).
AUDITORIUM_MAX_QUEUED_TRAININGS = env_int("AUDITORIUM_MAX_QUEUED_TRAININGS", 2, minimum=1)

# --- Arena (docs/arena.md) --------------------------------------------------------
ARENA_MIN_LISTEN_SECONDS = env_float("ARENA_MIN_LISTEN_SECONDS", 5.0, minimum=0.0)
ARENA_CLIP_SECONDS = env_float("ARENA_CLIP_SECONDS", 8.0, minimum=0.5)
ARENA_SAMPLE_RATE = env_int("ARENA_SAMPLE_RATE", 32000, minimum=8000)
ARENA_TARGET_LUFS = env_float("ARENA_TARGET_LUFS", -20.0)
ARENA_PROMPT_MIN_CHARS = env_int("ARENA_PROMPT_MIN_CHARS", 3, minimum=1)
ARENA_PROMPT_MAX_CHARS = env_int("ARENA_PROMPT_MAX_CHARS", 500, minimum=1)
ARENA_LYRICS_MAX_CHARS = env_int("ARENA_LYRICS_MAX_CHARS", 2000, minimum=0)
ARENA_FEEDBACK_MAX_CHARS = env_int("ARENA_FEEDBACK_MAX_CHARS", 2000, minimum=0)
# A dotted path to a callable (arena/moderation.py).
ARENA_MODERATION_HOOK = env_str("ARENA_MODERATION_HOOK", "arena.moderation.rule_based")
ARENA_TERMS_VERSION = env_str("ARENA_TERMS_VERSION", "1")
# "count/seconds" windows, per visitor and per salted IP hash.
ARENA_VOTE_RATE = env_rate("ARENA_VOTE_RATE", "20/60")
ARENA_IP_VOTE_RATE = env_rate("ARENA_IP_VOTE_RATE", "60/60")
ARENA_BATTLE_RATE = env_rate("ARENA_BATTLE_RATE", "10/60")
ARENA_IP_BATTLE_RATE = env_rate("ARENA_IP_BATTLE_RATE", "30/60")
ARENA_EVENT_RATE = env_rate("ARENA_EVENT_RATE", "600/60")
ARENA_DAILY_VOTE_CAP = env_int("ARENA_DAILY_VOTE_CAP", 200, minimum=0)
# Per salted IP hash and UTC day ("count/86400"): a new cookie starts a new visitor, so the per-visitor
# limits alone leave a network ~43k battles a day; these bound it whatever cookies it sends.
# Sized for a shared NAT (a lab or a campus): raise them there, 0/86400 turns one off.
ARENA_IP_DAILY_BATTLE_RATE = env_rate("ARENA_IP_DAILY_BATTLE_RATE", "1000/86400")
ARENA_IP_DAILY_VOTE_RATE = env_rate("ARENA_IP_DAILY_VOTE_RATE", "1000/86400")
ARENA_MAX_EVENTS_PER_BATTLE = env_int("ARENA_MAX_EVENTS_PER_BATTLE", 3000, minimum=1)
ARENA_TRUST_X_FORWARDED_FOR = env_bool("ARENA_TRUST_X_FORWARDED_FOR", False)
# "weighted" (by system weight) or "informative" (pairs whose board intervals overlap most, see
# arena/sampling.py), mixed with the weighted draw at ARENA_SAMPLING_FLOOR.
ARENA_SAMPLING = env_choice("ARENA_SAMPLING", "weighted", ("weighted", "informative"))
ARENA_SAMPLING_FLOOR = env_float("ARENA_SAMPLING_FLOOR", 0.25, minimum=0.0)
# "auditorium" (ours) or "music-arena" (Music Arena's published method), see arena/leaderboard.py.
ARENA_LEADERBOARD_METHOD = env_choice("ARENA_LEADERBOARD_METHOD", "auditorium", ("auditorium", "music-arena"))
ARENA_LEADERBOARD_ROUNDS = env_int("ARENA_LEADERBOARD_ROUNDS", 1000, minimum=0)
ARENA_LEADERBOARD_SEED = env_int("ARENA_LEADERBOARD_SEED", 0)
ARENA_LEADERBOARD_MIN_VOTES = env_int("ARENA_LEADERBOARD_MIN_VOTES", 20, minimum=0)
ARENA_LEADERBOARD_BOTH_BAD = env_choice("ARENA_LEADERBOARD_BOTH_BAD", "exclude", ("exclude", "tie"))
# The system pinned at ARENA_LEADERBOARD_ANCHOR_RATING; unset or empty: none.
ARENA_LEADERBOARD_ANCHOR = env_str("ARENA_LEADERBOARD_ANCHOR") or None
ARENA_LEADERBOARD_ANCHOR_RATING = env_float("ARENA_LEADERBOARD_ANCHOR_RATING", 1000.0)
# Style control (arena/style.py): the covariates of the style-controlled board beside the plain one; empty: none.
ARENA_STYLE_COVARIATES = env_list("ARENA_STYLE_COVARIATES", ["duration", "loudness", "true_peak", "vocals", "generation_seconds"])
# Category boards (arena/boards.py): the fewest counted votes a category board is fitted from, and the
# genre/mood tagger, a dotted path to (prompt, lyrics) -> {"genre": [...], "mood": [...]}.
ARENA_CATEGORY_MIN_VOTES = env_int("ARENA_CATEGORY_MIN_VOTES", 50, minimum=1)
ARENA_PROMPT_TAGGER = env_str("ARENA_PROMPT_TAGGER", "arena.boards.keyword_tags")
# The outlier-voter screen: the false-positive rate an honest visitor is flagged at, the fewest decided
# votes a visitor is tested with, and the simulated vote sets per visitor.
ARENA_OUTLIER_FP_RATE = env_float("ARENA_OUTLIER_FP_RATE", 0.01, minimum=1e-6)
ARENA_OUTLIER_MIN_VOTES = env_int("ARENA_OUTLIER_MIN_VOTES", 10, minimum=1)
ARENA_OUTLIER_SIMULATIONS = env_int("ARENA_OUTLIER_SIMULATIONS", 1000, minimum=99)
ARENA_LEADERBOARD_DEBOUNCE_SECONDS = env_int("ARENA_LEADERBOARD_DEBOUNCE_SECONDS", 10, minimum=0)
ARENA_HTTP_TIMEOUT = env_float("ARENA_HTTP_TIMEOUT", 120.0, minimum=0.1)
ARENA_HEALTH_TIMEOUT = env_float("ARENA_HEALTH_TIMEOUT", 5.0, minimum=0.1)
ARENA_VISITOR_COOKIE = env_str("ARENA_VISITOR_COOKIE", "arena_visitor")
# The battle-log release page (/arena/release/): researchers always; everyone may read and download when on.
ARENA_RELEASE_PUBLIC = env_bool("ARENA_RELEASE_PUBLIC", False)
env_check_prefix("ARENA_", {name for name in globals() if name.startswith("ARENA_")})

# Judge benchmarks (scoring/benchmarks, docs/benchmarks.md).
BENCHMARK_DAILY_SUBMISSIONS = env_int("BENCHMARK_DAILY_SUBMISSIONS", 5, minimum=0)
# Off: the leaderboard is shown to researchers and team members only.
BENCHMARK_LEADERBOARD_PUBLIC = env_bool("BENCHMARK_LEADERBOARD_PUBLIC", False)
BENCHMARK_MAX_FILE_BYTES = env_int("BENCHMARK_MAX_FILE_BYTES", 64 * 1024 * 1024, minimum=1)
# Before the close, a reliability bin or breakdown cell with fewer items is merged or not shown
# (scoring/benchmarks/disclosure.py): a cell of one item would name that item's label.
BENCHMARK_MIN_CELL = env_int("BENCHMARK_MIN_CELL", 10, minimum=1)
BENCHMARK_HTTP_CONCURRENCY = env_int("BENCHMARK_HTTP_CONCURRENCY", 4, minimum=1)
BENCHMARK_HTTP_TIMEOUT = env_float("BENCHMARK_HTTP_TIMEOUT", 60.0, minimum=0.01)
BENCHMARK_HTTP_RETRIES = env_int("BENCHMARK_HTTP_RETRIES", 2, minimum=0)
# Without a broker (tasks run eagerly), an outside judge's run goes to a thread of the web process, so the POST that
# asked for it returns at once; off, it runs inside that POST (the test suite, which checks its results right after).
BENCHMARK_HTTP_IN_THREAD = env_bool("BENCHMARK_HTTP_IN_THREAD", True)
BENCHMARK_AUDIO_URL_TTL = env_int("BENCHMARK_AUDIO_URL_TTL", 3600, minimum=1)
# Where outside judges reach this server's signed audio links.
BENCHMARK_AUDIO_BASE_URL = env_str("BENCHMARK_AUDIO_BASE_URL", "http://127.0.0.1:8000")
# Hosts a registered outside judge may point at (comma-separated; empty: any). Deployments should set it.
BENCHMARK_ENDPOINT_HOSTS = env_list("BENCHMARK_ENDPOINT_HOSTS", [])
# Loopback/private/link-local networks an outside judge may still resolve to (comma-separated; empty: none, so a
# registered URL cannot reach this machine or its network). scoring/benchmarks/endpoint_address.py.
BENCHMARK_ENDPOINT_PRIVATE_NETWORKS = env_list("BENCHMARK_ENDPOINT_PRIVATE_NETWORKS", [])
for _network in BENCHMARK_ENDPOINT_PRIVATE_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"BENCHMARK_ENDPOINT_PRIVATE_NETWORKS: {_network!r} is not an address or network.") from None
env_check_prefix("BENCHMARK_", {name for name in globals() if name.startswith("BENCHMARK_")})
# Endpoint judges (audio-LLM judges with option family: openai) follow the outside-judge address rules above; this
# also lets them reach loopback, for a vLLM server on the worker's own machine. scoring/judge_endpoint.py.
JUDGE_ENDPOINT_ALLOW_LOOPBACK = env_bool("JUDGE_ENDPOINT_ALLOW_LOOPBACK", False)

# Prolific's API (annotation/prolific.py): approving, rejecting and paying bonuses from the study's Prolific page.
# The base is the only host those calls go to. A researcher's token is stored encrypted with a key derived from
# PROLIFIC_TOKEN_KEY (or SECRET_KEY when unset): rotating that key makes stored tokens unreadable, to be entered again.
PROLIFIC_API_BASE = env_str("PROLIFIC_API_BASE", "https://api.prolific.com/api/v1/")
if not re.match(r"^https?://[^/?#]+/", PROLIFIC_API_BASE):
    raise ImproperlyConfigured(f"PROLIFIC_API_BASE must be an http(s) URL ending in a path, e.g. https://api.prolific.com/api/v1/ (got {PROLIFIC_API_BASE!r}).")
if PROLIFIC_API_BASE.startswith("http://") and not re.match(r"^http://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?/", PROLIFIC_API_BASE):
    # The token travels in a header: in the clear only to this machine (a local stand-in), never over a network.
    raise ImproperlyConfigured(f"PROLIFIC_API_BASE must use https unless it is on this machine (got {PROLIFIC_API_BASE!r}).")
PROLIFIC_TOKEN_KEY = env_secret("PROLIFIC_TOKEN_KEY") or ""
PROLIFIC_TIMEOUT_S = env_float("PROLIFIC_TIMEOUT_S", 20.0, minimum=0.1)
PROLIFIC_RETRIES = env_int("PROLIFIC_RETRIES", 3, minimum=0)
PROLIFIC_BACKOFF_S = env_float("PROLIFIC_BACKOFF_S", 1.0, minimum=0.0)
# Bonuses go to Prolific in bulks of at most this many submissions (one set-up and one pay call each).
PROLIFIC_BONUS_CHUNK = env_int("PROLIFIC_BONUS_CHUNK", 100, minimum=1)
# A pay call whose answer was lost is sent again (same bulk id, same idempotency key) only when Prolific still shows
# no such bonus this long after it: Prolific pays bulks asynchronously and its pay endpoint is not idempotent.
PROLIFIC_PAY_RECHECK_S = env_int("PROLIFIC_PAY_RECHECK_S", 900, minimum=0)
PROLIFIC_MAX_BONUS = env_float("PROLIFIC_MAX_BONUS", 50.0, minimum=0.01)
env_check_prefix("PROLIFIC_", {name for name in globals() if name.startswith("PROLIFIC_")} | {"PROLIFIC_TOKEN_KEY_FILE"})
