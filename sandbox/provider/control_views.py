"""`/_sandbox/` control endpoints (secret token only) for tests, demos and benchmarks."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from rest_framework.request import Request
from rest_framework.response import Response

from sandbox.provider import clock
from sandbox.provider.errors import NOT_FOUND, ApiError, invalid_request
from sandbox.provider.models import (
    CardToken,
    Fault,
    IdempotencyRecord,
    Invoice,
    Payment,
    PaymentMethod,
    Refund,
    SandboxState,
    Subscription,
    WebhookDelivery,
)
from sandbox.provider.payments import payments_expire_due
from sandbox.provider.rate_limits import (
    RateLimitsSerializer,
    rate_limits_json,
    rate_limits_off,
    rate_limits_restore,
    rate_limits_set,
)
from sandbox.provider.representations import (
    payment_json,
    payment_method_json,
    subscription_json,
)
from sandbox.provider.seed import sandbox_seed
from sandbox.provider.serializers import (
    ChaosSerializer,
    ClockSerializer,
    FaultSerializer,
    MethodStatusSerializer,
    QuirksSerializer,
    SubscriptionCreateSerializer,
)
from sandbox.provider.subscriptions import subscription_create
from sandbox.provider.views import ProviderView, base_url, validated


def fault_json(fault: Fault) -> dict[str, Any]:
    return {
        "id": fault.pk,
        "path": fault.path_prefix,
        "method": fault.method or None,
        "status": fault.status,
        "error_code": fault.error_code or None,
        "latency_ms": fault.latency_ms,
        "after_processing": fault.after_processing,
        "remaining": fault.remaining,
        "hits": fault.hits,
    }


def delivery_json(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "payment_id": str(delivery.payment_id),
        "event_type": delivery.event_type,
        "url": delivery.url,
        "payload": delivery.payload,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "created_at": clock.iso(delivery.created_at),
        "next_attempt_at": clock.iso(delivery.next_attempt_at),
        "delivered_at": clock.iso(delivery.delivered_at),
    }


def clock_json() -> dict[str, Any]:
    state = SandboxState.load()
    return {"now": clock.iso(clock.now()), "offset_seconds": state.clock_offset_seconds}


class ResetView(ProviderView):
    def post(self, request: Request) -> Response:
        with transaction.atomic():
            WebhookDelivery.objects.all().delete()
            Refund.objects.all().delete()
            Payment.objects.all().delete()
            CardToken.objects.all().delete()
            IdempotencyRecord.objects.all().delete()
            Fault.objects.all().delete()
            Invoice.objects.all().delete()
            Subscription.objects.all().delete()
            SandboxState.objects.all().delete()
            sandbox_seed()
        rate_limits_restore()
        return Response({"reset": True})


class ClockView(ProviderView):
    def get(self, request: Request) -> Response:
        return Response(clock_json())

    def post(self, request: Request) -> Response:
        data = validated(ClockSerializer, request.data)
        seconds = data.get("advance_seconds", 0) + data.get("advance_days", 0) * 86400
        with transaction.atomic():
            state = SandboxState.objects.select_for_update().get_or_create(pk=1)[0]
            state.clock_offset_seconds += seconds
            state.save(update_fields=["clock_offset_seconds"])
        expired = payments_expire_due()
        return Response({**clock_json(), "expired": expired})


class FaultsView(ProviderView):
    def get(self, request: Request) -> Response:
        return Response([fault_json(f) for f in Fault.objects.all()])

    def post(self, request: Request) -> Response:
        data = validated(FaultSerializer, request.data)
        fault = Fault.objects.create(
            path_prefix=data["path"].rstrip("/") or "/",
            method=data.get("method", ""),
            status=data.get("status"),
            error_code=data.get("error_code", ""),
            message=data.get("message", ""),
            latency_ms=data.get("latency_ms", 0),
            after_processing=data.get("after_processing", False),
            remaining=data.get("times"),
        )
        return Response(fault_json(fault), status=201)

    def delete(self, request: Request) -> Response:
        deleted, _ = Fault.objects.all().delete()
        return Response({"deleted": deleted})


PAGE = 500


class PaymentsListView(ProviderView):
    """The payments the sandbox holds, newest first, 500 at a time from `offset` (optionally
    by `external_reference`)."""

    def get(self, request: Request) -> Response:
        found = Payment.objects.select_related("method").prefetch_related("refund_records")
        if reference := request.query_params.get("external_reference"):
            found = found.filter(external_reference=reference)
        offset = request.query_params.get("offset", "0")
        if not offset.isdigit():
            raise invalid_request("offset: must be a whole number.")
        page = found.order_by("-created_at", "-pk")[int(offset) : int(offset) + PAGE]
        url, quirks = base_url(request), SandboxState.load().quirks
        return Response([payment_json(p, url, quirks) for p in page])


class WebhooksView(ProviderView):
    def get(self, request: Request) -> Response:
        deliveries = WebhookDelivery.objects.all()
        if payment_id := request.query_params.get("payment_id"):
            try:
                deliveries = deliveries.filter(payment_id=uuid.UUID(payment_id))
            except ValueError:
                deliveries = deliveries.none()
        return Response([delivery_json(d) for d in deliveries])


class ChaosView(ProviderView):
    def get(self, request: Request) -> Response:
        state = SandboxState.load()
        return Response(
            {
                "mode": state.chaos_mode or "none",
                "times": state.chaos_remaining,
                "delay_ms": state.chaos_delay_ms,
            }
        )

    def post(self, request: Request) -> Response:
        data = validated(ChaosSerializer, request.data)
        with transaction.atomic():
            state = SandboxState.objects.select_for_update().get_or_create(pk=1)[0]
            state.chaos_mode = "" if data["mode"] == "none" else data["mode"]
            state.chaos_remaining = data.get("times")
            state.chaos_delay_ms = data.get("delay_ms", 1500)
            state.chaos_release_at = None
            state.save()
        return self.get(request)


class QuirksView(ProviderView):
    def get(self, request: Request) -> Response:
        return Response(SandboxState.load().quirks)

    def post(self, request: Request) -> Response:
        data = validated(QuirksSerializer, request.data)
        with transaction.atomic():
            state = SandboxState.objects.select_for_update().get_or_create(pk=1)[0]
            state.quirks = {**state.quirks, **data}
            state.save(update_fields=["quirks"])
        return Response(state.quirks)


class RateLimitsView(ProviderView):
    """The sandbox's rate limit per API key and endpoint family (`rate_limits.py`)."""

    def get(self, request: Request) -> Response:
        return Response(rate_limits_json())

    def post(self, request: Request) -> Response:
        data = validated(RateLimitsSerializer, request.data)
        rate_limits_set(
            per_second=data["per_second"], burst=data["burst"], families=data["families"]
        )
        return Response(rate_limits_json())

    def delete(self, request: Request) -> Response:
        rate_limits_off()
        return Response(rate_limits_json())


class SandboxSubscriptionsView(ProviderView):
    def post(self, request: Request) -> Response:
        data = validated(SubscriptionCreateSerializer, request.data)
        kwargs: dict[str, Any] = {}
        if "amount" in data:
            kwargs["amount"] = data["amount"]
        subscription = subscription_create(
            price_id=data["price_id"],
            customer=dict(data["customer"]),
            invoices=data.get("invoices", 3),
            additional_information=dict(data.get("additional_information") or {}),
            **kwargs,
        )
        return Response(subscription_json(subscription), status=201)


class SandboxPaymentMethodView(ProviderView):
    def patch(self, request: Request, method_id: str) -> Response:
        data = validated(MethodStatusSerializer, request.data)
        method = PaymentMethod.objects.filter(pk=method_id).first()
        if method is None:
            raise ApiError(404, NOT_FOUND, "Not Found", ["payment method not found"])
        method.status = data["status"]
        method.save(update_fields=["status"])
        return Response(payment_method_json(method, base_url(request)))
