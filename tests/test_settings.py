"""Settings come from the environment, with defaults that need no server at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


def settings_of(module: str, tmp_path: Path, *, probe: str = PROBE, **env: str) -> dict:
    result = load_settings(module, tmp_path, probe=probe, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_defaults_need_no_database_or_broker_server(tmp_path: Path) -> None:
    """Nothing configured: SQLite, kombu's filesystem broker, a file cache, the local sandbox."""
    found = settings_of("config.settings.local", tmp_path)
    assert found["engine"] == "django.db.backends.sqlite3"
    assert found["name"] == str(tmp_path / "shop.sqlite3")
    assert found["broker"] == "filesystem://"
    assert found["cache"].endswith("FileBasedCache")
    assert found["api"] == "http://127.0.0.1:8001"
    assert found["shop"] == "http://127.0.0.1:8000"
    assert found["public_key"] == "pk_sandbox_demo"


def test_database_url_selects_postgresql(tmp_path: Path) -> None:
    """DATABASE_URL=postgres://... makes PostgreSQL the database."""
    found = settings_of(
        "config.settings.local", tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:5432/shopdb"
    )
    assert found["engine"] == "django.db.backends.postgresql"
    assert found["name"] == "shopdb"


def test_redis_url_makes_redis_the_broker_and_cache(tmp_path: Path) -> None:
    """REDIS_URL makes Redis the Celery broker and the cache."""
    found = settings_of("config.settings.local", tmp_path, REDIS_URL="redis://127.0.0.1:6379/3")
    assert found["broker"] == "redis://127.0.0.1:6379/3"
    assert found["cache"] == "django_redis.cache.RedisCache"


def test_ports_move_and_the_shop_follows_the_sandbox(tmp_path: Path) -> None:
    """SANDBOX_PORT and SHOP_PORT move the addresses; the shop finds the sandbox on its port."""
    found = settings_of("config.settings.local", tmp_path, SANDBOX_PORT="9101", SHOP_PORT="9100")
    assert found["api"] == "http://127.0.0.1:9101"
    assert found["shop"] == "http://127.0.0.1:9100"


def test_the_shop_uses_the_sandbox_keys_from_the_environment(tmp_path: Path) -> None:
    """SANDBOX_PUBLIC_KEY moves the demo's keys on both sides."""
    found = settings_of("config.settings.local", tmp_path, SANDBOX_PUBLIC_KEY="pk_other")
    assert found["public_key"] == "pk_other"


@pytest.mark.parametrize("secret", [None, "", "too-short"])
def test_production_refuses_to_start_without_a_secret_key(
    tmp_path: Path, secret: str | None
) -> None:
    """Production settings fail loudly without a real DJANGO_SECRET_KEY."""
    env = {} if secret is None else {"DJANGO_SECRET_KEY": secret}
    result = load_settings("config.settings.production", tmp_path, **env)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_production_starts_with_a_secret_key(tmp_path: Path) -> None:
    """With a long random key (and the rest of a production environment), production settings
    load, with DEBUG off."""
    from tests.test_production import PRODUCTION_ENV

    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "DJANGO_SETTINGS_MODULE"}
    found = settings_of("config.settings.production", tmp_path, **env)
    assert found["debug"] is False
