"""The brownout benchmark's peer: the pay attempt as most Django integrations write it, the view
calling the provider and answering its outcome. It takes the same body as the shop's pay
attempt, under the same server and middleware (CSRF, the session's order), and answers in the
same shape, so that the same shoppers pay through either."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from checkout.ownership import own_order
from payments.client import get_client
from payments.errors import OutcomeUnknown, ProviderApiError
from payments.models import Payment
from payments.statuses import local_status
from webhooks.addresses import payment_notification_url


def _outcome(result: str, payment_id: str = "", three_ds_url: str = "", redirect: str = "") -> dict:
    return {"result": result, "payment_id": payment_id, "three_ds_url": three_ds_url,
            "redirect": redirect, "message": ""}  # fmt: skip


@require_POST
def inline_pay(request: HttpRequest, reference: str) -> JsonResponse:
    """Create the payment at the provider inside the request, store it, answer its outcome."""
    order = own_order(request, reference)
    attempt: dict[str, Any] = json.loads(request.body or b"{}")
    key = f"{order.reference}-{attempt['attempt_id']}"
    address = ("street", "number", "colony", "city", "state", "postal_code", "country")
    body = {
        "amount": order.total,
        "currency": order.currency,
        "description": f"Order {order.reference} at {settings.SHOP_NAME}",
        "capture_method": settings.PAYMENTS_CAPTURE_METHOD,
        "payment_method": {"token": attempt["card_token"]},
        "customer": {
            "first_name": order.first_name, "last_name": order.last_name, "email": order.email,
            "phone": order.phone, "address": {name: getattr(order, name) for name in address},
        },
        "prevention_data": {
            "session_id": attempt.get("session_id", ""),
            "device_finger_print_token": attempt.get("session_id", ""),
            "user_agent": attempt.get("user_agent", ""),
            "website": settings.SHOP_BASE_URL,
        },
        "external_reference": order.reference,
        "return_url": request.build_absolute_uri(reverse("checkout:order", args=[reference])),
        "webhook_url": payment_notification_url(),
    }  # fmt: skip
    try:
        remote = get_client().create_payment(body=body, idempotency_key=key)
    except OutcomeUnknown:
        return JsonResponse(_outcome("unknown"))
    except ProviderApiError:
        return JsonResponse(_outcome("failed"))
    status = local_status(remote)
    Payment.objects.create(
        provider_id=remote.id, external_reference=order.reference, idempotency_key=key,
        capture_method=remote.capture_method, status=status, amount=remote.amount,
        currency=remote.currency, description=remote.description[:255],
        customer_email=order.email, three_ds_url=remote.three_ds_url,
        provider_version=remote.version, snapshot=remote.raw,
    )  # fmt: skip
    paid = status in ("approved", "authorized")
    redirect = reverse("checkout:order", args=[reference]) if paid else ""
    return JsonResponse(_outcome(status, remote.id, remote.three_ds_url, redirect))
