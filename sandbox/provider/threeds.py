"""The 3-D Secure challenge page at `pending_action.url` (on the sandbox origin).

The shopper types the one-time code (sandbox: 123456 passes, anything else fails) or cancels
(fails). The result page posts `{paymentId}` to the parent window, targeted at the origin of
the payment's `return_url` when one was given. The challenge id in the URL is an unguessable
capability, which is why the form needs no CSRF cookie (cookies are third-party in an iframe).
A completed or expired challenge cannot be replayed.
"""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from sandbox.provider.i18n import THREE_DS, request_locale
from sandbox.provider.models import Payment, PaymentStatus
from sandbox.provider.payments import ChallengeClosed, challenge_complete, challenge_payment
from sandbox.provider.sdk_views import page_csp

PASSING_CODE = "123456"


def money(amount: Decimal) -> str:
    """An amount as the merchant's pages write it: $1,780.00 (comma thousands, two decimals)."""
    return f"${amount:,.2f}"


def _return_origin(payment: Payment) -> str | None:
    if not payment.return_url:
        return None
    parts = urlsplit(payment.return_url)
    return f"{parts.scheme}://{parts.netloc}"


def _page(
    request: HttpRequest, payment: Payment | None, status: int = 200, **extra: object
) -> HttpResponse:
    locale = request_locale(request)
    context: dict[str, object] = {"text": THREE_DS[locale], "locale": locale, **extra}
    if payment is None:
        response = render(request, "sandbox/threeds_unknown.html", context, status=404)
    else:
        origin = _return_origin(payment)
        context.update(
            payment=payment,
            merchant_name=settings.SANDBOX_MERCHANT_NAME,
            masked_card=f"{payment.method.name} •••• {payment.card.get('last_digits', '')}",
            amount=money(payment.amount),
            target_origin=origin or "*",
            approved=payment.status in (PaymentStatus.APPROVED, PaymentStatus.AUTHORIZED),
        )
        response = render(request, "sandbox/threeds.html", context, status=status)
    # Any merchant page may frame the challenge; what protects the outcome is the message's
    # target origin (the return_url's) and the merchant reading the payment server-side.
    response["Content-Security-Policy"] = page_csp("*")
    response["Cache-Control"] = "no-store"
    return response


@csrf_exempt
@require_http_methods(["GET", "POST"])
def challenge(request: HttpRequest, challenge_id: str) -> HttpResponse:
    payment = challenge_payment(challenge_id=challenge_id)
    if payment is None:
        return _page(request, None)
    if request.method == "GET":
        if payment.status != PaymentStatus.PENDING:
            return _page(request, payment, 410, closed=True)
        return _page(request, payment)
    action = request.POST.get("action", "")
    if action not in {"submit", "cancel"}:
        return _page(request, payment, 400, error=THREE_DS[request_locale(request)]["choose"])
    passed = action == "submit" and request.POST.get("code", "").strip() == PASSING_CODE
    try:
        payment = challenge_complete(challenge_id=challenge_id, passed=passed)
    except ChallengeClosed:
        payment = challenge_payment(challenge_id=challenge_id) or payment
        return _page(request, payment, 409, closed=True)
    return _page(request, payment, done=True, passed=passed)
