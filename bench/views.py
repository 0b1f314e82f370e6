"""The baseline of the receiver benchmark: the least a Django JSON endpoint does."""

from __future__ import annotations

import json

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt


@csrf_exempt
def bare(request: HttpRequest) -> JsonResponse:
    """Parse the body as JSON and answer `{"status": "ok"}`: no database, no broker."""
    json.loads(request.body or b"{}")
    return JsonResponse({"status": "ok"})
