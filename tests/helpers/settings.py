"""The project's settings loaded in a fresh interpreter under a chosen environment, and a
production environment as an operator would write it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers.paths import ROOT

# What the settings tests read from a settings module, printed as JSON.
PROBE = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"],
    "name": str(settings.DATABASES["default"]["NAME"]),
    "broker": settings.CELERY_BROKER_URL,
    "cache": settings.CACHES["default"]["BACKEND"],
    "debug": settings.DEBUG,
    "api": settings.PAYMENTS_API_BASE_URL,
    "shop": settings.SHOP_BASE_URL,
    "public_key": settings.PAYMENTS_PUBLIC_KEY,
}))
"""

# The variables that select servers, removed from the environment a probe runs in.
CLEARED = (
    "DATABASE_URL",
    "REDIS_URL",
    "DJANGO_SECRET_KEY",
    "SANDBOX_PORT",
    "SHOP_PORT",
    "PAYMENTS_API_BASE_URL",
    "PAYMENTS_PUBLIC_KEY",
    "SANDBOX_PUBLIC_KEY",
    "SANDBOX_DATABASE_URL",
    "SANDBOX_DATABASE_CONN_MAX_AGE",
)


def load_settings(
    module: str, tmp_path: Path, *, probe: str = PROBE, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run `probe` in a fresh interpreter with the settings `module`, the environment cleared of
    what selects servers, and the demo's files in `tmp_path`."""
    base = {k: v for k, v in os.environ.items() if k not in CLEARED}
    base.update(
        {
            "DJANGO_SETTINGS_MODULE": module,
            "SHOP_VAR_DIR": str(tmp_path),
            "SANDBOX_VAR_DIR": str(tmp_path),
            **env,
        }
    )
    return subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
    )


def settings_of(module: str, tmp_path: Path, *, probe: str = PROBE, **env: str) -> dict[str, Any]:
    """What `probe` printed last, as JSON, once it ran without an error."""
    result = load_settings(module, tmp_path, probe=probe, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


# The webhook token of PRODUCTION_ENV.
TOKEN = "hook_Kq7Zt2Vw9Xb4Nc6Md8Lp3Rs5Ty1Uf0Gh"

# A production environment as an operator would write it (nothing here is contacted).
PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "DJANGO_SECRET_KEY": "pR0d-5ecret-Kx8vN2qL7mZ4tY9wB3cH6jF1sD5gA0eU-iOkMnBvCxZlQwE",
    "DATABASE_URL": "postgres://shop:secret@db.internal:5432/shop",
    "REDIS_URL": "redis://redis.internal:6379/0",
    "DJANGO_ALLOWED_HOSTS": "tienda.example,www.tienda.example",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://tienda.example",
    "SHOP_BASE_URL": "https://tienda.example",
    "PAYMENTS_API_BASE_URL": "https://api.payments.example",
    "PAYMENTS_PUBLIC_KEY": "pk_live_tienda_public",
    "PAYMENTS_SECRET_KEY": "sk_live_tienda_secret",
    "PAYMENTS_WEBHOOK_TOKEN": TOKEN,
}

# Nothing from the test run's own environment may make a production setting look configured.
_OURS = ("DJANGO_", "PAYMENTS_", "SHOP_", "SANDBOX_", "GUNICORN_", "WEBHOOKS_", "LOG_")
_ALSO_OURS = {"DATABASE_URL", "REDIS_URL", "PORT", "CELERY_VISIBILITY_TIMEOUT"}


def production_env(tmp_path: Path, **changes: str | None) -> dict[str, str]:
    """PRODUCTION_ENV on a clean environment; a change of None removes the variable."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(_OURS) and key not in _ALSO_OURS
    }
    env.update(PRODUCTION_ENV, SHOP_VAR_DIR=str(tmp_path / "var"))
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python *args` from the project's root under `env`, its output captured."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


# Loads the production settings once for each environment given (a JSON object of named
# environments on stdin), in one process, and prints what each gave: some settings, or the error.
SETTINGS_UNDER = """
import importlib, json, os, sys
import config.settings as package
results = {}
for name, env in json.load(sys.stdin).items():
    os.environ.clear()
    os.environ.update(env)
    # read the environment again: every part of the settings (its readers may stay)
    for module in [m for m in sys.modules if m.startswith("config.settings.")]:
        if module != "config.settings.env":
            sys.modules.pop(module)
            vars(package).pop(module.rsplit(".", 1)[-1], None)
    try:
        found = importlib.import_module("config.settings.production")
    except Exception as exc:
        results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        continue
    results[name] = {
        "error": None,
        "debug": found.DEBUG,
        "engine": found.DATABASES["default"]["ENGINE"],
        "broker": found.CELERY_BROKER_URL,
        "hosts": found.ALLOWED_HOSTS,
        "origins": found.CSRF_TRUSTED_ORIGINS,
        "proxy": found.SECURE_PROXY_SSL_HEADER,
        "static": found.STORAGES["staticfiles"]["BACKEND"],
        "log_format": found.LOGGING["formatters"]["console"]["log_format"],
        "middleware": found.MIDDLEWARE[0],
        "silenced": found.SILENCED_SYSTEM_CHECKS,
    }
print(json.dumps(results))
"""


def settings_under(envs: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    """The production settings (or the error) under each named environment."""
    result = subprocess.run(
        [sys.executable, "-c", SETTINGS_UNDER],
        cwd=ROOT,
        input=json.dumps(envs),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
