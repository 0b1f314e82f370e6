"""Business rules of payments: keyword-only, typed, one transaction each.

No database lock is ever held over an HTTP call: actions claim an intent on the payment with a
compare-and-set update, call the provider, then apply the answer in a short transaction.

- `records`: what every change shares (the actor, the ledger line, the status signal, amounts);
- `snapshots`: applying the provider's snapshots of a payment;
- `attempts`: storing a checkout attempt (its create queued), closing one whose outcome stayed
  unknown;
- `claims`: a staff action's claim on a payment.

The calls to the provider that use them are in `payments.calls`.
"""

from __future__ import annotations

from payments.services.attempts import payment_attempt_store, payment_close_unconfirmed
from payments.services.records import Actor, check_amount
from payments.services.snapshots import IllegalTransition, payment_apply

__all__ = [
    "Actor",
    "IllegalTransition",
    "check_amount",
    "payment_apply",
    "payment_attempt_store",
    "payment_close_unconfirmed",
]
