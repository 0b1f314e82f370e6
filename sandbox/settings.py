"""Settings of the provider sandbox: a separate Django project with its own database.

Everything comes from the environment, with defaults that make `make sandbox` work as is.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from sandbox.env import env_int, env_list, env_str

SANDBOX_DIR = Path(__file__).resolve().parent
BASE_DIR = SANDBOX_DIR.parent
VAR_DIR = Path(env_str("SANDBOX_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = env_str("SANDBOX_DJANGO_SECRET_KEY", "sandbox-local-only-7d1f0a9b3c5e")
DEBUG = False
ALLOWED_HOSTS = env_list("SANDBOX_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "rest_framework",
    "sandbox.provider",
]

MIDDLEWARE = [
    "sandbox.provider.middleware.RequestIdMiddleware",
    "sandbox.provider.middleware.BodySizeLimitMiddleware",
    "sandbox.provider.middleware.CorsMiddleware",
    "sandbox.provider.middleware.RateLimitMiddleware",
    "sandbox.provider.middleware.FaultInjectionMiddleware",
]

ROOT_URLCONF = "sandbox.urls"
WSGI_APPLICATION = "sandbox.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    },
]

DATABASES = {
    "default": dj_database_url.config(
        env="SANDBOX_DATABASE_URL",
        default=f"sqlite:///{VAR_DIR / 'sandbox.sqlite3'}",
        # Each server thread keeps its connection (checked before reuse) instead of opening one
        # for every request, as a provider's servers would.
        conn_max_age=env_int("SANDBOX_DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions serialise writers, so single-use tokens and idempotency keys
    # hold under concurrency; WAL lets readers go on meanwhile.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

USE_TZ = True
TIME_ZONE = "UTC"
USE_I18N = False

STATIC_URL = "/static/"
STATIC_ROOT = SANDBOX_DIR / "provider" / "static"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_PARSER_CLASSES": ["sandbox.provider.jsonio.DecimalJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["sandbox.provider.jsonio.DecimalJSONRenderer"],
    "EXCEPTION_HANDLER": "sandbox.provider.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "UNAUTHENTICATED_TOKEN": None,
}

# Credentials of the one merchant this sandbox serves.
SANDBOX_PUBLIC_KEY = env_str("SANDBOX_PUBLIC_KEY", "pk_sandbox_demo")
SANDBOX_SECRET_KEY = env_str("SANDBOX_SECRET_KEY", "sk_sandbox_demo")
SANDBOX_MERCHANT_NAME = env_str("SANDBOX_MERCHANT_NAME", "Tienda Tlali")
# Public address of the sandbox; when empty, taken from each request's Host.
SANDBOX_PUBLIC_URL = env_str("SANDBOX_PUBLIC_URL").rstrip("/")
SANDBOX_PORT = env_int("SANDBOX_PORT", 8001)

SANDBOX_MAX_BODY_BYTES = env_int("SANDBOX_MAX_BODY_BYTES", 64 * 1024)
SANDBOX_WEBHOOK_TIMEOUT = float(env_str("SANDBOX_WEBHOOK_TIMEOUT", "10"))
SANDBOX_WEBHOOK_BACKOFF_BASE = float(env_str("SANDBOX_WEBHOOK_BACKOFF_BASE", "2"))
SANDBOX_WEBHOOK_BACKOFF_MAX = float(env_str("SANDBOX_WEBHOOK_BACKOFF_MAX", "600"))
SANDBOX_WEBHOOK_MAX_ATTEMPTS = env_int("SANDBOX_WEBHOOK_MAX_ATTEMPTS", 8)

# Requests per second each API key may make to each endpoint family (0: no limit), until
# /_sandbox/rate_limits says otherwise (sandbox/provider/rate_limits.py).
try:
    SANDBOX_RATE_LIMIT_PER_SECOND = float(env_str("SANDBOX_RATE_LIMIT_PER_SECOND").strip() or 0)
except ValueError as exc:
    raise ImproperlyConfigured("SANDBOX_RATE_LIMIT_PER_SECOND must be a number") from exc
if not 0 <= SANDBOX_RATE_LIMIT_PER_SECOND < float("inf"):
    raise ImproperlyConfigured("SANDBOX_RATE_LIMIT_PER_SECOND must be zero or more")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s sandbox %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("SANDBOX_LOG_LEVEL", "INFO")},
}
