"""The shop's calls to the provider. Each makes its call with no lock held and applies the
answer through `payments.services`. Only Celery tasks (and other calls) import these modules:
no web request, page or admin view waits on the provider (tests/test_provider_calls.py walks
the URL conf to prove it).

- `refresh`: reading a payment again;
- `staff_actions`: capture, cancel, refund;
- `subscriptions`: importing and cancelling subscriptions;
- `catalogue`: the payment methods catalogue the pages read, and the provider check that
  `/healthz/deps` reports.
"""

from __future__ import annotations

from payments.calls.refresh import payment_refresh
from payments.calls.staff_actions import payment_cancel, payment_capture, payment_refund
from payments.calls.subscriptions import subscription_cancel, subscription_sync

__all__ = [
    "payment_cancel",
    "payment_capture",
    "payment_refresh",
    "payment_refund",
    "subscription_cancel",
    "subscription_sync",
]
