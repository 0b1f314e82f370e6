"""The two errors every app's own build on: a `Refusal`, whose message is safe to show to the
person who asked (a shopper, a staff member), in their language; and a `TryLater`, the other
side asking to be asked again later (a provider's 429), which a task waits out
(`core.task_queue`). Each app's refusals live with the rules that raise them (payments'
`PaymentError` in payments/provider/errors.py, `ActionBusy` in staff_actions/rules.py, ...)."""

from __future__ import annotations


class Refusal(Exception):
    """Something the shop refused or could not do, said in words safe to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TryLater(Exception):
    """Not done, and not refused: the other side asked to be asked again later (a provider's
    429). `retry_after`: the seconds it asked to wait (a task that raises it, or raises from it,
    waits that long plus jitter before its next try: `core.task_queue.ShopTask`). `seniority`,
    from 0 to 1: how long this work has waited already (1: the longest); the longer, the less
    jitter, so that the work held back longest comes back first, near first come first served."""

    retry_after: float = 1.0
    seniority: float = 0.0
