"""The CSRF tests' table of the project's routes (test_urls_csrf.py,
test_urls_csrf_exempt.py): every route found by walking the URL resolver, the world
they act on (rows, users, browsers holding the CSRF cookie), and for each route who
posts, where, with what, and what the accepted POST does. The fixtures (world,
rejections): tests/config/conftest.py."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from books.links import factura_urls
from books.models import BooksExport, FacturaRequest, FacturaState
from checkout.links import order_link_path
from checkout.models import Order, OrderItem, Product
from payments.models import CaptureMethod, Payment, PaymentEvent, Refund, Subscription
from payments.statuses import PaymentStatus
from staff_actions.models import StaffAction
from staff_signin.models import SignInEvent
from tests.books.helpers import BUYER, UUID, cfdi
from tests.factories import PaymentFactory
from tests.helpers.shop import CUSTOMER, keep_session, own
from tests.helpers.staff import sign_in_staff
from webhooks.models import WebhookEvent, WebhookState

PASSWORD = "a-long-test-password"
NEW_PASSWORD = "another-long-password-2026"
WEBHOOK_TOKEN = "csrf-tests-webhook-token"
WEBHOOK_ROUTE = "webhooks/payments/<str:token>/"
CSP_ROUTE = "csp-report/"
PROBE_ROUTES = ("healthz", "healthz/deps", "readyz")

# Exempt by design: the provider's server posts notifications (authenticated by the secret
# token in the address, and never acted on without refetching the payment), and browsers post
# CSP violation reports (only logged) without cookies or tokens. Neither can carry a CSRF token.
# And the probes, which machines ask with GET only and which change nothing: any other method
# is their own 405 (JSON, `Allow: GET`), not the CSRF check's page.
EXEMPT = {WEBHOOK_ROUTE, CSP_ROUTE, *PROBE_ROUTES}
STATE = [
    FacturaRequest,
    BooksExport,
    Product,
    Order,
    OrderItem,
    Payment,
    PaymentEvent,
    Refund,
    StaffAction,
    Subscription,
    WebhookEvent,
    LogEntry,
    SignInEvent,
    Group,
    settings.AUTH_USER_MODEL,
]


@dataclass(frozen=True)
class Route:
    route: str
    view: Callable[..., Any]


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[Route]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield Route(prefix + str(pattern.pattern), pattern.callback)


def routes() -> list[Route]:
    """Every route of the project, by its full pattern (e.g. "pedidos/<str:reference>/")."""
    return list(_walk(get_resolver().url_patterns))


@dataclass
class World:
    product: Product
    spare_product: Product
    order: Order
    waiting_order: Order
    held: Payment
    paid: Payment
    unconfirmed: Payment
    subscription: Subscription
    event: WebhookEvent
    root: Any
    spare_user: Any
    group: Group
    calls: list[tuple[str, str]]
    clients: dict[str, Client] = field(default_factory=dict)
    # A paid order's factura request (books), and an export asked for.
    factura: Any = None
    export: Any = None

    def client(self, who: str) -> Client:
        """The browser of `who` (shop: the shopper; staff: a superuser; anonymous), opened on
        first use and holding the CSRF cookie."""
        if who not in self.clients:
            self.clients[who] = self._open(who)
        return self.clients[who]

    def _open(self, who: str) -> Client:
        if who == "staff":
            return csrf_browser(reverse("admin:index"), self.root)
        if who == "anonymous":
            return csrf_browser(reverse("admin:login"))
        shop = Client(enforce_csrf_checks=True, SERVER_NAME="localhost")
        own(shop, self.order)
        own(shop, self.waiting_order)
        session = shop.session
        session["cart"] = {str(self.product.pk): 2}
        keep_session(shop, session)
        assert shop.get(reverse("checkout:cart")).status_code == 200
        assert shop.cookies["csrftoken"].value
        return shop

    def cart(self) -> dict[str, int]:
        return dict(self.client("shop").session.get("cart") or {})


def payment_row(reference: str, status: str, **fields: Any) -> Payment:
    amount = Decimal("250.00")
    values: dict[str, Any] = {
        "external_reference": reference,
        "idempotency_key": uuid.uuid4().hex,
        "capture_method": CaptureMethod.MANUAL,
        "status": status,
        "amount": amount,
        "captured_amount": amount if status == PaymentStatus.APPROVED else Decimal("0"),
        "provider_id": str(uuid.uuid4()),
        "authorized_at": timezone.now(),
        **fields,
    }
    return PaymentFactory(**values)


def csrf_browser(warm_up: str, user: Any = None) -> Client:
    """A CSRF-checking browser that has opened a page, and so holds the CSRF cookie."""
    client = Client(enforce_csrf_checks=True, SERVER_NAME="localhost")
    if user is not None:
        sign_in_staff(client, user)
    assert client.get(warm_up).status_code == 200
    assert client.cookies["csrftoken"].value
    return client


def snapshot(world: World) -> dict[str, Any]:
    """Everything a POST could change: every row of the shop's tables, the browsers' sessions
    and language cookies, and the provider calls."""
    state: dict[str, Any] = {}
    for model in STATE:
        model_class: type[Model] = apps.get_model(model) if isinstance(model, str) else model
        state[model_class.__name__] = list(model_class._default_manager.order_by("pk").values())
    for who, client in world.clients.items():
        state[f"session:{who}"] = dict(client.session.items())
        cookie = client.cookies.get(settings.LANGUAGE_COOKIE_NAME)
        state[f"language:{who}"] = cookie.value if cookie else None
    state["provider calls"] = list(world.calls)
    return state


Build = Callable[[World], Any]
Effect = Callable[[World, Any], None]


@dataclass(frozen=True)
class Case:
    url: Build
    data: Build = lambda w: {}
    who: str = "staff"
    json: bool = False
    effect: Effect | None = None
    # GET-only views: the middleware refuses the POST first; with the token, the view's 405.
    get_only: bool = False
    # Read-only admins: with the token, the admin's own PermissionDenied (even for a superuser).
    denied: bool = False


def asked(kind: str) -> Effect:
    """A staff action recorded and queued for its task: the request itself calls nobody."""

    def check(world: World, response: Any) -> None:
        assert StaffAction.objects.filter(kind=kind, state="queued").exists()
        assert world.calls == [], world.calls

    return check


def attempt_stored(world: World, response: Any) -> None:
    """The pay attempt taken (202): stored with its sealed create, which its task sends (queued
    once committed); the request itself calls nobody."""
    assert response.status_code == 202, response.content
    payment = Payment.objects.get(external_reference=world.order.reference)
    assert payment.status == PaymentStatus.CREATING and payment.create_request
    assert world.calls == [], world.calls


def read_queued(world: World, response: Any) -> None:
    """The status answered from the shop's records, and a read of the payment waiting for its
    3-D Secure challenge queued for a task; the request itself calls nobody."""
    from core.task_queue import is_marked
    from payments.task_names import REFRESH_TASK, marker

    assert response.status_code == 200 and response.json()["result"] == "pending"
    assert is_marked(marker(REFRESH_TASK, _waiting_payment(world).pk))
    assert world.calls == [], world.calls


def closed(obj: Build) -> Effect:
    def check(world: World, response: Any) -> None:
        target = obj(world)
        target.refresh_from_db()
        assert target.status == PaymentStatus.FAILED

    return check


def gone(obj: Build) -> Effect:
    def check(world: World, response: Any) -> None:
        target = obj(world)
        assert not type(target).objects.filter(pk=target.pk).exists()

    return check


def admin(name: str, *args: Build) -> Build:
    return lambda w: reverse(f"admin:{name}", args=[arg(w) for arg in args])


def changelist_action(action: str, obj: Build, **extra: str) -> Build:
    return lambda w: {"action": action, "index": "0", "_selected_action": [obj(w).pk], **extra}


def _logged_in_as(who: str, expected: Build | None) -> Effect:
    def check(world: World, response: Any) -> None:
        user_id = world.client(who).session.get("_auth_user_id")
        assert user_id == (str(expected(world).pk) if expected else None)

    return check


def _password_accepted(who: str, expected: Build) -> Effect:
    """The password alone logs nobody in: the account waits for its code."""

    def check(world: World, response: Any) -> None:
        session = world.client(who).session
        assert session.get("_auth_user_id") is None
        assert session["staff_signin_pending"]["user"] == expected(world).pk

    return check


def _recovery_codes_kept(world: World, response: Any) -> None:
    """A wrong code makes no new recovery codes."""
    assert response.status_code == 200
    assert SignInEvent.objects.filter(kind="code_refused").exists()
    assert not SignInEvent.objects.filter(kind="recovery_codes_made").exists()


def _sign_in_event() -> SignInEvent:
    return SignInEvent.objects.order_by("id").first() or SignInEvent.objects.create(
        kind="password_refused", username="nadie"
    )


def _cart_is(quantity: int | None) -> Effect:
    def check(world: World, response: Any) -> None:
        assert world.cart().get(str(world.product.pk)) == quantity, world.cart()

    return check


def _password_is(user: Build, password: str) -> Effect:
    def check(world: World, response: Any) -> None:
        target = user(world)
        target.refresh_from_db()
        assert target.check_password(password)

    return check


def _state_of_event(state: str) -> Effect:
    def check(world: World, response: Any) -> None:
        world.event.refresh_from_db()
        assert world.event.state == state

    return check


def _exists(model: type[Model], **lookup: Any) -> Effect:
    def check(world: World, response: Any) -> None:
        assert model._default_manager.filter(**lookup).exists()

    return check


def _language_is(language: str) -> Effect:
    def check(world: World, response: Any) -> None:
        assert world.client("shop").cookies[settings.LANGUAGE_COOKIE_NAME].value == language

    return check


def _orders_placed(count: int) -> Effect:
    def check(world: World, response: Any) -> None:
        assert Order.objects.count() == count, response

    return check


def _asked_for_orders(world: World, response: Any) -> None:
    """The list of orders is asked for (its mail is queued): the page says so."""
    assert response.status_code == 302, response
    assert response["Location"] == reverse("checkout:my_orders")


def _model_admin(app_model: str, obj: Build, *, denied: bool, base: str = "") -> dict[str, Case]:
    """The routes every ModelAdmin has; `denied` for the admins that never add, change or delete
    (payments, subscriptions, webhook events, sign-ins)."""
    base = base or f"admin/{app_model.replace('_', '/', 1)}/"
    name = app_model
    cases = {
        f"{base}add/": Case(admin(f"{name}_add"), denied=denied),
        f"{base}<path:object_id>/history/": Case(admin(f"{name}_history", lambda w: obj(w).pk)),
        f"{base}<path:object_id>/delete/": Case(
            admin(f"{name}_delete", lambda w: obj(w).pk),
            lambda w: {"post": "yes"},
            denied=denied,
        ),
        f"{base}<path:object_id>/change/": Case(
            admin(f"{name}_change", lambda w: obj(w).pk),
            lambda w: {"status": "approved", "state": "processed"},
            denied=denied,
        ),
        # RedirectView to the change page: a POST is answered like a GET.
        f"{base}<path:object_id>/": Case(lambda w: f"/{base}{obj(w).pk}/"),
    }
    return cases


def _factura_is(state: str) -> Effect:
    def check(world: World, response: Any) -> None:
        world.factura.refresh_from_db()
        assert world.factura.state == state, response

    return check


def _factura_postal_code(code: str) -> Effect:
    def check(world: World, response: Any) -> None:
        world.factura.refresh_from_db()
        assert world.factura.postal_code == code, response

    return check


def _waiting_payment(w: World) -> Payment:
    return Payment.objects.get(external_reference=w.waiting_order.reference)


def _product_form(w: World) -> dict[str, str]:
    return {
        "slug": "jarro",
        "name": "Jarro de barro",
        "name_en": "Clay jug",
        "price": "120.00",
        "stock": "3",
        "active": "on",
        "image": "",
    }


CASES: dict[str, Case] = {
    # --- Admin site --------------------------------------------------------------------------
    "admin/": Case(admin("index")),
    "admin/login/": Case(
        admin("login"),
        lambda w: {"username": "root", "password": PASSWORD, "next": "/admin/"},
        who="anonymous",
        effect=_password_accepted("anonymous", lambda w: w.root),
    ),
    # The sign-in's second step: without a password accepted first, back to the password page.
    "admin/sign-in/code/": Case(
        admin("staff_signin_code"),
        lambda w: {"code": "000000"},
        who="anonymous",
        effect=_logged_in_as("anonymous", None),
    ),
    "admin/sign-in/enrol/": Case(
        admin("staff_signin_enrol"),
        lambda w: {"code": "000000"},
        who="anonymous",
        effect=_logged_in_as("anonymous", None),
    ),
    "admin/sign-in/recovery-codes/": Case(
        admin("staff_signin_recovery_codes"),
        lambda w: {"code": "000000"},
        effect=_recovery_codes_kept,
    ),
    # The sign-in ledger: read only.
    "admin/staff_signin/signinevent/": Case(admin("staff_signin_signinevent_changelist")),
    **_model_admin(
        "staff_signin_signinevent",
        lambda w: _sign_in_event(),
        denied=True,
        base="admin/staff_signin/signinevent/",
    ),
    "admin/logout/": Case(admin("logout"), effect=_logged_in_as("staff", None)),
    "admin/password_change/": Case(
        admin("password_change"),
        lambda w: {
            "old_password": PASSWORD,
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
        effect=_password_is(lambda w: w.root, NEW_PASSWORD),
    ),
    "admin/password_change/done/": Case(admin("password_change_done")),
    "admin/autocomplete/": Case(admin("autocomplete")),
    "admin/jsi18n/": Case(admin("jsi18n")),
    "admin/r/<path:content_type_id>/<path:object_id>/": Case(
        lambda w: reverse(
            "admin:view_on_site",
            args=[ContentType.objects.get_for_model(Product).pk, w.product.pk],
        )
    ),
    "admin/^(?P<app_label>auth|staff_signin|payments|checkout|webhooks|books)/$": Case(
        lambda w: reverse("admin:app_list", kwargs={"app_label": "payments"})
    ),
    "admin/(?P<url>.*)$": Case(lambda w: "/admin/nowhere/"),
    # auth
    "admin/auth/group/": Case(
        admin("auth_group_changelist"),
        changelist_action("delete_selected", lambda w: w.group, post="yes"),
        effect=gone(lambda w: w.group),
    ),
    **_model_admin("auth_group", lambda w: w.group, denied=False),
    "admin/auth/group/add/": Case(
        admin("auth_group_add"),
        lambda w: {"name": "new-group"},
        effect=_exists(Group, name="new-group"),
    ),
    "admin/auth/group/<path:object_id>/delete/": Case(
        admin("auth_group_delete", lambda w: w.group.pk),
        lambda w: {"post": "yes"},
        effect=gone(lambda w: w.group),
    ),
    "admin/auth/group/<path:object_id>/change/": Case(
        admin("auth_group_change", lambda w: w.group.pk),
        lambda w: {"name": "renamed-group"},
        effect=_exists(Group, name="renamed-group"),
    ),
    "admin/auth/user/": Case(
        admin("auth_user_changelist"),
        changelist_action("delete_selected", lambda w: w.spare_user, post="yes"),
        effect=gone(lambda w: w.spare_user),
    ),
    **_model_admin("auth_user", lambda w: w.spare_user, denied=False),
    "admin/auth/user/add/": Case(
        admin("auth_user_add"),
        lambda w: {
            "username": "newbie",
            "usable_password": "true",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
        },
        effect=_exists(get_user_model(), username="newbie"),
    ),
    "admin/auth/user/<path:object_id>/delete/": Case(
        admin("auth_user_delete", lambda w: w.spare_user.pk),
        lambda w: {"post": "yes"},
        effect=gone(lambda w: w.spare_user),
    ),
    "admin/auth/user/<id>/password/": Case(
        admin("auth_user_password_change", lambda w: w.spare_user.pk),
        lambda w: {
            "usable_password": "true",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
        },
        effect=_password_is(lambda w: w.spare_user, NEW_PASSWORD),
    ),
    # payments
    "admin/payments/payment/<int:pk>/capture/": Case(
        admin("payments_payment_capture", lambda w: w.held.pk),
        lambda w: {"amount": "250.00"},
        effect=asked("payments.capture"),
    ),
    "admin/payments/payment/<int:pk>/cancel/": Case(
        admin("payments_payment_cancel", lambda w: w.held.pk),
        effect=asked("payments.cancel"),
    ),
    "admin/payments/payment/<int:pk>/refund/": Case(
        admin("payments_payment_refund", lambda w: w.paid.pk),
        lambda w: {"amount": "10.00", "reason": "devolución"},
        effect=asked("payments.refund"),
    ),
    "admin/payments/payment/<int:pk>/refresh/": Case(
        admin("payments_payment_refresh", lambda w: w.held.pk),
        effect=asked("payments.refresh"),
    ),
    "admin/payments/payment/<int:pk>/close/": Case(
        admin("payments_payment_close", lambda w: w.unconfirmed.pk),
        effect=closed(lambda w: w.unconfirmed),
    ),
    "admin/payments/payment/": Case(
        admin("payments_payment_changelist"),
        changelist_action("capture_selected", lambda w: w.held),
        effect=asked("payments.capture"),
    ),
    # Whether a page's staff actions are done (polled by static/js/admin_work_in_progress.js).
    "admin/payments/payment/staff-actions/": Case(
        admin("payments_payment_staff_actions"), get_only=True
    ),
    "admin/payments/subscription/staff-actions/": Case(
        admin("payments_subscription_staff_actions"), get_only=True
    ),
    "admin/checkout/order/staff-actions/": Case(
        admin("checkout_order_staff_actions"), get_only=True
    ),
    **_model_admin("payments_payment", lambda w: w.held, denied=True),
    "admin/payments/subscription/import/": Case(
        admin("payments_subscription_import"),
        lambda w: {"provider_id": "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"},
        effect=asked("payments.subscription_import"),
    ),
    "admin/payments/subscription/": Case(
        admin("payments_subscription_changelist"),
        changelist_action("cancel_selected", lambda w: w.subscription, confirmed="yes"),
        effect=asked("payments.subscription_cancel"),
    ),
    **_model_admin("payments_subscription", lambda w: w.subscription, denied=True),
    # checkout
    "admin/checkout/product/": Case(
        admin("checkout_product_changelist"),
        changelist_action("delete_selected", lambda w: w.spare_product, post="yes"),
        effect=gone(lambda w: w.spare_product),
    ),
    **_model_admin("checkout_product", lambda w: w.spare_product, denied=False),
    "admin/checkout/product/add/": Case(
        admin("checkout_product_add"), _product_form, effect=_exists(Product, slug="jarro")
    ),
    "admin/checkout/product/<path:object_id>/delete/": Case(
        admin("checkout_product_delete", lambda w: w.spare_product.pk),
        lambda w: {"post": "yes"},
        effect=gone(lambda w: w.spare_product),
    ),
    "admin/checkout/product/<path:object_id>/change/": Case(
        admin("checkout_product_change", lambda w: w.spare_product.pk),
        _product_form,
        effect=_exists(Product, slug="jarro", name="Jarro de barro"),
    ),
    # Orders are read-only (no add, no delete, no actions): their change page saves nothing.
    "admin/checkout/order/": Case(admin("checkout_order_changelist")),
    **_model_admin("checkout_order", lambda w: w.order, denied=True),
    "admin/checkout/order/<path:object_id>/change/": Case(
        admin("checkout_order_change", lambda w: w.order.pk),
        lambda w: {"status": "paid"},
        denied=True,  # orders change through their actions only
    ),
    "admin/checkout/order/<int:pk>/ship/": Case(admin("checkout_order_ship", lambda w: w.order.pk)),
    "admin/checkout/order/<int:pk>/cancel/": Case(
        admin("checkout_order_cancel", lambda w: w.order.pk), effect=asked("checkout.cancel")
    ),
    "admin/checkout/order/<int:pk>/refund/": Case(
        admin("checkout_order_refund", lambda w: w.order.pk)
    ),
    "admin/checkout/order/<int:pk>/refresh/": Case(
        admin("checkout_order_refresh", lambda w: w.order.pk)
    ),
    # webhooks
    "admin/webhooks/webhookevent/": Case(
        admin("webhooks_webhookevent_changelist"),
        changelist_action("retry_selected", lambda w: w.event),
        effect=_state_of_event(WebhookState.RECEIVED),
    ),
    **_model_admin("webhooks_webhookevent", lambda w: w.event, denied=True),
    # books: the facturas to issue (start, register), every factura (its files), the exports
    "admin/books/facturatoissue/": Case(
        admin("books_facturatoissue_changelist"),
        changelist_action("start_selected", lambda w: w.factura),
        effect=_factura_is(FacturaState.ISSUING),
    ),
    **_model_admin("books_facturatoissue", lambda w: w.factura, denied=True),
    "admin/books/facturatoissue/<int:pk>/register/": Case(
        admin("books_facturatoissue_register", lambda w: w.factura.pk),
        lambda w: {"uuid": UUID, "xml": SimpleUploadedFile("cfdi.xml", cfdi("250.00"))},
        effect=_factura_is(FacturaState.ISSUED),
    ),
    "admin/books/facturarequest/": Case(admin("books_facturarequest_changelist")),
    **_model_admin("books_facturarequest", lambda w: w.factura, denied=True),
    "admin/books/facturarequest/<int:pk>/file/<str:kind>/": Case(
        admin("books_facturarequest_file", lambda w: w.factura.pk, lambda w: "xml"),
        get_only=True,
    ),
    "admin/books/booksexport/": Case(admin("books_booksexport_changelist")),
    **_model_admin("books_booksexport", lambda w: w.export, denied=True),
    "admin/books/booksexport/add/": Case(
        admin("books_booksexport_add"),
        lambda w: {"kind": "orders", "start": "2026-10-01", "end": "2026-10-31", "format": "csv"},
        effect=_exists(BooksExport, start="2026-10-01", format="csv"),
    ),
    "admin/books/booksexport/<path:object_id>/history/": Case(
        admin("books_booksexport_history", lambda w: w.export.pk)
    ),
    "admin/books/booksexport/<int:pk>/download/": Case(
        admin("books_booksexport_download", lambda w: w.export.pk), get_only=True
    ),
    "admin/books/booksexport/status/": Case(admin("books_booksexport_status"), get_only=True),
    # --- The shop ---------------------------------------------------------------------------
    "i18n/setlang/": Case(
        lambda w: reverse("set_language"),
        lambda w: {"language": "en", "next": "/"},
        who="shop",
        effect=_language_is("en"),
    ),
    "healthz": Case(lambda w: reverse("healthz"), who="shop", get_only=True),
    "healthz/deps": Case(lambda w: reverse("healthz_deps"), who="shop", get_only=True),
    "readyz": Case(lambda w: reverse("readyz"), who="shop", get_only=True),
    "metrics": Case(lambda w: reverse("metrics"), who="shop", get_only=True),
    "api/schema/": Case(lambda w: reverse("schema"), who="shop", get_only=True),
    "": Case(lambda w: reverse("checkout:home"), who="shop", get_only=True),
    "productos/<slug:slug>/": Case(
        lambda w: reverse("checkout:product", args=[w.product.slug]), who="shop", get_only=True
    ),
    "carrito/": Case(lambda w: reverse("checkout:cart"), who="shop", get_only=True),
    "carrito/agregar/<slug:slug>/": Case(
        lambda w: reverse("checkout:cart_add", args=[w.product.slug]),
        lambda w: {"quantity": "1"},
        who="shop",
        effect=_cart_is(3),
    ),
    "carrito/actualizar/<slug:slug>/": Case(
        lambda w: reverse("checkout:cart_update", args=[w.product.slug]),
        lambda w: {"quantity": "5"},
        who="shop",
        effect=_cart_is(5),
    ),
    "carrito/quitar/<slug:slug>/": Case(
        lambda w: reverse("checkout:cart_remove", args=[w.product.slug]),
        who="shop",
        effect=_cart_is(None),
    ),
    "checkout/": Case(
        lambda w: reverse("checkout:checkout"),
        lambda w: CUSTOMER,
        who="shop",
        effect=_orders_placed(4),  # two in the world, a paid one with a factura, and this one
    ),
    "pedidos/<str:reference>/": Case(
        lambda w: reverse("checkout:order", args=[w.order.reference]), who="shop", get_only=True
    ),
    "pedido/<str:reference>/<str:token>/": Case(
        lambda w: order_link_path(w.order.reference), who="shop", get_only=True
    ),
    "pedido/<str:reference>/<str:token>/factura/": Case(
        lambda w: factura_urls(w.factura.order)["form"],
        lambda w: {**BUYER, "postal_code": "06600"},
        who="shop",
        effect=_factura_postal_code("06600"),
    ),
    "pedido/<str:reference>/<str:token>/factura/<str:kind>/": Case(
        lambda w: factura_urls(w.factura.order)["xml"], who="shop", get_only=True
    ),
    "mis-pedidos/": Case(
        lambda w: reverse("checkout:my_orders"),
        lambda w: {"email": "ana@example.com"},
        who="shop",
        effect=_asked_for_orders,
    ),
    "pedidos/<str:reference>/pagar/": Case(
        lambda w: reverse("checkout:pay", args=[w.order.reference]), who="shop", get_only=True
    ),
    "pedidos/<str:reference>/pagos/": Case(
        lambda w: reverse("checkout:pay_attempt", args=[w.order.reference]),
        lambda w: {
            "card_token": "tok_" + uuid.uuid4().hex,
            "attempt_id": uuid.uuid4().hex,
            "session_id": "sess_csrf",
            "user_agent": "pytest",
        },
        who="shop",
        json=True,
        effect=attempt_stored,
    ),
    "pedidos/<str:reference>/estado-pago/": Case(
        lambda w: reverse("checkout:payment_status", args=[w.waiting_order.reference]),
        who="shop",
        effect=read_queued,
    ),
    # --- Exempt ------------------------------------------------------------------------------
    WEBHOOK_ROUTE: Case(
        lambda w: reverse("webhooks:payments", args=[WEBHOOK_TOKEN]),
        lambda w: {"id": str(uuid.uuid4()), "origin": "payments-api", "event_type": "UPDATE"},
        who="shop",
        json=True,
    ),
    CSP_ROUTE: Case(
        lambda w: reverse("csp_report"),
        lambda w: {
            "csp-report": {
                "document-uri": "http://localhost/",
                "violated-directive": "script-src",
                "blocked-uri": "https://evil.example/x.js",
            }
        },
        who="shop",
        json=True,
    ),
}
PROTECTED = sorted(route.route for route in routes() if route.route not in EXEMPT)


def post(world: World, case: Case, token: str | None) -> Any:
    """POST the case's request from its browser; with `token` as a real page would send it (in
    the form, or in the X-CSRFToken header of a JSON request)."""
    client = world.client(case.who)
    url = case.url(world)
    data = dict(case.data(world))
    if case.json:
        headers = {"HTTP_X_CSRFTOKEN": token} if token is not None else {}
        return client.post(url, json.dumps(data), content_type="application/json", **headers)
    if token is not None:
        data["csrfmiddlewaretoken"] = token
    return client.post(url, data)


def token_of(world: World, who: str) -> str:
    return world.client(who).cookies["csrftoken"].value
