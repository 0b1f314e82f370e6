"""The shop through a PostgreSQL outage, as production runs it: gunicorn as `config/gunicorn.py`
ships it (threaded workers, persistent database connections with health checks), on a PostgreSQL
of the test's own (the suite's database is never touched), stopped with `pg_ctl stop -m fast`
for a few seconds under the load of shoppers, the payment page's status checks and staff in the
admin. While it is away every answer is the normal one or 503 with `Retry-After` (the shop's page,
or its JSON error); once it is back the shop serves again by itself within a few seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import requests

from checkout.management.commands.seed_demo import DEMO_ADMIN_PASSWORD, DEMO_ADMIN_USERNAME
from tests.helpers.paths import ROOT
from tests.helpers.servers import free_port
from tests.helpers.shop import CUSTOMER
from tests.helpers.staff import sign_in_staff
from tests.helpers.waiting import wait_until
from tools.services_for_tests import EmbeddedPostgres

pytestmark = pytest.mark.timeout(150)

DOWN_SECONDS = 5
RECOVERY_SECONDS = 5  # once PostgreSQL takes connections again, every kind of request is served
RETRY_AFTER = 3
PRODUCT = "taza-talavera"  # of seed_demo's catalogue
UNAVAILABLE_PAGE = "Volvemos en un momento"
UNAVAILABLE_JSON = {
    "error": "unavailable",
    "message": "Este servicio no está disponible por un momento. Vuelve a intentarlo.",
}


@pytest.fixture
def postgres_of_its_own(tmp_path: Path) -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL for this test alone, with the shop's database migrated and seeded (the demo
    catalogue and staff); stopped and removed at the end, however the test ends."""
    server = EmbeddedPostgres(tmp_path / "postgres")
    try:
        server.start()
        server.createdb("shop")
        yield server
    finally:
        with suppress(subprocess.CalledProcessError):  # already stopped
            server.stop("immediate")
        shutil.rmtree(server.data, ignore_errors=True)


def shop_env(postgres: EmbeddedPostgres, tmp_path: Path, port: int) -> dict[str, str]:
    """The shop's environment: its own database, an embedded broker and cache in the test's
    folder (no Redis: this test is about the database), DEBUG off as in production."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DATABASE_URL") and not key.startswith("CELERY_BROKER")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DJANGO_DEBUG="false",
        DATABASE_URL=postgres.url("shop"),
        DATABASE_RETRY_AFTER=str(RETRY_AFTER),
        SHOP_VAR_DIR=str(tmp_path / "var"),
        SHOP_BASE_URL=f"http://127.0.0.1:{port}",
        PAYMENTS_API_BASE_URL=f"http://127.0.0.1:{free_port()}",  # no provider is called
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_WORKERS="2",
        LOG_FORMAT="text",
    )
    return env


@dataclass
class Shop:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def shop(postgres_of_its_own: EmbeddedPostgres, tmp_path: Path) -> Iterator[Shop]:
    """The shop under gunicorn (config/gunicorn.py) on that PostgreSQL."""
    port = free_port()
    env = shop_env(postgres_of_its_own, tmp_path, port)
    for command in (["migrate", "--noinput", "-v0"], ["seed_demo", "-v0"]):
        subprocess.run(
            [sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, timeout=120
        )
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi"],
            cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    served = Shop(f"http://127.0.0.1:{port}", process, log)
    try:

        def up() -> bool:
            assert process.poll() is None, served.log_text()
            with suppress(requests.RequestException):
                return requests.get(f"{served.url}/healthz", timeout=5).status_code == 200
            return False

        wait_until(up, timeout=60, interval=0.2)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# --- The shop's visitors ------------------------------------------------------------------------


def csrf_post(browser: requests.Session, url: str, data: dict[str, str]) -> requests.Response:
    """A form posted as the browser would, with the CSRF token its cookie holds."""
    token = browser.cookies["csrftoken"]
    return browser.post(url, data={**data, "csrfmiddlewaretoken": token}, allow_redirects=False)


def shopper_with_a_cart(shop: Shop) -> requests.Session:
    """A shopper's browser that put a product in its cart (its session, in the database)."""
    browser = requests.Session()
    assert browser.get(f"{shop.url}/productos/{PRODUCT}/", timeout=10).status_code == 200
    added = csrf_post(browser, f"{shop.url}/carrito/agregar/{PRODUCT}/", {"quantity": "1"})
    assert added.status_code == 302, added.text[:500]
    return browser


def place_order(shop: Shop) -> tuple[requests.Session, str]:
    """A shopper's browser that put a product in its cart and placed the order; its reference,
    once its payment page answers."""
    browser = shopper_with_a_cart(shop)
    placed = csrf_post(browser, f"{shop.url}/checkout/", CUSTOMER)
    assert placed.status_code == 302, placed.text[:1000]
    pay_page = placed.headers["Location"]  # /pedidos/<reference>/pagar/
    assert browser.get(f"{shop.url}{pay_page}", timeout=10).status_code == 200
    return browser, pay_page.strip("/").split("/")[1]


def staff(shop: Shop) -> requests.Session:
    """The demo staff member, signed in to the admin."""
    browser = requests.Session()
    return sign_in_staff(browser, DEMO_ADMIN_USERNAME, DEMO_ADMIN_PASSWORD, url=shop.url)


@dataclass
class Answer:
    kind: str  # "page", "json" or "admin"
    path: str
    started: float
    ended: float = 0.0
    status: int | None = None
    retry_after: str | None = None
    content_type: str = ""
    body: str = ""
    json: object = None
    error: str = ""


class Visitors:
    """Browsers asking the shop over and over, each in a thread of its own, every answer (or
    failure to get one) recorded."""

    def __init__(self, shop: Shop) -> None:
        self.shop = shop
        self.answers: list[Answer] = []
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []

    def add(self, kind: str, browser: requests.Session, paths: list[str]) -> None:
        thread = threading.Thread(target=self._ask, args=(kind, browser, paths), daemon=True)
        self.threads.append(thread)

    def _ask(self, kind: str, browser: requests.Session, paths: list[str]) -> None:
        while not self.stopping.is_set():
            for path in paths:
                answer = Answer(kind, path, time.monotonic())
                try:
                    response = browser.get(
                        f"{self.shop.url}{path}", timeout=10, allow_redirects=False
                    )
                except requests.RequestException as exc:  # a dropped connection, a timeout
                    answer.error = repr(exc)
                else:
                    answer.status = response.status_code
                    answer.retry_after = response.headers.get("Retry-After")
                    answer.content_type = response.headers.get("Content-Type", "")
                    answer.body = response.text
                    if answer.content_type.startswith("application/json"):
                        answer.json = response.json()
                answer.ended = time.monotonic()
                self.answers.append(answer)
                time.sleep(0.05)

    def __enter__(self) -> Visitors:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=15)

    def served_since(self, moment: float) -> set[str]:
        """The kinds of request answered 200 that were sent after `moment`."""
        return {a.kind for a in self.answers if a.started > moment and a.status == 200}


def wrong(answer: Answer) -> bool:
    """Neither a normal answer nor the shop's 503 with Retry-After (its page for pages and the
    admin, its JSON error for the JSON endpoint)."""
    if answer.error or answer.status is None:
        return True
    if answer.status == 200:
        return False
    if answer.status != 503 or answer.retry_after != str(RETRY_AFTER):
        return True
    if answer.kind == "json":
        return not answer.content_type.startswith("application/json") or (
            answer.json != UNAVAILABLE_JSON
        )
    return not answer.content_type.startswith("text/html") or UNAVAILABLE_PAGE not in answer.body


def test_the_shop_answers_503_while_postgresql_is_away_and_recovers_by_itself(
    postgres_of_its_own: EmbeddedPostgres, shop: Shop
) -> None:
    """Given the shop under gunicorn with three shoppers browsing the home page, a product and
    their cart, one payment page asking its order's payment status (JSON) and a staff member
    reading the orders in the admin, all at once, when PostgreSQL is stopped (`pg_ctl stop -m
    fast`: sessions ended, connections refused) for 5 s and started again, then every answer
    is a normal one or a 503 with `Retry-After: DATABASE_RETRY_AFTER` (the shop's page, or its
    JSON error for the JSON endpoint), never a 500 and never a dropped connection; each kind of
    request did meet the outage; within 5 s of PostgreSQL taking connections again every kind is
    served again with nothing restarted, and an order can be placed; the outage is logged as
    warnings, without a traceback."""
    visitors = Visitors(shop)
    for _ in range(3):
        visitors.add(
            "page", shopper_with_a_cart(shop), ["/", f"/productos/{PRODUCT}/", "/carrito/"]
        )
    paying, reference = place_order(shop)
    visitors.add("json", paying, [f"/pedidos/{reference}/estado-pago/"])
    visitors.add("admin", staff(shop), ["/admin/checkout/order/"])

    with visitors:
        wait_until(lambda: visitors.served_since(0) == {"page", "json", "admin"}, timeout=30)
        stopped = time.monotonic()
        postgres_of_its_own.stop("fast")
        try:
            time.sleep(DOWN_SECONDS)
        finally:
            postgres_of_its_own.start()
        back = time.monotonic()
        wait_until(
            lambda: visitors.served_since(back) == {"page", "json", "admin"},
            timeout=RECOVERY_SECONDS,
            interval=0.05,
        )
        time.sleep(1)

    answers = visitors.answers
    bad = [a for a in answers if wrong(a)]
    assert not bad, [(a.kind, a.path, a.status, a.retry_after, a.error, a.body[:300]) for a in bad]
    outage = {a.kind for a in answers if stopped <= a.started <= back and a.status == 503}
    assert outage == {"page", "json", "admin"}
    assert not [a for a in answers if a.ended < stopped and a.status != 200]
    assert shop.process.poll() is None

    _browser, placed = place_order(shop)
    with psycopg.connect(postgres_of_its_own.url("shop")) as conn:
        found = conn.execute("SELECT count(*) FROM checkout_order WHERE reference = %s", [placed])
        assert found.fetchone() == (1,)
    log = shop.log_text()
    assert "WARNING django.request" in log and "database unavailable: GET " in log
    assert "Traceback" not in log and "ERROR" not in log
