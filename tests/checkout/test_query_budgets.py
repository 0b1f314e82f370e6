"""Query budgets of a sale day's order, step by step, as a browser makes it (home to the status
the payment page asks for) and then the work the workers do for it (the create, the
notification's read, the order's sync, its mails): each within its budget, so that a change
that adds queries to the hot path fails here before it costs the shop its capacity
(bench/sale_day.py measures the capacity; docs/benchmarks.md says where the time goes)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checkout.models import Order, OrderMail, Product
from checkout.tasks import order_mail_deliver_task, order_sync_task
from payments.models import Payment
from payments.tasks import payment_send_create_task
from tests.helpers.provider import Api
from tests.helpers.servers import free_port
from tests.helpers.shop import CUSTOMER, shopper
from webhooks.calls import webhook_process

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox, pytest.mark.usefixtures("fresh_cache")]

# The most queries each step may make (today's count: the budget is spent, not padded), and the
# most for the whole: the nine pages of an order, and the workers' work for it. A transaction's
# own statements count (here its savepoint and release; in production its BEGIN and COMMIT).
PAGES = {
    "home": 1,
    "product": 1,
    "cart_add": 1,
    "cart": 1,
    "details": 1,
    "order": 7,
    "pay_page": 3,
    "pay": 8,
    "status": 2,
}
WORK = {"create": 6, "notification": 5, "order_sync": 8, "mail": 5}
PAGES_IN_ALL, WORK_IN_ALL = 25, 24


def counted(name: str, spent: dict[str, int], step: Callable[[], Any]) -> Any:
    with CaptureQueriesContext(connection) as queries:
        answer = step()
    spent[name] = len(queries)
    return answer


@pytest.fixture
def shop(provider: Api, settings: Any) -> Api:
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    settings.PAYMENTS_WEBHOOK_TOKEN = "budget-" + uuid.uuid4().hex
    return provider


def browse_and_pay(browser: Client, product: Product, card_token: str) -> tuple[str, dict]:
    """The pages of one order, as a browser asks them; the order's reference and the queries
    each step made."""
    spent: dict[str, int] = {}
    counted("home", spent, lambda: browser.get(reverse("checkout:home")))
    counted("product", spent, lambda: browser.get(reverse("checkout:product", args=[product.slug])))
    csrf = browser.cookies["csrftoken"].value
    added = counted("cart_add", spent, lambda: browser.post(
        reverse("checkout:cart_add", args=[product.slug]),
        {"quantity": 1, "csrfmiddlewaretoken": csrf},
    ))  # fmt: skip
    assert added.status_code == 302
    counted("cart", spent, lambda: browser.get(reverse("checkout:cart")))
    counted("details", spent, lambda: browser.get(reverse("checkout:checkout")))
    placed = counted("order", spent, lambda: browser.post(
        reverse("checkout:checkout"), {**CUSTOMER, "csrfmiddlewaretoken": csrf}
    ))  # fmt: skip
    reference = placed["Location"].split("/")[2]
    counted("pay_page", spent, lambda: browser.get(reverse("checkout:pay", args=[reference])))
    body = {"card_token": card_token, "attempt_id": uuid.uuid4().hex,
            "session_id": "budget", "user_agent": "budget"}  # fmt: skip
    paid = counted("pay", spent, lambda: browser.post(
        reverse("checkout:pay_attempt", args=[reference]), json.dumps(body),
        content_type="application/json", HTTP_X_CSRFTOKEN=csrf,
    ))  # fmt: skip
    assert paid.status_code == 202, paid.content
    counted("status", spent, lambda: browser.get(
        reverse("checkout:payment_status", args=[reference])
    ))  # fmt: skip
    return reference, spent


def test_every_step_of_an_order_keeps_to_its_query_budget(shop: Api, taza: Product) -> None:
    browser = shopper()
    browse_and_pay(browser, taza, shop.card_token()["id"])  # the first fills the caches
    reference, pages = browse_and_pay(browser, taza, shop.card_token()["id"])
    payment = Payment.objects.get(external_reference=reference)
    work: dict[str, int] = {}

    counted("create", work, lambda: payment_send_create_task.apply(args=[payment.pk]))
    payment.refresh_from_db()
    assert payment.status == "approved"
    counted("notification", work, lambda: _notified(payment))
    order = Order.objects.get(reference=reference)
    counted("order_sync", work, lambda: order_sync_task.apply(args=[order.pk]))
    mail = OrderMail.objects.filter(order=order).order_by("pk").first()
    assert mail is not None
    counted("mail", work, lambda: order_mail_deliver_task.apply(args=[mail.pk]))

    assert sum(pages.values()) <= PAGES_IN_ALL, pages
    assert sum(work.values()) <= WORK_IN_ALL, work
    over = {step: (spent, PAGES[step]) for step, spent in pages.items() if spent > PAGES[step]}
    over |= {step: (spent, WORK[step]) for step, spent in work.items() if spent > WORK[step]}
    assert not over, f"over budget (spent, budget): {over}; pages {pages}, work {work}"


def _notified(payment: Payment) -> None:
    """The provider's notification, received (the receiver's view) and processed (its task's
    work: the payment read and applied)."""
    path = reverse("webhooks:payments", kwargs={"token": settings.PAYMENTS_WEBHOOK_TOKEN})
    body = {"id": payment.provider_id, "origin": "payments-api", "event_type": "UPDATE"}
    answer = Client().post(path, json.dumps(body), content_type="application/json")
    assert answer.status_code == 200, answer.content
    webhook_process(payment_id=payment.provider_id or "", task_id=uuid.uuid4().hex)
