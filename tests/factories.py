"""The two ways the tests make the shop's data: factory-boy factories, one per model, for rows
written straight to the database (PaymentFactory and the rest), and `provider_payment` for a
payment the live sandbox knows, made through the payment service as checkout makes it."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import factory
from django.db import connection, transaction
from django.utils import timezone

from checkout.models import Order, OrderEvent, OrderItem, Product
from payments.attempts.calls import payment_send_create
from payments.attempts.rules import payment_attempt_store
from payments.models import Payment, PaymentEvent, Refund, Subscription
from tests.helpers.provider import VISA, Api
from webhooks.models import WebhookEvent


def order_reference() -> str:
    """A new order reference, as checkout writes them."""
    return f"ORD-{uuid.uuid4().hex[:6].upper()}"


class ProductFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Product

    slug = factory.LazyFunction(lambda: f"producto-{uuid.uuid4().hex[:8]}")
    name = factory.LazyAttribute(lambda product: f"Producto {product.slug}")
    price = Decimal("289.00")
    stock = 10
    active = True
    image = "img/products/taza-talavera.svg"


class OrderFactory(factory.django.DjangoModelFactory):
    """An order for `lines` ((product, quantity) pairs), its stock taken as checkout takes it;
    its total is the lines' unless given."""

    class Meta:
        model = Order

    first_name = "Ana"
    last_name = "Pérez"
    email = "ana@example.com"
    phone = "5512345678"
    street = "Avenida Juárez"
    number = "12"
    colony = "Centro"
    city = "Puebla"
    state = "Puebla"
    postal_code = "72000"
    country = "MX"

    @classmethod
    def _create(cls, model_class: type[Order], *args: Any, lines: Any = (), **kwargs: Any) -> Order:
        kwargs.setdefault("total", sum((p.price * q for p, q in lines), Decimal("0.00")))
        order = super()._create(model_class, *args, **kwargs)
        for product, quantity in lines:
            OrderItem.objects.create(
                order=order,
                product=product,
                name=product.name,
                unit_price=product.price,
                quantity=quantity,
            )
            Product.objects.filter(pk=product.pk).update(stock=product.stock - quantity)
            product.refresh_from_db()
        return order


class PaymentFactory(factory.django.DjangoModelFactory):
    """A payment row written straight to the database, each one created a second after the one
    before, with a provider id unless it never reached the provider: of `order` when one is
    given (its reference and total), else of a new reference, for $250.00.

    Traits: `charged` (approved and captured in full) and `held` (authorized, manual capture).

    A payment the live sandbox must know is made by `provider_payment` instead."""

    class Meta:
        model = Payment

    class Params:
        order: Order | None = None
        charged = factory.Trait(status="approved", captured_amount=factory.SelfAttribute("amount"))
        held = factory.Trait(status="authorized", capture_method="manual")

    external_reference = factory.LazyAttribute(
        lambda payment: payment.order.reference if payment.order else order_reference()
    )
    idempotency_key = factory.LazyFunction(lambda: uuid.uuid4().hex)
    amount = factory.LazyAttribute(
        lambda payment: payment.order.total if payment.order else Decimal("250.00")
    )
    capture_method = "automatic"
    status = "approved"
    created_at = factory.Sequence(lambda n: timezone.now() + timedelta(seconds=n))
    provider_id = factory.LazyAttribute(
        lambda payment: (
            None if payment.status in ("creating", "unknown", "failed") else uuid.uuid4().hex
        )
    )


class PaymentEventFactory(factory.django.DjangoModelFactory):
    """An entry of `payment`'s ledger (required), written as the services write it (the
    message as stored: see payments.words), each a second after the one before."""

    class Meta:
        model = PaymentEvent

    kind = "synced"
    created_at = factory.Sequence(lambda n: timezone.now() + timedelta(seconds=n))


class OrderEventFactory(factory.django.DjangoModelFactory):
    """An entry of `order`'s ledger (required), each a second after the one before."""

    class Meta:
        model = OrderEvent

    kind = "refreshed"
    created_at = factory.Sequence(lambda n: timezone.now() + timedelta(seconds=n))


class RefundFactory(factory.django.DjangoModelFactory):
    """A refund of `payment` (required), as the provider recorded it."""

    class Meta:
        model = Refund

    provider_id = factory.LazyFunction(lambda: uuid.uuid4().hex)
    amount = Decimal("100.00")
    status = "approved"


class SubscriptionFactory(factory.django.DjangoModelFactory):
    """A subscription as the shop keeps the provider's (written straight to the database),
    each created a second after the one before."""

    class Meta:
        model = Subscription

    provider_id = factory.LazyFunction(lambda: str(uuid.uuid4()))
    price_id = "price_mensual"
    customer = factory.LazyFunction(
        lambda: {"first_name": "Ana", "last_name": "Pérez", "email": "ana@example.com"}
    )
    customer_email = "ana@example.com"
    status = "active"
    created_at = factory.Sequence(lambda n: timezone.now() + timedelta(seconds=n))


class WebhookEventFactory(factory.django.DjangoModelFactory):
    """A notification as the receiver stores it, processed (written straight to the database),
    each received a second after the one before."""

    class Meta:
        model = WebhookEvent

    provider_payment_id = factory.LazyFunction(lambda: str(uuid.uuid4()))
    event_type = "UPDATE"
    state = "processed"
    attempts = 1
    received_at = factory.Sequence(lambda n: timezone.now() + timedelta(seconds=n))


# --- A payment the live sandbox knows ---------------------------------------------------------


def provider_payment(
    provider: Api,
    *,
    order: Order | None = None,
    amount: Decimal | str | None = None,
    capture_method: str = "automatic",
    number: str = VISA,
    card_token: str | None = None,
    external_reference: str | None = None,
    attempt_key: str | None = None,
    **attempt: Any,
) -> Payment:
    """The one way to make a payment the live sandbox knows, as checkout makes it: a card token
    of `number` from the sandbox (`provider`, its API) unless `card_token` is given, then the
    attempt stored by the payment service and its create sent here and now, as its task sends
    it (its task is not queued: a worker of the test would send it at the same time).

    Of `order` when one is given (its reference and total), else of a new reference, for
    $250.00; `capture_method` "manual" holds the money (authorized), "automatic" charges it
    (approved). The status is the provider's answer for the card, and the service's errors are
    raised. `attempt` overrides the rest of what is stored (description, customer,
    prevention_data, return_url, webhook_url: "" sends no notification, None the shop's
    receiver's)."""
    if amount is None:
        amount = order.total if order is not None else Decimal("250.00")
    if external_reference is None:
        external_reference = order.reference if order is not None else order_reference()
    fields: dict[str, Any] = {
        "external_reference": external_reference,
        "attempt_key": attempt_key or uuid.uuid4().hex,
        "amount": Decimal(amount) if isinstance(amount, str) else amount,
        "currency": "MXN",
        "description": "Taza de barro",
        "card_token": card_token if card_token is not None else provider.card_token(number)["id"],
        "capture_method": capture_method,
        "customer": {"first_name": "Ana", "last_name": "Pérez", "email": "ana@example.com"},
        "prevention_data": {"device_finger_print_token": "sess_test"},
        "return_url": "http://127.0.0.1:8000/checkout/return",
        "webhook_url": "",
        **attempt,
    }
    with transaction.atomic():
        start = len(connection.run_on_commit)
        stored = payment_attempt_store(**fields)
        del connection.run_on_commit[start:]
    return payment_send_create(payment=stored)
