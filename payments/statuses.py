"""How provider answers read: the local status of a provider payment, and status order.

The spec warns that a sample authorization came back with status `approved` but detail
AU-CAP01, and that the letter case of detail messages varies. So: codes, never messages; and
where the detail code is more specific than the status, the code decides.
"""

from __future__ import annotations

from payments.models import PaymentStatus
from payments.types import ProviderPayment

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


def local_status(remote: ProviderPayment) -> str:
    code = remote.status_detail.code.strip().upper()
    if code in SPECIFIC_CODES:
        return SPECIFIC_CODES[code]
    status = remote.status.strip().lower()
    if status not in PROVIDER_STATUSES:
        raise UnknownProviderStatus(f"unknown provider status {remote.status!r} ({code})")
    return status
