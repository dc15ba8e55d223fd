"""Settings for How2Everything Studio, read from the environment.

Embedded default (nothing set): a SQLite file under ./var and a Celery broker on SQLite through
kombu's SQLAlchemy transport, so `make demo` runs a real worker with no services installed.
Production and CI: DATABASE_URL=postgres://..., REDIS_URL=redis://..., DEBUG=0, SECRET_KEY, ALLOWED_HOSTS.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .env import database_from_url, env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("H2E_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", default=False)
_INSECURE_DEV_KEY = "django-insecure-embedded-default-do-not-use-in-production"
SECRET_KEY = env_str("SECRET_KEY", _INSECURE_DEV_KEY if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set when DEBUG is off. Generate one with "
        '`python -c "import secrets; print(secrets.token_urlsafe(50))"`, '
        "or set DEBUG=1 for a local demo."
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin.apps.SimpleAdminConfig",  # admin modules load with the URL conf (h2e_site/urls.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "h2e_site.jobs",
    "h2e_site.embeddings",
    "mining",
    "judging",
    "goal_step",
    "annotation",
    "demo",  # the demo world and `manage.py demo_setup`
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "h2e_site.middleware.NulMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "h2e_site.middleware.JobsNotQueuedMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "h2e_site.urls"
WSGI_APPLICATION = "h2e_site.wsgi.application"
ASGI_APPLICATION = "h2e_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # A study kind's folder holds its own templates and static files (annotation/kinds/<kind>/templates/,
        # .../static/)
        "DIRS": [BASE_DIR / "templates", *sorted(BASE_DIR.glob("annotation/kinds/*/templates"))],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # the "synthetic demo data" badge beside the demo's synthetic rows, on every page
            "builtins": ["h2e_site.synthetic"],
        },
    }
]

DATABASES = {
    "default": database_from_url(env_str("DATABASE_URL"), sqlite_default=VAR_DIR / "h2e.sqlite3"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
SILENCED_SYSTEM_CHECKS: list[str] = []
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    SILENCED_SYSTEM_CHECKS.append("models.W040")  # covering-index INCLUDE columns are a PostgreSQL extra

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static", *sorted(BASE_DIR.glob("annotation/kinds/*/static"))]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "judging:leaderboard"
LOGOUT_REDIRECT_URL = "login"

# --- Security: on unless DEBUG. `manage.py check --deploy` is clean with DEBUG=0. ---
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

# --- Django REST framework ---
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_FILTER_BACKENDS": ["h2e_site.api.StrictFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "h2e_site.api.StrictPageNumberPagination",
    "PAGE_SIZE": 50,
    # A JSON body is measured before it is parsed (too deep or too long is a 400: h2e_site/bounds.py) and must
    # be an object (h2e_site/api.py); the schema documents every error answer (api_views.py).
    "DEFAULT_PARSER_CLASSES": [
        "h2e_site.api.ObjectJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "h2e_site.api_views.ApiSchema",
    # Credentials are checked before anything else about a request (its format, a NUL in its query).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "h2e_site.api.CredentialsFirstNegotiation",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "How2Everything Studio API",
    "DESCRIPTION": (
        "Procedures (L1), generations (L2), How2Score judgments and leaderboards. Staff only: sign in to the "
        "site (session) or send `Authorization: Token <key>`; a staff user gets a key with "
        "`python manage.py drf_create_token <username>`."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAdminUser"],
    # Swagger UI / ReDoc assets come from drf-spectacular-sidecar (vendored), never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two choice sets called "split": a procedure's (bench, train, pool) and a task example's (test, train).
    "ENUM_NAME_OVERRIDES": {
        "ProcedureSplitEnum": "mining.models.Split",
        "TaskSplitEnum": "goal_step.models.TaskSplit",
        "MiningStageEnum": "mining.models.Stage",
    },
    # Path parameters say which values the URL conf routes (a client never builds a path that 404s as HTML):
    # ids from 0 to a bigint, slugs and other names as their converters match them.
    "PATH_CONVERTER_OVERRIDES": {
        "int": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
        "slug": {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$"},
        "str": {"type": "string", "pattern": "^[^/]+$"},
    },
}

# --- Embeddings: an `embed` job runs by itself after a bench import, an h2e import and a mining run, so the
# new texts have their vectors before a build or a search needs them (h2e_site/embeddings/jobs.py).
EMBED_AFTER_IMPORTS = env_bool("H2E_EMBED_AFTER_IMPORTS", True)
# The reward config (configs/rewards/<name>.yaml) of POST /api/reward/ when a request names none (issue #32).
H2E_DEFAULT_REWARD = env_str("H2E_REWARD", "smollm2-local")
H2E_REWARD_CONFIG_DIR = env_str("H2E_REWARD_CONFIG_DIR", str(BASE_DIR / "configs" / "rewards"))

# --- Celery: Redis when REDIS_URL is set, else an embedded SQLite broker (a real worker, never eager). ---
REDIS_URL = env_str("REDIS_URL")
# The Celery app (h2e_site/celery.py), which the job registry imports when the first job is sent: neither
# django.setup() nor a command that sends no job loads Celery.
JOBS_CELERY_APP = "h2e_site.celery.app"
CELERY_BROKER_URL = REDIS_URL or f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}"
if not REDIS_URL or DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded SQLite files live here
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
# Redis redelivers a message a dead worker never acked only after visibility_timeout. Keep it longer than the
# longest task (a redelivery while the first run is alive is harmless: the job's advisory lock turns it away);
# a starting worker resumes jobs orphaned by a killed one at once
# (h2e_site.jobs.services.resume_orphaned_jobs).
# (Redis only: the SQLite broker's transport hands its options to SQLAlchemy's create_engine.)
if REDIS_URL:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Pinned (Celery 6 changes the default to True): a task keeps running when the worker loses the broker
# connection, so a judge job survives a Redis restart. Jobs whose task is gone all the same are enqueued
# again by the workers' stale-job sweep (h2e_site/jobs/tasks.py), not left "running".
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TASK_ALWAYS_EAGER = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # The HTTP clients under the openai package log every request at INFO: hundreds of lines a second in
    # a judging worker. Their warnings and errors still show; LLM_HTTP_LOG_LEVEL=INFO brings them back.
    "loggers": {
        name: {"level": env_str("LLM_HTTP_LOG_LEVEL", "WARNING")} for name in ("httpx", "httpx2", "httpcore")
    },
}

# Prolific's researcher API (annotation/prolific/client.py). The token lives in the environment only: never in
# the database, a log or a page.
PROLIFIC_API_URL = env_str("PROLIFIC_API_URL", "https://api.prolific.com/api/v1")
PROLIFIC_API_TOKEN = env_str("PROLIFIC_API_TOKEN", "")
# The workspace's webhook secret (POST /api/v1/hooks/secrets/): signs the events Prolific posts to
# /prolific/hooks/ (annotation/prolific/hooks.py); without it every event is refused.
PROLIFIC_WEBHOOK_SECRET = env_str("PROLIFIC_WEBHOOK_SECRET", "")
