"""Products, orders and their items. An order's status moves only through the payments
app's `payment_status_changed` signal (see checkout/receivers.py)."""

from __future__ import annotations

import secrets
from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

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


PAYABLE_STATUSES = frozenset(
    {
        OrderStatus.AWAITING_PAYMENT,
        OrderStatus.AWAITING_AUTHENTICATION,
        OrderStatus.PAYMENT_FAILED,
    }
)


class Order(models.Model):
    reference = models.CharField(max_length=16, unique=True, default=new_reference)
    status = models.CharField(
        max_length=32,
        choices=OrderStatus.choices,
        default=OrderStatus.AWAITING_PAYMENT,
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
    total = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="MXN")
    language = models.CharField(max_length=8, default="es")
    confirmation_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("order")
        verbose_name_plural = _("orders")

    def __str__(self) -> str:
        return self.reference

    @property
    def is_payable(self) -> bool:
        return self.status in PAYABLE_STATUSES

    @property
    def customer_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()


class OrderItem(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="items")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=120)
    unit_price = models.DecimalField(max_digits=10, decimal_places=2)
    quantity = models.PositiveIntegerField(validators=[MinValueValidator(1)])

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.quantity} x {self.name}"

    @property
    def line_total(self) -> Decimal:
        return self.unit_price * self.quantity
