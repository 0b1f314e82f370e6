"""Fixtures shared by every test folder: one live provider sandbox per test session, the shop
configured to use it, a Celery worker, and what several folders' tests ask of the shop."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import settings as hypothesis_settings

from tests.helpers.cache import clear_cache
from tests.helpers.processes import processes  # noqa: F401  (the fixture, for every folder)
from tests.helpers.provider import PUBLIC_KEY, SECRET_KEY, Api, refuse_provider_calls
from tests.helpers.sandbox import (
    SandboxProcess,
    drop_sandbox_database,
    run_sandbox,
    sandbox_database_url,
)
from tests.helpers.shop import fill_catalogue
from tests.helpers.staff import sign_in_staff

# Fuzz tests can be replayed: every failure prints the blob that reproduces it
# (@reproduce_failure), and in CI each run draws the same examples (a fixed seed per test).
hypothesis_settings.register_profile("dev", print_blob=True)
hypothesis_settings.register_profile("ci", print_blob=True, derandomize=True, database=None)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Debian's Chromium, driven by Playwright (no browser is ever downloaded).
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _sandbox_database_name() -> str:
    """Its own database per shop database and test process, so that separate runs (and the
    processes of one) never share one."""
    shop = urlsplit(os.environ.get("DATABASE_URL", "")).path.strip("/") or "shop"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # one a process under pytest-xdist
    return f"test_sandbox_{shop}" + (f"_{worker}" if worker else "")


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxProcess]:
    """One live sandbox for the session: on PostgreSQL when the suite is, else SQLite."""
    tmp: Path = tmp_path_factory.mktemp("sandbox")
    database_url = sandbox_database_url(_sandbox_database_name())
    try:
        with run_sandbox(tmp, database_url=database_url) as process:
            yield process
    finally:
        drop_sandbox_database(database_url)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """The test database, created by pytest-django, commits without waiting for its WAL to reach
    the disk: durability is worth nothing to a database thrown away when the run ends (the
    embedded PostgreSQL of `make test` runs with fsync off for the same reason), and a machine's
    own PostgreSQL (CI's) otherwise spends most of a transactional test flushing. Every
    connection opened from now on (the live servers', the workers', the processes') has it."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
        with connection.cursor() as cursor:
            cursor.execute(f'ALTER DATABASE "{name}" SET synchronous_commit TO off')
            cursor.execute("SET synchronous_commit TO off")


@pytest.fixture
def api(sandbox: SandboxProcess) -> Iterator[Api]:
    """The API of a freshly reset sandbox."""
    client = Api(sandbox.base_url)
    response = client.post("/_sandbox/reset")
    assert response.status_code == 200, response.text
    yield client
    client.session.close()


@pytest.fixture
def provider(api: Api, settings: pytest.FixtureRequest) -> Api:
    """The shop configured to use the (reset) live sandbox, with the payment methods
    catalogue stored (as the refresh task stores it); the sandbox's API for checks."""
    import base64

    settings.PAYMENTS_API_BASE_URL = api.base_url
    settings.PAYMENTS_PUBLIC_KEY = PUBLIC_KEY
    settings.PAYMENTS_ACCESS_TOKEN = base64.b64encode(
        f"{PUBLIC_KEY}:{SECRET_KEY}".encode()
    ).decode()
    settings.PAYMENTS_AUTH_SCHEME = "Basic"
    settings.PAYMENTS_READ_TIMEOUT = 5
    fill_catalogue()
    return api


@pytest.fixture
def provider_gets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of every payment read from the provider (the real call is made)."""
    from payments.provider.client import PaymentsClient

    calls: list[str] = []
    original = PaymentsClient.get_payment

    def counting(self: PaymentsClient, payment_id: str) -> Any:
        calls.append(payment_id)
        return original(self, payment_id)

    monkeypatch.setattr(PaymentsClient, "get_payment", counting)
    return calls


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every request the shop tries to send to the provider; none gets out (provider down)."""
    return refuse_provider_calls(monkeypatch)


@pytest.fixture(autouse=True)
def reservations_looked_at_anew() -> None:
    """The soonest end of a reservation noted by an earlier test (on its clock, moved or not)
    is not this test's: its pages look in the database first."""
    from django.core.cache import cache

    from checkout.reservations.rules import SOONEST_END

    try:
        cache.delete(SOONEST_END)
    except Exception:  # a test whose cache is away: nothing was noted there either
        pass


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    """The test starts and ends with an empty cache: no rate-limit count, marker or catalogue
    carried between tests."""
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def admin_client(db: None, admin_user: Any) -> Any:
    """pytest-django's superuser's browser, signed in to the admin with a second factor."""
    from django.test import Client

    return sign_in_staff(Client(), admin_user)


@pytest.fixture
def in_english(settings: Any) -> None:
    """The staff's English texts, for tests that read them (the Spanish admin is checked on
    its own)."""
    settings.LANGUAGE_CODE = "en"


@pytest.fixture(scope="session")
def playwright_browser() -> Iterator[Any]:
    """One Chromium for the whole session (two sync Playwrights cannot share a thread)."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's chromium is not installed (apt-get install chromium)")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def json_log() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The console handler as production builds it (request id, redaction, JSON), on the root
    logger at INFO; returns a function giving the lines written so far, parsed."""
    import io
    import json
    import logging

    from config.logging import RedactSecrets, console_formatter
    from core.request_id import RequestIdFilter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactSecrets())
    handler.setFormatter(console_formatter("json"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)

    def lines() -> list[dict[str, Any]]:
        with handler.lock:  # type: ignore[union-attr]
            text = stream.getvalue()
        return [json.loads(line) for line in text.splitlines()]

    yield lines
    root.removeHandler(handler)
    root.setLevel(level)


# --- A real Celery worker (celery.contrib.pytest) on the shop's own app and broker ------------


@pytest.fixture(scope="session")
def celery_app() -> Any:
    """The shop's Celery app as configured from settings: Redis when REDIS_URL is set."""
    from config.celery import app

    app.loader.import_default_modules()  # every task registered, as on a worker
    if app.conf.broker_url.startswith("redis://"):
        # The test's worker stops within a tenth of a second, not the second its wait for a
        # task (BRPOP) lasts by default: one is started and stopped for every test that has one.
        app.conf.broker_transport_options = {
            **(app.conf.broker_transport_options or {}),
            "polling_interval": 0.1,
        }
    return app


@pytest.fixture(scope="session")
def celery_worker_pool() -> str:
    return "threads"


@pytest.fixture(scope="session")
def celery_worker_parameters() -> dict[str, Any]:
    return {
        "concurrency": 4,
        "perform_ping_check": False,
        "shutdown_timeout": 60,
        "loglevel": "WARNING",
    }


@pytest.fixture
def empty_broker(celery_app: Any, request: pytest.FixtureRequest) -> Iterator[None]:
    """No task or marker left over from another test, before the worker starts (the payment
    methods catalogue stored again when the test is on the live sandbox)."""

    clear_cache()
    celery_app.control.purge()
    if "provider" in request.fixturenames:
        request.getfixturevalue("provider")
        fill_catalogue()
    yield
    clear_cache()


@pytest.fixture
def run_queued(celery_app: Any, empty_broker: None) -> Any:
    """Run here and now, as a worker would, the tasks waiting in the broker (in the order they
    were queued, inside the test's transaction); returns their names. A task's on-commit work
    runs once the task is done, as its commit on a worker would run it (so what a task queues on
    commit is run too)."""
    from django.db import connection
    from django.test import TestCase

    from tests.helpers.broker import take_queued

    celery_app.loader.import_default_modules()  # every app's tasks, as a worker finds them

    def run() -> list[str]:
        ran: list[str] = []
        for _ in range(10):  # and those the tasks queue in turn
            queued = take_queued(celery_app)
            if not queued:
                break
            for name, args in queued:
                start = len(connection.run_on_commit)
                with TestCase.captureOnCommitCallbacks(execute=True):
                    celery_app.tasks[name].apply(args=args)
                del connection.run_on_commit[start:]  # committed: never run a second time
                ran.append(name)
        return ran

    return run


@pytest.fixture
def worker(empty_broker: None, celery_worker: Any) -> Iterator[Any]:
    """A real worker in this process (threads pool) on an empty queue. Its threads open their
    own database connections; they are closed after each task so the test database can go."""
    from celery.signals import task_postrun
    from django.db import connections

    def close_connections(**_: Any) -> None:
        connections.close_all()

    task_postrun.connect(close_connections, weak=False)
    yield celery_worker
    task_postrun.disconnect(close_connections)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Which database and Redis this run uses (make test: PostgreSQL and Redis, always)."""
    from django.conf import settings

    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    lines = [f"database: {engine}; redis: {'yes' if settings.REDIS_URL else 'no'}"]
    if engine != "postgresql" or not settings.REDIS_URL:
        lines.append(
            "not the suite's own setup: tests that need PostgreSQL or Redis skip, saying why; "
            "`make test` runs them all on a PostgreSQL and a Redis of its own"
        )
    return lines
