"""Business rules of the storefront, by concern: orders from carts and what an order's status is
given its payments (the only way an order moves), the payment page, duplicate charges, mail."""

from checkout.selectors import order_payments
from checkout.services.mail import order_mail_deliver, orders_list_send, queue_order_mails
from checkout.services.mails_due import order_mails_due
from checkout.services.order_status import PAID_STATUSES, charges_held, derive_order_status
from checkout.services.orders import (
    CheckoutError,
    cart_stock_check,
    order_as_paid_now,
    order_create_from_cart,
    order_sync_status,
)
from checkout.services.payment_page import (
    PaymentOutcome,
    order_check_payment,
    order_pay,
    outcome_of,
)

__all__ = [
    "PAID_STATUSES",
    "CheckoutError",
    "PaymentOutcome",
    "cart_stock_check",
    "charges_held",
    "derive_order_status",
    "order_as_paid_now",
    "order_check_payment",
    "order_create_from_cart",
    "order_mail_deliver",
    "order_mails_due",
    "order_pay",
    "order_payments",
    "order_sync_status",
    "orders_list_send",
    "outcome_of",
    "queue_order_mails",
]
