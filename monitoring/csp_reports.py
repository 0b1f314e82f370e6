"""The endpoint that collects the browsers' Content-Security-Policy violation reports."""

from __future__ import annotations

import logging
import re
from typing import ClassVar
from urllib.parse import urlsplit

from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ERROR, JSONAPIView, json_object
from core.parsers import bounded_json_parser

logger = logging.getLogger("csp")

MAX_REPORT_BYTES = 8192
# What the endpoint takes, said exactly: a report with something in it. An empty object says
# nothing to log, and no browser sends one: it is refused (400), and the document says so.
CSP_REPORT = {
    "type": "object",
    "minProperties": 1,
    "properties": {
        "csp-report": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": True,
            "description": "The violation, as `report-uri` sends it.",
        }
    },
    "additionalProperties": True,
    "description": "A report with at least one member: the violation under `csp-report`, or "
    "its members themselves. Logged: the violated directive, the blocked URI and the document's "
    "URI (or their Reporting API names `effectiveDirective`, `blockedURL`, `documentURL`).",
}


class CspReportView(JSONAPIView):
    """Browsers POST CSP violation reports here (no CSRF token: a browser sends them on its
    own); each is logged (the directive, the blocked origin and the shop's page, nothing else a
    sender wrote), never stored."""

    csrf_exempt = True
    parser_classes: ClassVar[list[type[BaseParser]]] = bounded_json_parser(
        MAX_REPORT_BYTES, "application/csp-report", "application/json"
    )

    @extend_schema(
        operation_id="csp_report",
        summary="A browser's Content-Security-Policy violation report",
        description='`{"csp-report": {...}}` as browsers send it for `report-uri`, or the '
        "report object itself. Logged, never stored.",
        request={
            "application/csp-report": CSP_REPORT,
            "application/json": CSP_REPORT,
        },
        responses={
            204: OpenApiResponse(description="Logged."),
            400: OpenApiResponse(
                ERROR, "Not JSON, no body, or no report object with a member (`invalid_body`)."
            ),
            413: OpenApiResponse(ERROR, "Over 8192 bytes."),
            415: ERROR,
        },
        tags=["operations"],
    )
    def post(self, request: Request) -> Response:
        report = json_object(request)
        details = report.get("csp-report", report)
        if not isinstance(details, dict) or not details:
            raise ParseError(
                _("A CSP report is a JSON object with the violation's members."),
                code="invalid_body",
            )
        logger.warning(
            "CSP violation: %s blocked %s on %s",
            _directive(details.get("effective-directive") or details.get("violated-directive")),
            _blocked(details.get("blocked-uri") or details.get("blockedURL")),
            _document(request, details.get("document-uri") or details.get("documentURL")),
        )
        return Response(status=204)


# A report is whatever anyone POSTs: of its fields only what says what was blocked is logged,
# reduced to a shape that cannot carry a credential, a query string or a card number.
_DIRECTIVE = re.compile(r"[a-z][a-z-]{0,39}")
_KEYWORD = re.compile(r"[a-z][a-z-]{0,19}")  # inline, eval, data, blob, self, ...
_PATH = re.compile(r"/[A-Za-z0-9/_.-]{0,99}")


def _directive(value: object) -> str:
    text = str(value or "").strip().split(" ")[0]
    return text if _DIRECTIVE.fullmatch(text) else "?"


def _blocked(value: object) -> str:
    """The blocked resource's origin (no user, path or query), or a keyword such as `inline`."""
    text = str(value or "").strip()
    parts = urlsplit(text)
    try:
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname:
            port = f":{parts.port}" if parts.port else ""
            return f"{parts.scheme}://{parts.hostname[:100]}{port}"
    except ValueError:  # a port that is no number
        return "?"
    keyword = text.split(":")[0].lower()
    return keyword if _KEYWORD.fullmatch(keyword) else "?"


def _document(request: HttpRequest, value: object) -> str:
    """The page's path, without its query, when the page is the shop's; else `another site`."""
    parts = urlsplit(str(value or ""))
    if parts.netloc and parts.netloc != request.get_host():
        return "another site"
    path = parts.path or "/"
    return path if _PATH.fullmatch(path) else "?"
