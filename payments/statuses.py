"""How provider answers read: the local status of a provider payment, status order, and what
a status detail code means for staff.

The spec warns that a sample authorization came back with status `approved` but detail
AU-CAP01, and that the letter case of detail messages varies. So: codes, never messages; and
where the detail code is more specific than the status, the code decides.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from core.sentences import Sentence
from payments.models import PaymentStatus
from payments.provider.types import ProviderPayment

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
