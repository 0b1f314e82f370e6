"""Orders: made from carts (stock reserved), and moved only by what their payments say; what an
order's status is, given its payments (pure rules, no query and no write: the order's sync, the
payment page and the reservations apply them)."""

from __future__ import annotations

import logging
from contextlib import suppress
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from checkout.cart import Cart, CartLine
from checkout.mails.rules import queue_order_mails
from checkout.mails.selectors import order_mail_keys
from checkout.models import (
    PAYABLE_STATUSES,
    Fulfilment,
    Order,
    OrderEventKind,
    OrderItem,
    OrderStatus,
    Product,
)
from checkout.orders.selectors import order_payments, payments_of_orders
from checkout.records import order_event_record
from checkout.stock.rules import OutOfStock, order_restock_unshipped, order_take_back
from checkout.task_names import RELEASE_DUPLICATES_TASK
from checkout.words import PAID_AFTER_CANCELLATION, PAID_AFTER_EXPIRY
from core.task_queue import queue_on_commit
from payments.models import Payment
from payments.rereading.selectors import changed_references
from payments.statuses import IN_FLIGHT, PaymentStatus

logger = logging.getLogger(__name__)


class CheckoutError(Exception):
    """A checkout problem with a message for the shopper."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- What an order's status is, given its payments ----------------------------------------


def derive_order_status(payments_of_order: list[Payment]) -> str:
    """What the order's payments say about it, best outcome first (idempotent, so duplicate
    or late notifications can only land in the same place)."""
    by_status: dict[str, list[Payment]] = {}
    for payment in payments_of_order:
        by_status.setdefault(payment.status, []).append(payment)
    if approved := by_status.get(PaymentStatus.APPROVED):
        if any(p.refunded_amount > 0 for p in approved):
            return OrderStatus.PARTIALLY_REFUNDED
        return OrderStatus.PAID
    cancelled = by_status.get(PaymentStatus.CANCELLED, [])
    if PaymentStatus.REFUNDED in by_status or any(p.captured_amount > 0 for p in cancelled):
        return OrderStatus.REFUNDED
    if PaymentStatus.AUTHORIZED in by_status:
        return OrderStatus.AUTHORIZED
    if any(p.cancelled_before_capture for p in cancelled):
        return OrderStatus.CANCELLED
    if not payments_of_order:
        return OrderStatus.AWAITING_PAYMENT
    latest = payments_of_order[-1]
    if latest.status in IN_FLIGHT:
        return OrderStatus.AWAITING_PAYMENT
    if latest.status == PaymentStatus.PENDING:
        return OrderStatus.AWAITING_AUTHENTICATION
    return OrderStatus.PAYMENT_FAILED


PAID_STATUSES = (OrderStatus.PAID, OrderStatus.AUTHORIZED)

# Orders the shop closed before they were paid (expired, or cancelled: by staff, or by their
# payment's hold being cancelled): their items went back to stock. A payment that goes through
# after that takes them back if they are all still there, else it is given back.
CLOSED_STATUSES = (OrderStatus.EXPIRED, OrderStatus.CANCELLED)


def status_given(order: Order, attempts: list[Payment]) -> str:
    """What the payments say of the order, except that an order the shop closed itself
    (cancelled by staff before any payment went through) does not become payable again."""
    new = derive_order_status(attempts)
    if order.status == OrderStatus.CANCELLED and new in PAYABLE_STATUSES:
        return OrderStatus.CANCELLED
    return new


def charges_held(attempts: list[Payment]) -> list[Payment]:
    """The attempts holding or having taken the shopper's money, the one to keep first."""
    held = [p for p in attempts if p.status in (PaymentStatus.APPROVED, PaymentStatus.AUTHORIZED)]

    def first_to_pay(payment: Payment) -> tuple[bool, str]:
        # The provider's approval time, else when it was held.
        when = payment.approved_at or payment.authorized_at or payment.created_at
        return payment.status != PaymentStatus.APPROVED, when.isoformat()

    return sorted(held, key=first_to_pay)


# --- Orders ---------------------------------------------------------------------------------


def reservation_deadline() -> datetime:
    """Until when a new order holds its items (SHOP_RESERVATION_MINUTES from now)."""
    return timezone.now() + timedelta(minutes=settings.SHOP_RESERVATION_MINUTES)


def order_create_from_cart(
    *, cart: Cart, customer: dict[str, str], language: str, lines: list[CartLine] | None = None
) -> Order:
    """Freeze the cart into an order: prices at order time, stock reserved, in one transaction.

    On a rush for the last units, a cart the stock no longer covers is refused from a plain read,
    without a lock or a transaction. Otherwise the order, its items and its mails are written
    first, and the stock is taken last, by one conditional UPDATE a product (`stock >= wanted`,
    in the products' order): each product's row is locked only from its UPDATE to the commit
    that follows at once, never while anything else runs. An UPDATE that finds the stock gone
    meanwhile rolls the whole order back. `lines`: the cart's, when just read."""
    lines = cart.lines() if lines is None else lines
    cart_stock_check(lines)
    wanted = {line.product.pk: line.quantity for line in lines}
    products = {line.product.pk: line.product for line in lines}
    with transaction.atomic():
        order = Order.objects.create(
            total=sum(
                (products[line.product.pk].price * line.quantity for line in lines), Decimal("0.00")
            ),
            language=language,
            reserved_until=reservation_deadline(),
            **customer,
        )
        OrderItem.objects.bulk_create(
            OrderItem(
                order=order,
                product=products[pk],
                name=products[pk].name,
                name_en=products[pk].name_en,
                unit_price=products[pk].price,
                quantity=quantity,
            )
            for pk, quantity in wanted.items()
        )
        queue_order_mails(order, new=True)
        for pk in sorted(wanted):
            taken = Product.objects.filter(pk=pk, active=True, stock__gte=wanted[pk]).update(
                stock=F("stock") - wanted[pk]
            )
            if not taken:  # sold meanwhile: the order is rolled back, the stock said as it is
                _check_stock(Product.objects.in_bulk(list(wanted)), wanted)
                name = products[pk].display_name
                raise CheckoutError(_("%(name)s is sold out.") % {"name": name})
    return order


def cart_stock_check(lines: list[CartLine]) -> None:
    """Refuse, from the products as the cart just read them (no lock, no transaction), a cart
    that is empty or that the stock no longer covers, saying what is left."""
    if not lines:
        raise CheckoutError(_("Your cart is empty."))
    _check_stock(
        {line.product.pk: line.product for line in lines},
        {line.product.pk: line.quantity for line in lines},
    )


def _check_stock(products: dict[int, Product], wanted: dict[int, int]) -> None:
    """Refuse a cart the products (as read) no longer cover, saying what is left."""
    problems = []
    for pk, quantity in wanted.items():
        product = products[pk]
        if not product.active:
            problems.append(_("%(name)s is no longer sold.") % {"name": product.display_name})
        elif product.stock <= 0:
            problems.append(_("%(name)s is sold out.") % {"name": product.display_name})
        elif product.stock < quantity:
            problems.append(
                ngettext(
                    "Only %(count)s of %(name)s left.",
                    "Only %(count)s of %(name)s left.",
                    product.stock,
                )
                % {"count": product.stock, "name": product.display_name}
            )
    if problems:
        raise CheckoutError(" ".join(problems))


def order_sync_status(*, order_id: int) -> Order | None:
    """Move the order to what its payments say; release stock once if it is cancelled; give
    back a second charge, or a charge that came after the shop closed the order (it expired,
    or was cancelled) with its items gone."""
    with transaction.atomic():
        order = (
            Order.objects.select_for_update()
            .annotate(mail_keys=order_mail_keys())
            .filter(pk=order_id)
            .first()
        )
        if order is None:
            return None
        attempts = order_payments(order)
        new = status_given(order, attempts)
        if order.status in CLOSED_STATUSES:
            new = _after_closing(order, new)
        held = len(charges_held(attempts))
        if held > 1 or (held and new in CLOSED_STATUSES):
            queue_on_commit(RELEASE_DUPLICATES_TASK, order.reference)
        if new != order.status:
            logger.info("order %s: %s -> %s", order.reference, order.status, new)
            order.status = new
            order.save(update_fields=["status", "updated_at"])
        if new == OrderStatus.CANCELLED:  # nothing was charged: nothing more will ship
            if order.fulfilment == Fulfilment.UNFULFILLED:
                Order.objects.filter(pk=order.pk).update(fulfilment=Fulfilment.CANCELLED)
            order_restock_unshipped(order)
        queue_order_mails(order, attempts=attempts, order_locked=True, keys_held=order.mail_keys)
    return order


def _after_closing(order: Order, paid: str) -> str:
    """An order the shop closed (expired, or cancelled before it was paid: its items went back
    to stock) whose payment went through after all (a 3-D Secure challenge finished late, an
    answer that was lost): it takes its items back if they are all still in stock and goes on
    as paid; otherwise it stays closed, and its sync gives the payment back."""
    closed = order.status
    if paid not in PAID_STATUSES:
        return closed
    try:
        order_take_back(order)
    except OutOfStock as exc:
        logger.warning("order %s: paid after it was %s, %s: payment given back", order, closed, exc)
        return closed
    Order.objects.filter(pk=order.pk).update(fulfilment=Fulfilment.UNFULFILLED)
    order.fulfilment = Fulfilment.UNFULFILLED
    expired = closed == OrderStatus.EXPIRED
    message = PAID_AFTER_EXPIRY() if expired else PAID_AFTER_CANCELLATION()
    order_event_record(order, OrderEventKind.RESERVED, message, None)
    return paid


# How far back the safety net of the orders' sync looks at most (a first run, or the cache lost).
FOLLOW_AT_MOST = timedelta(hours=6)
# Its runs overlap by this much: a payment's change committed late is not missed.
FOLLOW_OVERLAP = timedelta(minutes=1)
_FOLLOWED_UNTIL = "checkout:orders-followed-until"


def orders_follow_payments(*, batch: int = 500) -> int:
    """The safety net of `order_sync_task`: sync the orders whose payments changed since the
    last run (at most `FOLLOW_AT_MOST` back) and whose status does not say so (their task could
    not be queued, or was lost); how many were synced. Three queries a batch of changes, however
    many orders the shop holds."""
    started = timezone.now()
    followed = _followed_until()
    since = started - FOLLOW_AT_MOST
    if followed is not None and since < followed <= started:  # a clock set back: look it all
        since = followed
    synced = 0
    for order_id in orders_out_of_step(since=since, batch=batch):
        order_sync_status(order_id=order_id)
        synced += 1
    with suppress(Exception):  # without the cache, the next run looks FOLLOW_AT_MOST back
        cache.set(_FOLLOWED_UNTIL, started - FOLLOW_OVERLAP, timeout=None)
    return synced


def _followed_until() -> datetime | None:
    try:
        value = cache.get(_FOLLOWED_UNTIL)
    except Exception:
        return None
    return value if isinstance(value, datetime) else None


def orders_out_of_step(*, since: datetime | None = None, batch: int = 500) -> list[int]:
    """Orders whose payments changed since `since` (the last `FOLLOW_AT_MOST` if None) and whose
    status is not what those payments say (their sync was not queued, or was lost)."""
    since = since or timezone.now() - FOLLOW_AT_MOST
    out_of_step: list[int] = []
    after = None
    while True:
        references, after = changed_references(since=since, after=after, limit=batch)
        attempts = payments_of_orders(references)
        orders = Order.objects.filter(reference__in=references).only("pk", "reference", "status")
        out_of_step += [o.pk for o in orders if _out_of_step(o, attempts[o.reference])]
        if after is None:
            return out_of_step


def _out_of_step(order: Order, attempts: list[Payment]) -> bool:
    if order.status in CLOSED_STATUSES:  # it stays so, unless a charge is held
        return bool(charges_held(attempts))
    return status_given(order, attempts) != order.status


def order_as_paid_now(order: Order, attempts: list[Payment] | None = None) -> Order:
    """An order still waiting for its payment, with the status its payments (`attempts`, read
    here if not given) give it now, for what the shopper sees and may do right after paying
    (its stored status follows by `order_sync_task`, a moment later). Not saved."""
    if order.is_payable:
        order.status = derive_order_status(order_payments(order) if attempts is None else attempts)
    return order
