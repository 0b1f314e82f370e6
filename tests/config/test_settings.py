"""Settings come from the environment, with defaults that need no server at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.settings import PRODUCTION_ENV, load_settings, settings_of


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
    assert found["engine"] == "django_zero_downtime_migrations.backends.postgres"
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
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "DJANGO_SETTINGS_MODULE"}
    found = settings_of("config.settings.production", tmp_path, **env)
    assert found["debug"] is False


RETRY_AFTER_PROBE = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({"retry_after": settings.DATABASE_RETRY_AFTER}))
"""


def test_the_retry_after_of_a_database_outage_comes_from_the_environment(tmp_path: Path) -> None:
    """DATABASE_RETRY_AFTER is the Retry-After (seconds) of the 503s answered while the database
    cannot be reached: 5 by default; below 1 the settings refuse to load, naming it."""
    probe = RETRY_AFTER_PROBE
    assert settings_of("config.settings.local", tmp_path, probe=probe)["retry_after"] == 5
    found = settings_of("config.settings.local", tmp_path, probe=probe, DATABASE_RETRY_AFTER="12")
    assert found["retry_after"] == 12
    refused = load_settings(
        "config.settings.local", tmp_path, probe=probe, DATABASE_RETRY_AFTER="0"
    )
    assert refused.returncode != 0
    assert "DATABASE_RETRY_AFTER" in refused.stderr
