"""The order's own link: `/pedido/<reference>/<token>/` opens the order's page in any browser,
without the session that placed it. The token is a signature of the reference with the
project's SECRET_KEY (unguessable, nothing to store; links signed with a key in
SECRET_KEY_FALLBACKS still open while the key is rotated). Every mail to the customer carries
the link."""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.urls import reverse

_SALT = "checkout.order-link"


def order_token(reference: str) -> str:
    return signing.Signer(salt=_SALT).signature(reference)


def token_matches(reference: str, token: str) -> bool:
    try:
        return signing.Signer(salt=_SALT).unsign(f"{reference}:{token}") == reference
    except signing.BadSignature:
        return False


def order_link_path(reference: str) -> str:
    token = order_token(reference)
    return reverse("checkout:order_link", kwargs={"reference": reference, "token": token})


def order_link(reference: str) -> str:
    """The absolute address of the order's link, for mails (SHOP_BASE_URL)."""
    return settings.SHOP_BASE_URL.rstrip("/") + order_link_path(reference)
