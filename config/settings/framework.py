"""Django itself (DJANGO_*).

The secret key, the hosts, the apps and the middleware, the templates, the languages, static
files and the JSON endpoints' framework. The production settings add HTTPS and the secure
cookies (`config/settings/production.py`).
"""

from __future__ import annotations

from pathlib import Path

from config.settings.env import Production, env_bool, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent

SECRET_KEY = env_str(
    "DJANGO_SECRET_KEY",
    doc="50+ random characters, e.g. `python -c 'import secrets; "
    "print(secrets.token_urlsafe(50))'`. It signs the order links and sessions, and encrypts the "
    "request of a create whose outcome is unknown (kept, with its single-use card token, only "
    'until the provider answers it): change it when no payment is "outcome unknown", or those '
    "attempts can no longer be sent again and wait for the provider's notification or staff. "
    "The demo uses a fixed key of its own.",
    production=Production.MUST_SET,
)
DEBUG = env_bool(
    "DJANGO_DEBUG",
    False,
    doc="Django's debug mode, for development only; the production settings always turn it off.",
)
ALLOWED_HOSTS = env_list(
    "DJANGO_ALLOWED_HOSTS",
    ["127.0.0.1", "localhost"],
    doc="The host names the shop answers to, comma-separated (probes must send one of them as "
    "`Host`).",
    production=Production.MUST_SET,
)
CSRF_TRUSTED_ORIGINS = env_list(
    "DJANGO_CSRF_TRUSTED_ORIGINS",
    [],
    doc="Extra origins trusted for CSRF (`https://www.tienda.example`), comma-separated; "
    "same-origin posts need none.",
)

INSTALLED_APPS = [
    # Django's admin, whose site asks every staff member for a second factor (staff_signin).
    "staff_signin.apps.StaffAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "csp",
    "django_ratelimit",
    "django_guid",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "staff_signin",
    "staff_actions",
    "payments",
    "checkout",
    "webhooks",
    "books",
    "dashboard",
    "monitoring",
]

MIDDLEWARE = [
    # First: every response carries the request id, and every log line of the request (django-guid,
    # after the shop's check of the caller's id: config/settings/observability.py).
    "core.request_id.IncomingRequestIdCheck",
    "django_guid.middleware.guid_middleware",
    # Every request counted and timed (monitoring/metrics.py), the following middleware's time
    # included.
    "monitoring.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "core.security.ShopCSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # request.user.is_verified(): the session was signed in with a second factor.
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_ratelimit.middleware.RatelimitMiddleware",
    # The storefront's door on a sale day: shoppers past its capacity wait their turn.
    "checkout.middleware.AdmissionMiddleware",
]

# A shopper's session in its signed cookie (no query to read or write it), a signed-in staff
# member's in the database (core/sessions.py).
SESSION_ENGINE = "core.sessions"

ROOT_URLCONF = "config.urls"
# A form refused by the CSRF check gets the shop's own page, in the visitor's language.
CSRF_FAILURE_VIEW = "core.error_pages.csrf_failure"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "es"
LANGUAGES = [("es", "Español"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "America/Mexico_City"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(
    env_str(
        "DJANGO_STATIC_ROOT",
        str(BASE_DIR / "staticfiles"),
        doc="Where `collectstatic` writes the static files and whitenoise serves them from.",
        shown_default="`staticfiles/` in the checkout",
    )
)

# The shop's JSON endpoints (core.api): JSON only, one error shape, described by
# drf-spectacular at /api/schema/ (`manage.py spectacular --validate --fail-on-warn`).
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.parsers.BoundedJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_METADATA_CLASS": None,
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "COERCE_DECIMAL_TO_STRING": True,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Tienda Tlali, JSON endpoints",
    "DESCRIPTION": (
        "The shop's JSON endpoints: the payment page's calls, the card payments service's "
        "notifications, the browsers' CSP reports and the probes. Every error answers "
        '`{"error", "message"}`, plus `fields` when a body did not validate. Messages for '
        "people are in Spanish unless the browser chose English. An order is visible only to "
        "the browser session that placed it (404 for any other). Unsafe methods need Django's "
        "CSRF cookie and header, but for the receiver and the CSP reports; the probes take "
        "GET only."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "browserSession": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
            "csrfCookie": {"type": "apiKey", "in": "cookie", "name": "csrftoken"},
            "csrfHeader": {"type": "apiKey", "in": "header", "name": "X-CSRFToken"},
        }
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "webhooks.openapi.add_receiver",
        "core.openapi.document_refused_methods",
        "core.openapi.require_request_bodies",
        "checkout.openapi.link_order_operations",
    ],
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
