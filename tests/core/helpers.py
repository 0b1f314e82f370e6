"""Helpers of core's tests: the shop's OpenAPI document as the tests read it."""

from __future__ import annotations

import json
from typing import Any


def shop_schema() -> dict[str, Any]:
    """The shop's OpenAPI document as drf-spectacular generates it (and /api/schema/ serves it),
    as plain JSON data."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))
