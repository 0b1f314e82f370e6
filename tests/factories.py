"""factory-boy factories for the shop's data, written straight to the database (the payment flow
itself is exercised through the services and the sandbox, tests/payments/factories.py)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import factory
from django.utils import timezone

from checkout.models import Order, OrderEvent, OrderItem, Product
from payments.models import Payment, PaymentEvent, Refund


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
    """A payment row of `order` (required), each one created a second after the one before;
    a provider id unless it never reached the provider."""

    class Meta:
        model = Payment

    class Params:
        order: Order | None = None

    external_reference = factory.LazyAttribute(lambda payment: payment.order.reference)
    idempotency_key = factory.LazyFunction(lambda: uuid.uuid4().hex)
    amount = factory.LazyAttribute(lambda payment: payment.order.total)
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
    message as stored: see payments.ledger), each a second after the one before."""

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
