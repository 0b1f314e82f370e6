"""The 3-D Secure challenge page at `pending_action.url` (on the sandbox origin).

The shopper types the one-time code (sandbox: 123456 passes, anything else fails) or cancels
(fails). The result page posts `{paymentId}` to the parent window, targeted at the origin of
the payment's `return_url` when one was given. The challenge id in the URL is an unguessable
capability, which is why the form needs no CSRF cookie (cookies are third-party in an iframe).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from sandbox.provider.models import Payment, PaymentStatus
from sandbox.provider.payments import ChallengeClosed, challenge_complete, challenge_payment

PASSING_CODE = "123456"


def _target_origin(payment: Payment) -> str:
    if not payment.return_url:
        return "*"
    parts = urlsplit(payment.return_url)
    return f"{parts.scheme}://{parts.netloc}"


def _context(payment: Payment, **extra: object) -> dict[str, object]:
    return {
        "payment": payment,
        "merchant_name": settings.SANDBOX_MERCHANT_NAME,
        "masked_card": f"{payment.method.name} •••• {payment.card.get('last_digits', '')}",
        "target_origin": _target_origin(payment),
        **extra,
    }


@csrf_exempt
@require_http_methods(["GET", "POST"])
def challenge(request: HttpRequest, challenge_id: str) -> HttpResponse:
    payment = challenge_payment(challenge_id=challenge_id)
    if payment is None:
        return render(request, "sandbox/threeds_unknown.html", status=404)
    if request.method == "GET":
        if payment.status != PaymentStatus.PENDING:
            return render(
                request, "sandbox/threeds.html", _context(payment, closed=True), status=410
            )
        return render(request, "sandbox/threeds.html", _context(payment))
    action = request.POST.get("action", "")
    if action not in {"submit", "cancel"}:
        return render(
            request,
            "sandbox/threeds.html",
            _context(payment, error="Choose Verify or Cancel."),
            status=400,
        )
    code = request.POST.get("code", "").strip()
    passed = action == "submit" and code == PASSING_CODE
    try:
        payment = challenge_complete(challenge_id=challenge_id, passed=passed)
    except ChallengeClosed:
        payment = challenge_payment(challenge_id=challenge_id) or payment
        return render(request, "sandbox/threeds.html", _context(payment, closed=True), status=409)
    return render(request, "sandbox/threeds.html", _context(payment, done=True, passed=passed))
