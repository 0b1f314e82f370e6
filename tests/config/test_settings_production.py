"""Production readiness of the settings: Django's deploy check finds nothing, and the production
settings refuse to start without what they need (config/settings/production.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.settings import production_env, run, settings_under


def test_the_deploy_check_reports_no_issue(tmp_path: Path) -> None:
    """Given a complete production environment, when `manage.py check --deploy` runs, then it
    reports no issue at any level, with no check silenced."""
    result = run(
        ["manage.py", "check", "--deploy", "--fail-level", "DEBUG"], production_env(tmp_path)
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_production_settings_come_from_the_environment(tmp_path: Path) -> None:
    """Given the production environment, then the shop runs on PostgreSQL and Redis, with the
    hosts and trusted origins given, manifest static files, JSON logs, the proxy's https header
    and the request id middleware first; the proxy header can be changed or turned off."""
    found = settings_under(
        {
            "default": production_env(tmp_path),
            "ssl-on": production_env(
                tmp_path, DJANGO_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_SSL=on"
            ),
            "no-proxy": production_env(tmp_path, DJANGO_SECURE_PROXY_SSL_HEADER=""),
            "text": production_env(tmp_path, LOG_FORMAT="text"),
        }
    )

    assert found["default"] == {
        "error": None,
        "debug": False,
        "engine": "django_zero_downtime_migrations.backends.postgres",
        "broker": "redis://redis.internal:6379/0",
        "hosts": ["tienda.example", "www.tienda.example"],
        "origins": ["https://tienda.example"],
        "proxy": ["HTTP_X_FORWARDED_PROTO", "https"],
        "static": "whitenoise.storage.CompressedManifestStaticFilesStorage",
        "log_format": "json",
        "middleware": "core.request_id.IncomingRequestIdCheck",
        "silenced": [],
    }
    assert found["ssl-on"]["proxy"] == ["HTTP_X_FORWARDED_SSL", "on"]
    assert found["no-proxy"]["proxy"] is None
    assert found["text"]["log_format"] == "text"


SQLITE_URL = "sqlite:////tmp/production-trial.sqlite3"
REFUSED: list[tuple[str, str | None]] = [
    ("DJANGO_SECRET_KEY", None),
    ("DJANGO_SECRET_KEY", "too-short-to-be-a-production-key"),
    ("DJANGO_SECRET_KEY", "ab" * 30),
    ("DJANGO_SECRET_KEY", "django-insecure-" + "k3Jd9Fh2Lm5Np8Qr1St4Vw7Xy0Zb6Cc" * 2),
    ("DATABASE_URL", None),
    ("DATABASE_URL", SQLITE_URL),
    ("DATABASE_URL", "mysql://shop:secret@db.internal:3306/shop"),
    ("REDIS_URL", None),
    ("REDIS_URL", "memory://"),
    ("DJANGO_ALLOWED_HOSTS", None),
    ("SHOP_BASE_URL", None),
    ("SHOP_BASE_URL", "http://tienda.example"),
    ("PAYMENTS_API_BASE_URL", None),
    ("PAYMENTS_PUBLIC_KEY", None),
    ("PAYMENTS_SECRET_KEY", None),
    ("PAYMENTS_WEBHOOK_TOKEN", None),
    ("PAYMENTS_WEBHOOK_TOKEN", "a" * 31),
    ("PAYMENTS_WEBHOOK_TOKEN", "a" * 20 + "/../" + "b" * 20),
    ("LOG_FORMAT", "xml"),
    ("DJANGO_SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto"),
]
ACCEPTED: dict[str, dict[str, str | None]] = {
    "sqlite-allowed": {"DATABASE_URL": SQLITE_URL, "DJANGO_ALLOW_SQLITE": "true"},
    "access-token": {"PAYMENTS_SECRET_KEY": None, "PAYMENTS_ACCESS_TOKEN": "cGtfbGl2ZTpza19s"},
    "redis-over-tls": {"REDIS_URL": "rediss://:secret@redis.internal:6380/1"},
}


def _case(variable: str, value: str | None) -> str:
    return f"{variable}={value}"


@pytest.fixture(scope="module")
def startups(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The production settings loaded under each environment below (one process for all)."""
    tmp = tmp_path_factory.mktemp("startups")
    envs = {_case(*case): production_env(tmp, **{case[0]: case[1]}) for case in REFUSED}
    envs.update({name: production_env(tmp, **changes) for name, changes in ACCEPTED.items()})
    return settings_under(envs)


@pytest.mark.parametrize(("variable", "value"), REFUSED)
def test_production_refuses_to_start_without_what_it_needs(
    startups: dict[str, dict[str, Any]], variable: str, value: str | None
) -> None:
    """Given a production environment with one variable missing or unfit, when the settings
    load (as Django starts), then they raise ImproperlyConfigured naming exactly that variable
    (one problem only)."""
    error = startups[_case(variable, value)]["error"]

    assert error is not None
    assert error.startswith("ImproperlyConfigured: Production settings are incomplete:")
    problems = [line for line in error.splitlines() if line.startswith("- ")]
    assert len(problems) == 1, problems
    assert variable in problems[0]


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_production_starts_with_the_allowed_alternatives(
    startups: dict[str, dict[str, Any]], name: str
) -> None:
    """SQLite when explicitly allowed, an access token instead of the secret key, and Redis
    over TLS are accepted."""
    assert startups[name]["error"] is None
