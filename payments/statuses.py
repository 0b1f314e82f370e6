"""A payment's statuses: the shop's own and the provider's, where each may move next, their
order when two snapshots of one version are compared, and how the provider's answers read (the
local status of a provider payment, and what a status detail code means for staff).

The spec warns that a sample authorization came back with status `approved` but detail
AU-CAP01, and that the letter case of detail messages varies. So: codes, never messages; and
where the detail code is more specific than the status, the code decides.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from core.sentences import Sentence
from payments.provider.types import ProviderPayment


class PaymentStatus(models.TextChoices):
    # Local states, before or without a provider answer.
    CREATING = "creating", _("Creating")
    UNKNOWN = "unknown", _("Outcome unknown")
    FAILED = "failed", _("Not created")
    # The provider's states.
    PENDING = "pending", _("Pending (3-D Secure)")
    AUTHORIZED = "authorized", _("Authorized")
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")
    CANCELLED = "cancelled", _("Cancelled")
    REFUNDED = "refunded", _("Refunded")


def status_label(value: str) -> str:
    """A status's label in the active language; a value the shop does not know (a provider's
    status it has never heard of, kept in a ledger entry) as it was said."""
    try:
        return str(PaymentStatus(value).label)
    except ValueError:
        return value


# An attempt whose create has no answer yet: it may or may not exist at the provider.
IN_FLIGHT = (PaymentStatus.CREATING, PaymentStatus.UNKNOWN)
# Detail codes of a cancelled authorization: by the merchant, or expired (nothing charged).
CANCELLED_UNCHARGED = frozenset({"CA-MER01", "CA-EXP01"})
FINAL_STATUSES = frozenset(
    {
        PaymentStatus.FAILED,
        PaymentStatus.REJECTED,
        PaymentStatus.CANCELLED,
        PaymentStatus.REFUNDED,
    }
)
# Where each status may go next (anything else is an illegal transition).
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    PaymentStatus.CREATING: frozenset(PaymentStatus.values) - {PaymentStatus.CREATING},
    PaymentStatus.UNKNOWN: frozenset(PaymentStatus.values)
    - {PaymentStatus.CREATING, PaymentStatus.UNKNOWN},
    PaymentStatus.PENDING: frozenset(
        {
            PaymentStatus.AUTHORIZED,
            PaymentStatus.APPROVED,
            PaymentStatus.REJECTED,
            PaymentStatus.CANCELLED,
        }
    ),
    PaymentStatus.AUTHORIZED: frozenset({PaymentStatus.APPROVED, PaymentStatus.CANCELLED}),
    PaymentStatus.APPROVED: frozenset({PaymentStatus.REFUNDED, PaymentStatus.CANCELLED}),
    PaymentStatus.FAILED: frozenset(),
    PaymentStatus.REJECTED: frozenset(),
    PaymentStatus.CANCELLED: frozenset(),
    PaymentStatus.REFUNDED: frozenset(),
}


def _reachable(graph: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """Statuses reachable through one or more legal steps (a newer snapshot may skip some)."""
    closure: dict[str, frozenset[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            status = todo.pop()
            if status not in seen:
                seen.add(status)
                todo.extend(graph[status])
        closure[start] = frozenset(seen)
    return closure


REACHABLE = _reachable(ALLOWED_TRANSITIONS)


# Detail codes that say more than the status they come with.
SPECIFIC_CODES = {
    "AU-CAP01": PaymentStatus.AUTHORIZED,
    "PE-3DS01": PaymentStatus.PENDING,
}
PROVIDER_STATUSES = {
    PaymentStatus.PENDING,
    PaymentStatus.AUTHORIZED,
    PaymentStatus.APPROVED,
    PaymentStatus.REJECTED,
    PaymentStatus.CANCELLED,
    PaymentStatus.REFUNDED,
}
# What each detail code says, for staff in their language (the provider's detail messages are
# English, and their letter case varies). The spec gives the first four; the others are the
# sandbox's contract (README, "Status details"). Any other code is shown with the provider's
# own words.
DETAILS = {
    "AU-CAP01": _("Waiting to be captured"),
    "PE-3DS01": _("Waiting for 3-D Secure"),
    "AP-PAI01": _("Paid"),
    "CA-MER01": _("Cancelled by the shop"),
    "CA-EXP01": _("Authorization expired"),
    "CA-3DS01": _("3-D Secure not completed in time"),
    "CA-VOI01": _("Voided: refunded in full on the day of approval"),
    "RF-REF01": _("Refunded in full"),
    "RE-DEC01": _("Declined by the bank"),
    "RE-FUN01": _("Insufficient funds"),
    "RE-3DS01": _("3-D Secure failed or cancelled"),
    "RE-BIN01": _("Would need 3-D Secure (binary mode)"),
}
# Order used to compare two snapshots of the same version.
RANK = {
    PaymentStatus.CREATING: 0,
    PaymentStatus.UNKNOWN: 0,
    PaymentStatus.PENDING: 1,
    PaymentStatus.AUTHORIZED: 2,
    PaymentStatus.APPROVED: 3,
    PaymentStatus.REJECTED: 4,
    PaymentStatus.CANCELLED: 4,
    PaymentStatus.REFUNDED: 4,
    PaymentStatus.FAILED: 4,
}


class UnknownProviderStatus(ValueError):
    """The provider answered a status this shop does not know."""


# Its message, kept in the payment's ledger (an anomaly) and read there by payments.words.
UNKNOWN_STATUS = Sentence(gettext_noop("unknown provider status %(status)s (%(code)s)"))


def local_status(remote: ProviderPayment) -> str:
    code = remote.status_detail.code.strip().upper()
    if code in SPECIFIC_CODES:
        return SPECIFIC_CODES[code]
    status = remote.status.strip().lower()
    if status not in PROVIDER_STATUSES:
        raise UnknownProviderStatus(UNKNOWN_STATUS(status=repr(remote.status), code=code))
    return status
