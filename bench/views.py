"""The views the shop is measured against, under the same server and middleware: three
receivers (the least a Django JSON endpoint does, the pattern most Django projects use, one that
reads the payment from the provider before answering) and the brownout's peer, a pay attempt
that creates the payment inside the request as most Django integrations do."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bench.tasks import TUTORIAL_TASK
from checkout.ownership import own_order
from core.task_queue import send_now
from payments.models import Payment
from payments.provider.client import get_client
from payments.provider.errors import OutcomeUnknown, PaymentError, ProviderApiError
from payments.rereading.calls import payment_sync
from payments.statuses import local_status
from webhooks.addresses import payment_notification_url
from webhooks.models import WebhookEvent


@csrf_exempt
def bare(request: HttpRequest) -> JsonResponse:
    """Parse the body as JSON and answer `{"status": "ok"}`: no database, no broker."""
    json.loads(request.body or b"{}")
    return JsonResponse({"status": "ok"})


class NotificationSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="provider_payment_id")
    origin = serializers.ChoiceField(choices=["payments-api"], write_only=True)

    class Meta:
        model = WebhookEvent
        fields = ["id", "origin", "event_type"]

    def create(self, validated_data: dict[str, object]) -> WebhookEvent:
        validated_data.pop("origin")
        validated_data["provider_payment_id"] = str(validated_data["provider_payment_id"])
        return super().create(validated_data)


class TutorialReceiver(APIView):
    """A DRF view with a ModelSerializer, `save()` and a task per notification."""

    authentication_classes: list[type] = []
    permission_classes: list[type] = []

    def post(self, request: Request) -> Response:
        serializer = NotificationSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        event = serializer.save()
        send_now(TUTORIAL_TASK, (event.pk,))
        return Response({"status": "received"})


@csrf_exempt
def inline(request: HttpRequest) -> JsonResponse:
    """Read (and apply) the payment from the provider inside the request, then answer."""
    payment_id = str(json.loads(request.body)["id"])
    try:
        outcome = payment_sync(provider_id=payment_id).outcome
    except PaymentError as exc:
        return JsonResponse({"status": "error", "message": exc.message}, status=503)
    return JsonResponse({"status": str(outcome)})


@require_POST
def inline_pay(request: HttpRequest, reference: str) -> JsonResponse:
    """Create the payment at the provider inside the request, store it, answer its outcome,
    taking the shop's pay attempt's body and answering in its shape."""
    order = own_order(request, reference)
    attempt: dict[str, Any] = json.loads(request.body or b"{}")
    key, session = f"{order.reference}-{attempt['attempt_id']}", attempt.get("session_id", "")
    address = ("street", "number", "colony", "city", "state", "postal_code", "country")
    body = {
        "amount": order.total, "currency": order.currency, "external_reference": order.reference,
        "description": f"Order {order.reference} at {settings.SHOP_NAME}",
        "capture_method": settings.PAYMENTS_CAPTURE_METHOD,
        "payment_method": {"token": attempt["card_token"]},
        "customer": {"first_name": order.first_name, "last_name": order.last_name,
                     "email": order.email, "phone": order.phone,
                     "address": {name: getattr(order, name) for name in address}},
        "prevention_data": {"session_id": session, "device_finger_print_token": session,
                            "user_agent": attempt.get("user_agent", ""),
                            "website": settings.SHOP_BASE_URL},
        "return_url": request.build_absolute_uri(reverse("checkout:order", args=[reference])),
        "webhook_url": payment_notification_url(),
    }  # fmt: skip
    try:
        remote = get_client().create_payment(body=body, idempotency_key=key)
    except (OutcomeUnknown, ProviderApiError) as exc:
        result = "unknown" if isinstance(exc, OutcomeUnknown) else "failed"
        return JsonResponse({"result": result, "payment_id": "", "three_ds_url": "",
                             "redirect": "", "message": ""})  # fmt: skip
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
    return JsonResponse({"result": status, "payment_id": remote.id, "message": "",
                         "three_ds_url": remote.three_ds_url, "redirect": redirect})  # fmt: skip
