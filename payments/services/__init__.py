"""Business rules of payments: keyword-only, typed, one transaction each.

No database lock is ever held over an HTTP call: actions claim an intent on the payment with a
compare-and-set update, call the provider, then apply the answer in a short transaction.

- `records`: what every change shares (the actor, the ledger line, the status signal, amounts);
- `snapshots`: applying the provider's snapshots of a payment, and refreshing one;
- `attempts`: creating a checkout attempt's payment, and closing one whose outcome stayed unknown;
- `claims`: a staff action's claim on a payment;
- `staff_actions`: capture, cancel, refund;
- `subscriptions`: importing and cancelling subscriptions.
"""

from __future__ import annotations

from payments.services.attempts import payment_close_unconfirmed, payment_create
from payments.services.records import Actor, check_amount
from payments.services.snapshots import IllegalTransition, payment_apply, payment_refresh
from payments.services.staff_actions import payment_cancel, payment_capture, payment_refund
from payments.services.subscriptions import subscription_cancel, subscription_sync

__all__ = [
    "Actor",
    "IllegalTransition",
    "check_amount",
    "payment_apply",
    "payment_cancel",
    "payment_capture",
    "payment_close_unconfirmed",
    "payment_create",
    "payment_refresh",
    "payment_refund",
    "subscription_cancel",
    "subscription_sync",
]
