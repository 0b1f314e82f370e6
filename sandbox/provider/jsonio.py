"""JSON in and out with exact decimals: numbers parse to Decimal and render as written."""

from __future__ import annotations

import decimal
import json
from collections.abc import Mapping
from typing import IO, Any

import simplejson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a valid JSON number")


def loads(raw: bytes | str) -> Any:
    """Parse JSON with every non-integer number as an exact Decimal; NaN/Infinity refused."""
    return simplejson.loads(raw, use_decimal=True, parse_constant=_reject_constant)


def dumps(data: Any) -> str:
    return simplejson.dumps(data, use_decimal=True, ensure_ascii=False, separators=(",", ":"))


class DecimalJSONParser(BaseParser):
    media_type = "application/json"

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            return loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, decimal.InvalidOperation) as exc:
            raise ParseError(f"the body is not valid JSON: {exc}") from exc


class DecimalJSONRenderer(BaseRenderer):
    media_type = "application/json"
    format = "json"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if data is None:
            return b""
        return dumps(data).encode("utf-8")


class DecimalJSONEncoder(json.JSONEncoder):
    """For JSONField: writes Decimal as the exact JSON number it came in as."""

    def encode(self, o: Any) -> str:
        return simplejson.dumps(o, use_decimal=True, ensure_ascii=False)


class DecimalJSONDecoder(json.JSONDecoder):
    """For JSONField: reads every non-integer number back as an exact Decimal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["parse_float"] = decimal.Decimal
        super().__init__(*args, **kwargs)
