"""Reads of the books: an order's money as the factura sees it, the list of facturas to issue
(one query whatever its length: the money and the payment form read within it)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import (
    BooleanField,
    DecimalField,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce

from books.models import FacturaRequest, FacturaState
from checkout.models import Order, OrderStatus
from payments.models import Payment
from payments.statuses import PaymentStatus

# Orders a factura may be asked for: paid, in full or in part refunded.
INVOICEABLE = (OrderStatus.PAID, OrderStatus.PARTIALLY_REFUNDED)
# The payments that took money (and may have given some or all back: a charge refunded on its
# day is voided, `cancelled`).
CHARGED_STATUSES = (PaymentStatus.APPROVED, PaymentStatus.REFUNDED, PaymentStatus.CANCELLED)
# SAT's c_FormaPago from the card's type as the provider's catalogue gives it.
SAT_PAYMENT_FORMS = {"credit_card": "04", "debit_card": "28", "ticket": "01"}
UNDEFINED_PAYMENT_FORM = "99"
ZERO = Value(Decimal("0.00"), output_field=DecimalField(max_digits=12, decimal_places=2))


@dataclass(frozen=True)
class Money:
    charged: Decimal
    refunded: Decimal

    @property
    def net(self) -> Decimal:
        return self.charged - self.refunded


def _payments_of(reference: object) -> QuerySet[Payment]:
    return Payment.objects.filter(external_reference=reference, status__in=CHARGED_STATUSES)


def _sum(reference: object, field: str) -> Subquery:
    return Subquery(
        _payments_of(reference)
        .values("external_reference")
        .annotate(total=Sum(field))
        .values("total")
    )


def order_money(order: Order) -> Money:
    """What the order's payments charged and refunded (one query)."""
    found = _payments_of(order.reference).aggregate(
        charged=Coalesce(Sum("captured_amount"), ZERO),
        refunded=Coalesce(Sum("refunded_amount"), ZERO),
    )
    return Money(charged=found["charged"], refunded=found["refunded"])


def payment_form_code(method_type: str | None) -> str:
    return SAT_PAYMENT_FORMS.get(method_type or "", UNDEFINED_PAYMENT_FORM)


def with_money(requests: QuerySet[FacturaRequest], *, via: str = "order__") -> QuerySet:
    """Requests (or orders, `via=""`) with `charged`, `refunded` and `method_type` (the type of
    the card of the order's latest charge), read within the same query."""
    reference = OuterRef(f"{via}reference")
    latest = _payments_of(reference).order_by("-created_at", "-pk")
    return requests.annotate(
        charged=Coalesce(_sum(reference, "captured_amount"), ZERO),
        refunded=Coalesce(_sum(reference, "refunded_amount"), ZERO),
        method_type=Subquery(
            latest.annotate(
                method_type=KeyTextTransform("type", KeyTextTransform("payment_method", "snapshot"))
            ).values("method_type")[:1]
        ),
    )


def facturas_to_issue() -> QuerySet[FacturaRequest]:
    """The requests not issued yet of paid orders, oldest first, with their order's money."""
    requests = FacturaRequest.objects.filter(
        state__in=[FacturaState.REQUESTED, FacturaState.ISSUING],
        order__status__in=INVOICEABLE,
    ).select_related("order")
    return with_money(requests)


def factura_of(order: Order) -> FacturaRequest | None:
    """The order's factura request, if any, with `has_pdf` (its files are not read)."""
    return (
        FacturaRequest.objects.filter(order=order)
        .defer("xml", "pdf")
        .annotate(has_pdf=ExpressionWrapper(Q(pdf__isnull=False), output_field=BooleanField()))
        .first()
    )


def credit_note_amount(factura: FacturaRequest, refunded_now: Decimal) -> Decimal:
    """What was refunded since the factura was issued (a credit note's amount)."""
    return max(refunded_now - (factura.refunded_at_issue or Decimal("0")), Decimal("0"))
