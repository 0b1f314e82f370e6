"""The JSON parser of the shop's endpoints (the REST framework's default parser; its own module,
since the framework imports it while its views are being defined)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.parsers import BaseParser


class RequestTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = _("The request body is too large.")
    default_code = "too_large"


class BoundedJSONParser(BaseParser):
    """A JSON body of at most `max_bytes` (as declared or as sent: 413 beyond, before more is
    read); strict JSON (no NaN or Infinity), and nesting too deep for the parser is a 400 like
    any other bad JSON."""

    media_type = "application/json"
    max_bytes = 4096

    def parse(
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> object:
        request = (parser_context or {}).get("request")
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0) if request else 0
        except ValueError:
            declared = 0
        if declared > self.max_bytes:  # refused before anything is read
            raise RequestTooLarge()
        body = stream.read(self.max_bytes + 1) if stream is not None else b""
        if len(body) > self.max_bytes:
            raise RequestTooLarge()
        try:
            return json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise exceptions.ParseError(
                _("The request is not valid JSON."), code="invalid_json"
            ) from exc


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def bounded_json_parser(max_bytes: int, *media_types: str) -> list[type[BoundedJSONParser]]:
    """Parsers of JSON bodies of at most `max_bytes`, one per media type."""
    return [
        type("BoundedJSONParser", (BoundedJSONParser,), {"media_type": m, "max_bytes": max_bytes})
        for m in media_types or ("application/json",)
    ]
