"""The receivers the shop's is measured against, each under the same server and middleware:
the least a Django JSON endpoint does, the pattern most Django projects use, and one that reads
the payment from the provider before answering."""

from __future__ import annotations

import json

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bench.tasks import tutorial_process_task
from payments.errors import PaymentError
from payments.reconciliation import payment_sync
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
        tutorial_process_task.delay(event.pk)
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
