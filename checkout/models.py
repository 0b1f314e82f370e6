"""Products, orders and their items. An order's status moves only through the payments
app's `payment_status_changed` signal (see checkout/receivers.py)."""

from __future__ import annotations

import secrets
from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models.functions import Upper
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from core.ledger import LedgerEntry

# Crockford-style alphabet: no I, L, O or U, so references read aloud without confusion.
REFERENCE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_reference() -> str:
    return "ORD-" + "".join(secrets.choice(REFERENCE_ALPHABET) for _ in range(5))


class Product(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(_("name"), max_length=120)
    name_en = models.CharField(_("name (English)"), max_length=120, blank=True)
    description = models.TextField(_("description"), blank=True)
    description_en = models.TextField(_("description (English)"), blank=True)
    price = models.DecimalField(
        _("price (MXN)"),
        max_digits=10,
        decimal_places=2,
        validators=[MinValueValidator(Decimal("0.01"))],
    )
    image = models.CharField(_("image (static path)"), max_length=200, blank=True)
    stock = models.PositiveIntegerField(_("stock"), default=0)
    active = models.BooleanField(_("active"), default=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("product")
        verbose_name_plural = _("products")

    def __str__(self) -> str:
        return self.name

    @property
    def display_name(self) -> str:
        return self.name_en if get_language() == "en" and self.name_en else self.name

    @property
    def display_description(self) -> str:
        if get_language() == "en" and self.description_en:
            return self.description_en
        return self.description

    @property
    def in_stock(self) -> bool:
        return self.stock > 0


class OrderStatus(models.TextChoices):
    AWAITING_PAYMENT = "awaiting_payment", _("Awaiting payment")
    AWAITING_AUTHENTICATION = "awaiting_authentication", _("Awaiting bank verification")
    AUTHORIZED = "authorized", _("Payment held, charged at shipping")
    PAID = "paid", _("Paid")
    PAYMENT_FAILED = "payment_failed", _("Payment failed")
    CANCELLED = "cancelled", _("Cancelled")
    REFUNDED = "refunded", _("Refunded")
    PARTIALLY_REFUNDED = "partially_refunded", _("Partially refunded")
    EXPIRED = "expired", _("Expired: not paid in time")


class Fulfilment(models.TextChoices):
    UNFULFILLED = "unfulfilled", _("Not shipped")
    PARTIALLY_SHIPPED = "partially_shipped", _("Partly shipped")
    SHIPPED = "shipped", _("Shipped")
    CANCELLED = "cancelled", _("Cancelled")


PAYABLE_STATUSES = frozenset(
    {
        OrderStatus.AWAITING_PAYMENT,
        OrderStatus.AWAITING_AUTHENTICATION,
        OrderStatus.PAYMENT_FAILED,
    }
)


# Orders paid or held whose items are not all sent: waiting to be shipped.
TO_SHIP = models.Q(
    status__in=[OrderStatus.PAID, OrderStatus.AUTHORIZED, OrderStatus.PARTIALLY_REFUNDED],
    fulfilment__in=[Fulfilment.UNFULFILLED, Fulfilment.PARTIALLY_SHIPPED],
)


class Order(models.Model):
    reference = models.CharField(_("reference"), max_length=16, unique=True, default=new_reference)
    status = models.CharField(
        _("payment"),
        max_length=32,
        choices=OrderStatus.choices,
        default=OrderStatus.AWAITING_PAYMENT,
        db_index=True,
    )
    fulfilment = models.CharField(
        _("shipping"),
        max_length=20,
        choices=Fulfilment.choices,
        default=Fulfilment.UNFULFILLED,
        db_index=True,
    )
    first_name = models.CharField(_("first name"), max_length=100)
    last_name = models.CharField(_("last name"), max_length=100)
    email = models.EmailField(_("email"))
    phone = models.CharField(_("phone"), max_length=20)
    street = models.CharField(_("street"), max_length=200)
    number = models.CharField(_("number"), max_length=20)
    colony = models.CharField(_("colony"), max_length=120)
    city = models.CharField(_("city"), max_length=120)
    state = models.CharField(_("state"), max_length=60)
    postal_code = models.CharField(_("postal code"), max_length=5)
    country = models.CharField(_("country"), max_length=2, default="MX")
    total = models.DecimalField(_("total"), max_digits=12, decimal_places=2)
    currency = models.CharField(_("currency"), max_length=3, default="MXN")
    language = models.CharField(_("language"), max_length=8, default="es")
    # Its items are held for it until then (SHOP_RESERVATION_MINUTES); not paid or authorized
    # by then, it expires and they go back to stock (checkout.reservations.rules).
    reserved_until = models.DateTimeField(_("items held until"), null=True, blank=True)
    created_at = models.DateTimeField(_("placed"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["reserved_until"],
                name="order_reservation_open",
                condition=models.Q(status__in=sorted(PAYABLE_STATUSES)),
            ),
            # The admin's list: its order (newest first), its filters, its sorts and its
            # search by email (in any case).
            models.Index(fields=["created_at", "id"], name="order_created"),
            models.Index(fields=["status", "created_at", "id"], name="order_status_created"),
            models.Index(
                fields=["fulfilment", "created_at", "id"], name="order_fulfilment_created"
            ),
            models.Index(fields=["total", "id"], name="order_total"),
            models.Index(Upper("email"), name="order_email_upper"),
            # The owner's dashboard and the admin's list of the orders waiting to be shipped.
            models.Index(fields=["created_at", "id"], name="order_to_ship", condition=TO_SHIP),
        ]
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        permissions = [
            ("ship_order", _("Can ship orders")),
            ("cancel_order", _("Can cancel orders")),
        ]

    def __str__(self) -> str:
        return self.reference

    @property
    def is_payable(self) -> bool:
        return self.status in PAYABLE_STATUSES

    @property
    def customer_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()


class OrderItem(models.Model):
    order = models.ForeignKey(
        Order, on_delete=models.CASCADE, related_name="items", verbose_name=_("order")
    )
    product = models.ForeignKey(
        Product, on_delete=models.PROTECT, related_name="+", verbose_name=_("product")
    )
    name = models.CharField(_("name"), max_length=120)
    name_en = models.CharField(_("name (English)"), max_length=120, blank=True)
    unit_price = models.DecimalField(_("unit price"), max_digits=10, decimal_places=2)
    quantity = models.PositiveIntegerField(_("quantity"), validators=[MinValueValidator(1)])
    # Of `quantity`: sent to the customer, and put back in stock (cancelled, released or
    # returned). What is neither is still to ship.
    quantity_shipped = models.PositiveIntegerField(_("shipped"), default=0)
    quantity_restocked = models.PositiveIntegerField(_("back in stock"), default=0)

    class Meta:
        ordering = ["id"]
        verbose_name = _("item")
        verbose_name_plural = _("items")

    def __str__(self) -> str:
        return f"{self.quantity} × {self.name}"

    @property
    def display_name(self) -> str:
        return self.name_en if get_language() == "en" and self.name_en else self.name

    @property
    def line_total(self) -> Decimal:
        return self.unit_price * self.quantity

    @property
    def left_to_ship(self) -> int:
        return max(self.quantity - self.quantity_shipped - self.quantity_restocked, 0)


class OrderEventKind(models.TextChoices):
    SHIPPED = "shipped", _("Shipped")
    CANCELLED = "cancelled", _("Cancelled")
    REFUNDED = "refunded", _("Refunded")
    RESTOCKED = "restocked", _("Back in stock")
    REFRESHED = "refreshed", _("Refreshed from the provider")
    EXPIRED = "expired", _("Expired")
    RESERVED = "reserved", _("Items held again")
    RETURNED = "returned", _("Late payment given back")
    # Written by books: the buyer's factura.
    INVOICING = "invoicing", _("Invoice being issued")
    INVOICED = "invoiced", _("Invoice issued")
    CREDIT_NOTE = "credit_note", _("Credit note due")


class OrderEvent(LedgerEntry):
    """Append-only ledger of what staff did to an order (the money is in its payments' ledger)."""

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="events", verbose_name=_("order")
    )
    kind = models.CharField(_("what"), max_length=16, choices=OrderEventKind.choices)

    class Meta(LedgerEntry.Meta):
        verbose_name = _("order event")
        verbose_name_plural = _("order events")

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.message}"


class OrderMailKind(models.TextChoices):
    RECEIVED = "received", _("Order received")
    PAID = "paid", _("Payment received")
    HELD = "held", _("Amount held")
    CHARGED = "charged", _("Shipped and charged")
    SHIPPED = "shipped", _("Shipped")
    CANCELLED = "cancelled", _("Cancelled")
    REFUNDED = "refunded", _("Refunded")
    EXPIRED = "expired", _("Expired")
    PAYMENT_RETURNED = "payment_returned", _("Late payment given back")


class OrderMail(models.Model):
    """A mail due to the order's customer for one event of the order (`key` names the event:
    one mail per event, however often the event is seen). Sent by a task; `sent_at` set once
    the mail server took it."""

    order = models.ForeignKey(
        Order, on_delete=models.CASCADE, related_name="mails", verbose_name=_("order")
    )
    kind = models.CharField(_("mail"), max_length=20, choices=OrderMailKind.choices)
    key = models.CharField(_("event"), max_length=80)
    amount = models.DecimalField(
        _("amount"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    released = models.DecimalField(
        _("released"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    created_at = models.DateTimeField(_("due since"), default=timezone.now)
    sent_at = models.DateTimeField(_("sent"), null=True, blank=True)
    # What the customer was told, as sent (the plain-text part), for staff: kept
    # SHOP_MAIL_KEEP_DAYS after sending, then blanked (checkout.retention.rules).
    # Database defaults: the release before these columns inserts mails without them.
    subject = models.CharField(_("subject"), max_length=255, blank=True, default="", db_default="")
    body = models.TextField(_("text"), blank=True, default="", db_default="")

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["order", "key"], name="order_mail_once_per_event")
        ]
        indexes = [
            models.Index(
                fields=["created_at"], name="order_mail_unsent", condition=models.Q(sent_at=None)
            ),
            # Retention: the mails whose text is still kept, by when they were sent.
            models.Index(
                fields=["sent_at"], name="order_mail_text_kept", condition=~models.Q(body="")
            ),
        ]
        verbose_name = _("mail to the customer")
        verbose_name_plural = _("mails to the customer")

    def __str__(self) -> str:
        return f"{self.order.reference}: {self.get_kind_display()}"
