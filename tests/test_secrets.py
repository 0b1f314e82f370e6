"""No card number, CVV, API credential, card token or webhook token is ever written down.

Each test drives the shop through its real paths against the live sandbox (payments that are
approved, challenged, declined, failed, timed out or answered 503; webhooks with right and wrong
tokens; staff captures and refunds; unexpected errors), running the tasks that call the provider
as a worker does (the card token travels from the pay attempt to the create task sealed in the
database), then gathers everything the shop wrote:
every log line as the console handler writes it (its redacting filter applied), every error
mail, every table of the database (dumpdata, raw SQL and decoded sessions) and every page or
JSON answer it served. All of it is scanned for the secrets of the run and for any Luhn-valid
card number; a finding names the log line, the table row and column, the mail or the page.
"""

from __future__ import annotations

import io
import json
import logging
import re
import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from html import unescape
from typing import Any

import pytest
import requests
from celery import current_app
from django.contrib.sessions.models import Session
from django.core import mail
from django.core.management import call_command
from django.db import connection
from django.http import HttpResponse
from django.test import Client, TestCase
from django.urls import reverse
from django.utils.log import AdminEmailHandler

from checkout.models import Order, Product
from config.logging import RedactSecrets, luhn_valid
from payments.catalogue.calls import payment_methods_refresh
from payments.models import Payment
from payments.provider.client import get_client
from payments.statuses import PaymentStatus
from tests.factories import ProductFactory
from tests.helpers.broker import take_queued
from tests.helpers.cache import clear_cache
from tests.helpers.provider import (
    DECLINED,
    PROVIDER_ERROR,
    PUBLIC_KEY,
    SECRET_KEY,
    THREE_DS,
    VISA,
    Api,
)
from tests.helpers.servers import free_port
from tests.helpers.shop import CUSTOMER, fill_catalogue
from tests.helpers.staff import sign_in_staff
from webhooks.calls import webhook_process
from webhooks.models import WebhookEvent, WebhookState

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

ADMINS = [("Operaciones", "ops@tienda.example")]
# 13 to 19 digits, possibly grouped by single spaces or dashes, standing on their own, with a
# card network's first digit (2 to 6: Mastercard 2-series, Amex, Visa, Mastercard, Discover).
# Other first digits are left out: Python object ids (15 digits from 1, 14 from 9, in error
# report contexts) and millisecond timestamps would pass the Luhn check one time in ten.
CARD_LIKE = re.compile(r"(?<![0-9A-Za-z-])[2-6](?:[ -]?\d){12,18}(?![0-9A-Za-z-])")
# A CVV as a JSON, Python or form pair: "cvv": "123", 'cvv': '123', cvv=123.
CVV_PAIR = re.compile(r"""["']?\bcvv["']?\s*[:=]\s*["']?\d{3,4}\b""", re.IGNORECASE)
THREE_DS_CODE = "123456"  # the sandbox's passing one-time code
READ = "payments.tasks.payment_refresh_task"
STAFF_ACTION = "payments.tasks.staff_action_run_task"


# --- What is looked for, and where ------------------------------------------------------------


@dataclass(frozen=True)
class Secret:
    what: str
    value: str
    # Sources (by label) where the value is expected, e.g. the public key on the payment page,
    # where the provider's SDK needs it.
    allowed: Callable[[str], bool] = lambda _label: False


@dataclass(frozen=True)
class Finding:
    what: str
    where: str
    excerpt: str  # around the first occurrence
    times: int = 1

    def __str__(self) -> str:
        times = f" ({self.times} times)" if self.times > 1 else ""
        return f"{self.what} in {self.where}{times}: …{self.excerpt}…"


def spaced(number: str) -> str:
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4))


def scan(sources: list[tuple[str, str]], hidden: list[Secret]) -> list[Finding]:
    """Every place where a secret, a CVV pair or a Luhn-valid card number appears."""

    def mask(text: str) -> str:
        for secret in sorted(hidden, key=lambda s: -len(s.value)):
            if not secret.what.startswith("card number"):
                text = text.replace(secret.value, f"⟨{secret.what}⟩")
        return text

    def excerpt(text: str, start: int, end: int) -> str:
        return mask(text[max(0, start - 80) : end + 80]).replace("\n", "⏎")

    findings: list[Finding] = []
    for label, raw in sources:
        text = unescape(raw)  # pages and HTML mail: &quot;cvv&quot; is "cvv"
        where = mask(label)
        for secret in hidden:
            at = text.find(secret.value)
            if at >= 0 and not secret.allowed(label):
                end = at + len(secret.value)
                times = text.count(secret.value)
                findings.append(Finding(secret.what, where, excerpt(text, at, end), times))
        for match in CVV_PAIR.finditer(text):
            findings.append(Finding("a CVV", where, excerpt(text, match.start(), match.end())))
        for match in CARD_LIKE.finditer(text):
            digits = re.sub(r"\D", "", match.group())
            if luhn_valid(digits):
                findings.append(
                    Finding(
                        f"a Luhn-valid card number ({digits})",
                        where,
                        excerpt(text, match.start(), match.end()),
                    )
                )
    return findings


# --- The harness ------------------------------------------------------------------------------


class RecordingClient(Client):
    """A browser whose every answer (page, JSON, error page) is kept for the scan."""

    def __init__(self, answers: list[tuple[str, str]], **defaults: Any) -> None:
        defaults.setdefault("SERVER_NAME", "localhost")
        super().__init__(**defaults)
        self.answers = answers

    def request(self, **request: Any) -> Any:
        response = super().request(**request)
        label = f"answer {request['REQUEST_METHOD']} {request['PATH_INFO']} {response.status_code}"
        body = b"".join(response) if response.streaming else response.content
        self.answers.append((label, body.decode(errors="replace")))
        return response


def console_handler() -> logging.Handler:
    """The handler production logs go through (settings.LOGGING's "console")."""
    handler = next((h for h in logging.getLogger().handlers if h.get_name() == "console"), None)
    assert handler is not None, "the root logger has no 'console' handler"
    assert any(isinstance(f, RedactSecrets) for f in handler.filters), handler.filters
    return handler


@dataclass
class Harness:
    """Captures logs, mail and answers while a test drives the shop; `assert_clean` scans."""

    provider: Api
    settings: Any
    webhook_token: str
    log: io.StringIO = field(default_factory=io.StringIO)
    answers: list[tuple[str, str]] = field(default_factory=list)
    card_numbers: set[str] = field(default_factory=set)
    card_tokens: set[str] = field(default_factory=set)

    # Driving the shop.

    def browser(self, **defaults: Any) -> RecordingClient:
        return RecordingClient(self.answers, **defaults)

    def card_token(self, number: str) -> str:
        """Tokenize a card at the sandbox, as the provider's SDK does in the browser."""
        self.card_numbers.add(number)
        token = str(self.provider.card_token(number, cvv="123")["id"])
        self.card_tokens.add(token)
        return token

    def place_order(self, browser: Client, product: Product, quantity: int = 1) -> Order:
        """Through the storefront pages: product, cart, checkout form, payment page."""
        assert browser.get(reverse("checkout:home")).status_code == 200
        assert browser.get(reverse("checkout:product", args=[product.slug])).status_code == 200
        added = browser.post(
            reverse("checkout:cart_add", args=[product.slug]), {"quantity": quantity}
        )
        assert added.status_code == 302
        assert browser.get(reverse("checkout:cart")).status_code == 200
        assert browser.get(reverse("checkout:checkout")).status_code == 200
        placed = browser.post(reverse("checkout:checkout"), CUSTOMER)
        assert placed.status_code == 302, placed
        reference = placed["Location"].rstrip("/").split("/")[-2]
        assert browser.get(reverse("checkout:pay", args=[reference])).status_code == 200
        return Order.objects.get(reference=reference)

    def pay(
        self, browser: Client, order: Order, number: str, *, last_try: bool = False
    ) -> dict[str, Any]:
        """One payment attempt from the payment page: tokenize, POST the JSON attempt (taken at
        once), send its create as its task does (`send_creates`), then the status the page
        polls for."""
        body = {
            "card_token": self.card_token(number),
            "attempt_id": uuid.uuid4().hex,
            "session_id": "sess-secrets-test",
            "user_agent": "pytest",
        }
        response = browser.post(
            reverse("checkout:pay_attempt", args=[order.reference]),
            data=json.dumps(body),
            content_type="application/json",
        )
        assert response.status_code == 202, response.content
        assert response.json()["result"] == "processing", response.content
        self.send_creates(order, last_try=last_try)
        return self.check(browser, order)

    def send_creates(self, *orders: Order, last_try: bool = False) -> None:
        """Run the create task of each attempt of `orders` waiting to be sent as a worker does:
        until the provider answers, or (`last_try`) as its last retry, given up and logged as
        failed when the provider still says nothing (the attempt stays unknown, its request
        kept sealed)."""
        from payments.statuses import IN_FLIGHT
        from payments.tasks import payment_send_create_task as task

        waiting = Payment.objects.filter(
            status__in=IN_FLIGHT, external_reference__in=[order.reference for order in orders]
        ).exclude(create_request="")
        for pk in waiting.order_by("pk").values_list("pk", flat=True):
            task.apply(args=[pk], retries=task.max_retries if last_try else 0)

    def run_queued(self) -> list[str]:
        """Run the tasks the shop queued (a 3-D Secure payment's read, an order's sync or
        mail…) as a worker would, and those they queue in turn; their names."""
        from celery import current_app

        ran: list[str] = []
        for _ in range(10):
            queued = take_queued(current_app)
            if not queued:
                break
            for name, args in queued:
                with TestCase.captureOnCommitCallbacks(execute=True):
                    current_app.tasks[name].apply(args=args)
                ran.append(name)
        return ran

    def check(self, browser: Client, order: Order) -> dict[str, Any]:
        response = browser.get(reverse("checkout:payment_status", args=[order.reference]))
        assert response.status_code == 200, response.content
        return response.json()

    def fault(self, **fault: Any) -> None:
        response = self.provider.post("/_sandbox/faults", fault)
        assert response.status_code == 201, response.text

    def notify(self, browser: Client, payment_id: str, token: str | None = None) -> HttpResponse:
        body = {"id": payment_id, "origin": "payments-api", "event_type": "UPDATE"}
        return browser.post(
            reverse("webhooks:payments", args=[token or self.webhook_token]),
            data=json.dumps(body),
            content_type="application/json",
        )

    # Gathering what the shop wrote.

    def secrets(self) -> list[Secret]:
        # Card tokens the sandbox holds (those of staff-created payments too).
        for remote in self.provider.payments():
            token = (remote.get("payment_method") or {}).get("token")
            if token:
                self.card_tokens.add(str(token))

        def on_payment_page(label: str) -> bool:  # the SDK is mounted with the public key
            return bool(re.fullmatch(r"answer GET /pedidos/[^/]+/pagar/ 200", label))

        found = [
            Secret("the secret key", SECRET_KEY),
            Secret("the public key", PUBLIC_KEY, allowed=on_payment_page),
            Secret("the access token", self.settings.PAYMENTS_ACCESS_TOKEN),
            Secret("the webhook token", self.webhook_token),
            Secret("Django's SECRET_KEY", self.settings.SECRET_KEY),
        ]
        found += [Secret(f"card token {t}", t) for t in sorted(self.card_tokens)]
        for number in sorted(self.card_numbers):
            found += [
                Secret(f"card number {number}", number),
                Secret(f"card number {spaced(number)}", spaced(number)),
            ]
        return found

    def sources(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for number, line in enumerate(self.log.getvalue().splitlines(), 1):
            found.append((f"log line {number}", line))
        for number, message in enumerate(mail.outbox, 1):
            found.append((f"mail {number} subject", str(message.subject)))
            found.append((f"mail {number} body", str(message.body)))
            for index, (content, _mimetype) in enumerate(getattr(message, "alternatives", [])):
                found.append((f"mail {number} alternative {index} (html)", str(content)))
        found += self.answers
        found += database_sources()
        found += cache_sources()
        return found

    def findings(self) -> list[Finding]:
        return scan(self.sources(), self.secrets())

    def assert_clean(self) -> None:
        findings = self.findings()
        assert not findings, f"{len(findings)} secret(s) written down:\n" + "\n".join(
            f"- {finding}" for finding in findings
        )


def database_sources() -> list[tuple[str, str]]:
    """The whole shop database: dumpdata, every column of every row of every table (raw SQL),
    and the decoded contents of every session."""
    found: list[tuple[str, str]] = []
    dump = io.StringIO()
    call_command("dumpdata", stdout=dump)
    for item in json.loads(dump.getvalue()):
        text = json.dumps(item["fields"], ensure_ascii=False)
        found.append((f"dumpdata {item['model']} pk={item.get('pk')}", text))
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names()):
            cursor.execute(f"SELECT * FROM {quote(table)}")  # names from the schema
            # The name comes first in each column's description: SQLite's are plain tuples.
            columns = [column[0] for column in cursor.description]
            for number, row in enumerate(cursor.fetchall(), 1):
                for column, value in zip(columns, row, strict=True):
                    if isinstance(value, bytes | memoryview):
                        value = bytes(value).decode(errors="replace")
                    found.append((f"table {table} row {number} column {column}", str(value)))
    for session in Session.objects.all():
        decoded = json.dumps(session.get_decoded(), default=str, ensure_ascii=False)
        found.append((f"session {session.session_key[:6]}… (decoded)", decoded))
    return found


def cache_sources() -> list[tuple[str, str]]:
    """Every value in the cache when it is Redis (rate limits, catalogue, queue markers)."""
    from django.core.cache import cache

    client_of = getattr(getattr(cache, "_cache", None), "get_client", None)
    if client_of is None:
        return []
    client = client_of()
    found: list[tuple[str, str]] = []
    for key in client.scan_iter():
        kind = client.type(key).decode()
        values: list[bytes] = []
        if kind == "string":
            values = [client.get(key) or b""]
        elif kind == "list":
            values = client.lrange(key, 0, -1)
        elif kind == "set":
            values = list(client.smembers(key))
        elif kind == "hash":
            values = [name + b"=" + value for name, value in client.hgetall(key).items()]
        for value in values:
            found.append((f"cache {key.decode(errors='replace')}", value.decode(errors="replace")))
    return found


@pytest.fixture
def harness(provider: Api, settings: Any) -> Iterator[Harness]:
    """The shop on the live sandbox as in production (DEBUG off, a webhook token, error mail to
    ADMINS), and every log record of every logger, from DEBUG up, written through a copy of the
    console handler (same formatter, same redacting filter) into a buffer."""

    clear_cache()  # rate limit counters of other tests
    settings.DEBUG = False
    settings.PAYMENTS_SECRET_KEY = SECRET_KEY
    settings.PAYMENTS_WEBHOOK_TOKEN = secrets.token_urlsafe(24)
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"  # webhooks go nowhere
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    settings.ADMINS = ADMINS
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.ALLOWED_HOSTS = ["localhost", "testserver", "127.0.0.1"]
    mail.outbox = []
    run = Harness(provider, settings, settings.PAYMENTS_WEBHOOK_TOKEN)
    # Every app's tasks, as a worker finds them (before the capture: this sets logging up).
    current_app.loader.import_default_modules()

    console = console_handler()
    capture = logging.StreamHandler(run.log)
    capture.setLevel(logging.DEBUG)
    capture.setFormatter(console.formatter)
    for log_filter in console.filters:
        capture.addFilter(log_filter)
    root = logging.getLogger()
    loggers = [root] + [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    levels = {logger: logger.level for logger in loggers}
    targets = [root] + [logger for logger in loggers if logger is not root and not logger.propagate]
    # Error mail as the project sends it (Django's mail_admins handler), with its HTML report.
    mailers = [
        handler
        for handler in logging.getLogger("django").handlers
        if isinstance(handler, AdminEmailHandler)
    ]
    assert mailers, "no AdminEmailHandler on the 'django' logger"
    html_before = [handler.include_html for handler in mailers]
    for logger in loggers:
        if logger is root or logger.level > logging.DEBUG:
            logger.setLevel(logging.DEBUG)
    for logger in targets:
        logger.addHandler(capture)
    for handler in mailers:
        handler.include_html = True
    try:
        yield run
    finally:
        for logger in targets:
            logger.removeHandler(capture)
        for logger, level in levels.items():
            logger.setLevel(level)
        for handler, include_html in zip(mailers, html_before, strict=True):
            handler.include_html = include_html
        clear_cache()


@pytest.fixture
def product() -> Product:
    return ProductFactory(
        slug="taza-secretos",
        name="Taza de talavera",
        price=Decimal("289.00"),
        stock=50,
        active=True,
        image="img/products/taza-talavera.svg",
    )


@pytest.fixture
def staff(django_user_model: Any, harness: Harness) -> RecordingClient:
    """A superuser's browser on the admin."""
    user = django_user_model.objects.create_superuser(
        username="root", email="root@tienda.example", password="a-long-test-password"
    )
    browser = harness.browser()
    sign_in_staff(browser, user)
    return browser


def admin_pages(staff: Client) -> None:
    """The list and change pages of every model in the admin, and each payment's history."""
    from django.contrib import admin

    for model in admin.site._registry:
        name = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        assert staff.get(reverse(f"{name}_changelist")).status_code == 200, name
        for pk in model._default_manager.values_list("pk", flat=True):
            assert staff.get(reverse(f"{name}_change", args=[pk])).status_code == 200, name
    for payment in Payment.objects.all():
        url = reverse("admin:payments_payment_history", args=[payment.pk])
        assert staff.get(url).status_code == 200


# --- The scanner itself -----------------------------------------------------------------------


def test_the_scan_finds_each_kind_of_secret() -> None:
    """Given text holding a card number (plain or spaced), a CVV pair, a token and an unknown
    Luhn-valid number, when scanned, then each is reported with where it was; ids, dates,
    amounts and allowed places are not."""
    token = str(uuid.uuid4())
    hidden = [
        Secret("card token", token),
        Secret(f"card number {VISA}", VISA),
        Secret(f"card number {spaced(VISA)}", spaced(VISA)),
        Secret("the public key", PUBLIC_KEY, allowed=lambda label: label == "pay page"),
    ]
    sources = [
        ("log line 1", f"paid with 4242 4242 4242 4242 and {token}"),
        ("table t row 1 column snapshot", "{'card': {'number': '5555555555554444', 'cvv': '123'}}"),
        ("mail 1 body", "cvv=999"),
        ("pay page", f'data-public-key="{PUBLIC_KEY}"'),
        ("clean", f"payment {uuid.uuid4()} request_id={uuid.uuid4().hex} 2026-11-22 05:54:22"),
        ("clean too", "order ORD-12345 total 1234567890123.00 phone 5512345678"),
        ("an object id", "{'id': 139868224142657, 'at': 1763792991231}"),  # Luhn-valid, from 1
    ]
    found = {(f.what, f.where) for f in scan(sources, hidden)}
    assert found == {
        ("card token", "log line 1"),
        (f"card number {spaced(VISA)}", "log line 1"),
        ("a Luhn-valid card number (4242424242424242)", "log line 1"),
        ("a Luhn-valid card number (5555555555554444)", "table t row 1 column snapshot"),
        ("a CVV", "table t row 1 column snapshot"),
        ("a CVV", "mail 1 body"),
    }


# --- Shoppers ---------------------------------------------------------------------------------


def test_shopper_payments_of_every_outcome_leave_no_secret(
    harness: Harness, product: Product
) -> None:
    """Given the shop on the live sandbox with a webhook token, when shoppers pay (approved,
    3-D Secure, declined, provider error), the provider times out and answers 503, and webhooks
    arrive with the right and wrong tokens, then no log line, table, page or answer holds a
    card number, CVV, credential, card token or the webhook token."""
    # The catalogue's refresh (a task) while the provider answers 503 to every try (a warning
    # with its traceback); then a refresh that stores it, and a payment page that shows it.
    harness.fault(path="/payment_methods", method="GET", status=503, times=4)
    assert payment_methods_refresh() is None
    fill_catalogue()
    harness.place_order(harness.browser(), product)

    # Approved.
    ana = harness.browser()
    paid = harness.place_order(ana, product)
    assert harness.pay(ana, paid, VISA)["result"] == "approved"
    assert harness.check(ana, paid)["result"] == "approved"

    # 3-D Secure: pending; the read the status check queues meets a 503, then a timeout; the
    # challenge passes.
    beto = harness.browser()
    challenged = harness.place_order(beto, product)
    pending = harness.pay(beto, challenged, THREE_DS)
    assert pending["result"] == "pending" and pending["three_ds_url"], pending
    harness.run_queued()
    harness.fault(path="/payments", method="GET", status=503, times=4)
    assert harness.check(beto, challenged)["result"] == "pending"
    assert READ in harness.run_queued()
    harness.settings.PAYMENTS_READ_TIMEOUT = 0.3
    harness.fault(path="/payments", method="GET", status=504, latency_ms=900, times=4)
    assert harness.check(beto, challenged)["result"] == "pending"
    assert READ in harness.run_queued()
    harness.settings.PAYMENTS_READ_TIMEOUT = 5
    answer = requests.post(
        pending["three_ds_url"], data={"action": "submit", "code": THREE_DS_CODE}, timeout=10
    )
    assert answer.status_code == 200, answer.text
    assert harness.check(beto, challenged)["result"] == "pending"  # the records: a read queued
    assert READ in harness.run_queued()
    assert harness.check(beto, challenged)["result"] == "approved"

    # Declined, then the provider's own error (0119: 500 AI1899), on one order.
    carla = harness.browser()
    refused = harness.place_order(carla, product)
    assert harness.pay(carla, refused, DECLINED)["result"] == "rejected"
    # A server failure is not proof that nothing was charged: not confirmed yet (the task's
    # last try, given up and logged with its traceback).
    assert harness.pay(carla, refused, PROVIDER_ERROR, last_try=True)["result"] == "unknown"

    # The create times out (answer never came), and on another order it meets a 503: not
    # confirmed; the task's retry sends the same request with the same key, and it is.
    harness.settings.PAYMENTS_READ_TIMEOUT = 0.3
    harness.fault(path="/payments", method="POST", status=504, latency_ms=900, times=4)
    dora = harness.browser()
    timed_out = harness.place_order(dora, product)
    assert harness.pay(dora, timed_out, VISA, last_try=True)["result"] == "unknown"
    harness.settings.PAYMENTS_READ_TIMEOUT = 5
    harness.fault(path="/payments", method="POST", status=503, times=4)
    eva = harness.browser()
    unavailable = harness.place_order(eva, product)
    assert harness.pay(eva, unavailable, VISA, last_try=True)["result"] == "unknown"
    harness.send_creates(timed_out, unavailable)
    assert harness.check(dora, timed_out)["result"] == "approved"
    assert harness.check(eva, unavailable)["result"] == "approved"

    # Webhooks: right token (processed), wrong tokens, wrong method, bad body, unknown id.
    provider = harness.browser()
    payment = Payment.objects.get(external_reference=paid.reference)
    assert harness.notify(provider, payment.provider_id or "").status_code == 200
    unknown_id = str(uuid.uuid4())
    assert harness.notify(provider, unknown_id).status_code == 200
    for payment_id in (payment.provider_id or "", unknown_id):
        webhook_process(payment_id=payment_id, task_id=f"task-{payment_id}")
    states = set(WebhookEvent.objects.values_list("state", flat=True))
    assert states == {WebhookState.PROCESSED, WebhookState.UNMATCHED}, states
    wrong = harness.webhook_token[:-1] + ("x" if harness.webhook_token[-1] != "x" else "y")
    for token in (wrong, "nope", harness.webhook_token.upper()):
        assert harness.notify(provider, payment.provider_id or "", token).status_code == 404
    url = reverse("webhooks:payments", args=[harness.webhook_token])
    assert provider.get(url).status_code == 405
    assert provider.post(url, data="{", content_type="application/json").status_code == 400
    assert provider.post(f"{url}extra/").status_code == 404  # Django logs "Not Found: <path>"

    # Every order's pages, once more after everything happened.
    for browser, order in (
        (ana, paid),
        (beto, challenged),
        (carla, refused),
        (dora, timed_out),
        (eva, unavailable),
    ):
        assert browser.get(reverse("checkout:order", args=[order.reference])).status_code == 200
        browser.get(reverse("checkout:pay", args=[order.reference]))
        harness.check(browser, order)

    # Then: nothing secret anywhere (and the run did write what it is scanned for).
    harness.run_queued()
    log = harness.log.getvalue()
    assert "payments-api POST /payments" in log and "Not Found: /webhooks/payments/" in log
    assert "payment methods catalogue unavailable" in log and "Traceback" in log
    assert "create unconfirmed" in log and "raised unexpected: PaymentOutcomeUnknown" in log
    assert Payment.objects.count() == 6
    harness.assert_clean()


# --- Staff ------------------------------------------------------------------------------------


def test_staff_captures_refunds_and_failures_leave_no_secret(
    harness: Harness, product: Product, staff: RecordingClient
) -> None:
    """Given authorizations paid by shoppers (manual capture), when staff capture, refund,
    cancel and refresh from the admin (each action done by its task, as a worker does), also
    while the provider answers 503 or its own error, then no log line, table or admin page
    holds a secret or a card number."""
    harness.settings.PAYMENTS_CAPTURE_METHOD = "manual"
    payments: list[Payment] = []
    for _ in range(4):
        shopper = harness.browser()
        order = harness.place_order(shopper, product)
        assert harness.pay(shopper, order, VISA)["result"] == "authorized"
        payments.append(Payment.objects.get(external_reference=order.reference))
    captured, unanswered, refused, released = payments

    def admin(action: str, payment: Payment, data: dict[str, str] | None = None) -> None:
        """Ask the action, run its task, and open the page that says its outcome."""
        url = reverse(f"admin:payments_payment_{action}", args=[payment.pk])
        if action != "refresh":
            assert staff.get(url).status_code == 200
        if data is not None or action in ("cancel", "refresh"):
            with TestCase.captureOnCommitCallbacks(execute=True):
                asked = staff.post(url, data or {})
            assert asked.status_code == 302
            assert STAFF_ACTION in harness.run_queued()
            assert staff.get(asked.url).status_code == 200

    # Capture part, then refund part of it with a reason.
    admin("capture", captured, {"amount": "200.00"})
    admin("refund", Payment.objects.get(pk=captured.pk), {"amount": "50.00", "reason": "roto"})
    # A capture whose answers are 503s: outcome unknown, then refreshed.
    harness.fault(path="/payments", method="PATCH", status=503, times=4)
    admin("capture", unanswered, {"amount": "289.00"})
    # A capture, then a refund the provider fails with its own error (500 AI1899).
    admin("capture", refused, {"amount": "289.00"})
    harness.fault(path="/refunds", method="POST", status=500, error_code="AI1899", times=1)
    admin("refund", Payment.objects.get(pk=refused.pk), {"amount": "10.00", "reason": "x"})
    # A cancelled authorization; a refresh.
    admin("cancel", released)
    admin("refresh", captured)

    statuses = {p.pk: p.status for p in Payment.objects.all()}
    assert statuses[captured.pk] == PaymentStatus.APPROVED
    assert statuses[released.pk] == PaymentStatus.CANCELLED
    admin_pages(staff)
    harness.assert_clean()


# --- Unexpected errors ------------------------------------------------------------------------


def _break(monkeypatch: pytest.MonkeyPatch, where: str = "transport") -> None:
    """Make a payment attempt fail unexpectedly. While the attempt is stored (in the request):
    sealing its create request, which holds the card token. In the create task: deep in the
    transport, where the request's body (card token, webhook address) and headers (credentials)
    are locals; or after the provider answered, while its payment (and its raw body) is being
    applied."""

    def broken_fernet() -> Any:
        raise RuntimeError("the sealing key cannot be derived")

    def broken_request(method: str, url: str, **kwargs: Any) -> Any:
        raise RuntimeError(f"connection pool broke during {method} {url}")

    def broken_status(remote: Any) -> str:
        raise RuntimeError(f"cannot map the status of {remote}")

    if where == "sealing":
        import payments.attempts.sealed

        monkeypatch.setattr(payments.attempts.sealed, "_fernet", broken_fernet)
    elif where == "transport":
        monkeypatch.setattr(get_client().session, "request", broken_request)
    else:
        import payments.snapshots

        monkeypatch.setattr(payments.snapshots, "local_status", broken_status)


def _attempt(harness: Harness, browser: Client, order: Order) -> HttpResponse:
    body = {
        "card_token": harness.card_token(VISA),
        "attempt_id": uuid.uuid4().hex,
        "session_id": "sess-secrets-test",
        "user_agent": "pytest",
    }
    return browser.post(
        reverse("checkout:pay_attempt", args=[order.reference]),
        data=json.dumps(body),
        content_type="application/json",
        HTTP_ACCEPT="text/html",
    )


def test_an_unexpected_error_storing_an_attempt_mails_no_secret(
    harness: Harness, product: Product, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given ADMINS and DEBUG off, when a payment attempt fails with an unexpected exception
    while it is stored (its create request, card token included, being sealed), then the
    shopper gets a 500 and the error mail (text and HTML report) and the log hold no secret."""
    shopper = harness.browser(raise_request_exception=False)
    order = harness.place_order(shopper, product)
    _break(monkeypatch, "sealing")

    response = _attempt(harness, shopper, order)

    assert response.status_code == 500
    assert len(mail.outbox) == 1, [m.subject for m in mail.outbox]
    report = mail.outbox[0]
    assert "RuntimeError" in report.body and report.alternatives, report.subject
    assert "order_pay" in report.body and "seal" in report.body  # the frames, not their secrets
    harness.assert_clean()


@pytest.mark.parametrize("where", ["transport", "after the answer"])
def test_an_unexpected_error_report_mails_no_secret(
    harness: Harness, product: Product, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Given ADMINS and DEBUG off, when the create task of a payment attempt fails with an
    unexpected exception while the card token (its unsealed request) and the credentials are
    local variables, then the shopper's attempt was taken (202, no provider call in the
    request), the task's failure is logged with its traceback, and no log line, mail, table or
    answer holds them."""
    shopper = harness.browser(raise_request_exception=False)
    order = harness.place_order(shopper, product)
    _break(monkeypatch, where)

    response = _attempt(harness, shopper, order)
    assert response.status_code == 202, response.content
    harness.send_creates(order)

    log = harness.log.getvalue()
    assert "raised unexpected: RuntimeError" in log and "Traceback" in log, log
    assert "payment_send_create" in log  # the frames are there, their secrets are not
    assert harness.check(shopper, order)["result"] == "processing"  # sent again later
    harness.assert_clean()


def test_the_debug_error_page_shows_no_card_token(
    harness: Harness, product: Product, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given DEBUG on (development), when a payment attempt fails unexpectedly while its
    create request, card token included, is being sealed, then Django's technical 500 page
    hides the card token (sensitive_variables) and the credentials."""
    shopper = harness.browser(raise_request_exception=False)
    order = harness.place_order(shopper, product)
    _break(monkeypatch, "sealing")
    harness.settings.DEBUG = True

    response = _attempt(harness, shopper, order)

    assert response.status_code == 500
    assert b"RuntimeError" in response.content and b"order_pay" in response.content
    harness.assert_clean()


def test_an_unexpected_webhook_error_mails_no_token(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given ADMINS and DEBUG off, when the webhook receiver fails unexpectedly, then neither
    the error mail nor the log holds the webhook token."""
    import webhooks.views

    def broken_receive(**kwargs: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(webhooks.views, "webhook_receive", broken_receive)
    provider = harness.browser(raise_request_exception=False)

    response = harness.notify(provider, str(uuid.uuid4()))

    assert response.status_code == 500
    assert len(mail.outbox) == 1, [m.subject for m in mail.outbox]
    harness.assert_clean()
