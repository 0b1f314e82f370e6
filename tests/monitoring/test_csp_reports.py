"""The CSP report endpoint logs only what says what was blocked: the directive, the blocked
origin and the shop's page path, never the rest of what a sender wrote."""

from __future__ import annotations

import json
import logging

import jsonschema
import pytest
from django.test import Client

from tests.core.helpers import shop_schema

PLANTED = {
    "csp-report": {
        "document-uri": "http://testserver/pedidos/ORD-1/pagar/?cvv=987&token=Basic%20cGs6c2s=",
        "effective-directive": "script-src-elem Basic cGtfbGl2ZTpza19saXZl",
        "violated-directive": "script-src",
        "blocked-uri": "https://user:s3cret@evil.example:8443/steal?cvv=987#4242424242424242",
        "original-policy": "default-src 'self'; Authorization: Basic cGtfbGl2ZTpza19saXZl",
        "source-file": "https://evil.example/x.js?card=4242424242424242",
        "script-sample": "cvv=987 Basic cGtfbGl2ZTpza19saXZl",
    }
}


def logged_line(client: Client, caplog: pytest.LogCaptureFixture, report: dict) -> str:
    caplog.set_level(logging.INFO, logger="csp")
    response = client.post(
        "/csp-report/", json.dumps(report), content_type="application/csp-report"
    )
    assert response.status_code == 204
    [record] = [r for r in caplog.records if r.name == "csp"]
    return record.getMessage()


def test_a_planted_report_logs_no_credential_query_or_card(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    """Given a report whose fields carry a Basic credential, query strings with a CVV, a user and
    password in a URL and a card number, then the log line holds none of them: only the
    directive, the blocked origin and the page's path."""
    line = logged_line(client, caplog, PLANTED)

    assert line == (
        "CSP violation: script-src-elem blocked https://evil.example:8443 on /pedidos/ORD-1/pagar/"
    )
    for secret in ("Basic", "cGtf", "cvv", "987", "s3cret", "user", "4242", "steal", "?"):
        assert secret not in line


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"blocked-uri": "inline", "document-uri": "http://testserver/"}, "blocked inline on /$"),
        ({"blockedURL": "eval", "documentURL": "http://testserver/carrito/"}, "eval on /carrito/$"),
        ({"blocked-uri": "data:image/png;base64,AAAA"}, "blocked data on /$"),
        ({"blocked-uri": "https://cdn.example:notaport/x"}, "blocked \\? on"),
        ({"document-uri": "https://elsewhere.example/a?b=c"}, "on another site$"),
        ({"document-uri": "http://testserver/" + "a" * 500}, "on \\?$"),
        ({"effective-directive": "x" * 200}, "^CSP violation: \\? blocked"),
    ],
)
def test_each_field_is_reduced_to_a_bounded_shape(
    client: Client, caplog: pytest.LogCaptureFixture, fields: dict[str, str], expected: str
) -> None:
    """Keywords stay keywords, URLs become origins, pages their path when they are the shop's,
    and anything longer or stranger than those shapes is logged as `?`."""
    import re

    line = logged_line(client, caplog, {"csp-report": fields})

    assert re.search(expected, line), line
    assert len(line) < 250


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"csp-report": {}},
        {"csp-report": None},
        {"csp-report": "script-src"},
        {"csp-report": {}, "note": "x"},
        [],
        {"csp-report": {"blocked-uri": "inline"}},
        {"blockedURL": "eval"},
        {"csp-report": {"blocked-uri": "inline"}, "note": "x"},
    ],
)
def test_the_document_says_which_reports_are_taken(client: Client, body: object) -> None:
    """The OpenAPI document describes the report body exactly as the endpoint takes it: a
    body is valid by the document if and only if it is taken (204); every other body is
    refused 400. An empty report (no member, or an empty `csp-report`) says nothing to log:
    the document says it is not a report, and it is refused."""
    described = shop_schema()["paths"]["/csp-report/"]["post"]["requestBody"]
    schema = described["content"]["application/json"]["schema"]

    valid = jsonschema.Draft4Validator(schema).is_valid(body)
    response = client.post("/csp-report/", json.dumps(body), content_type="application/json")

    assert described["required"] is True
    assert response.status_code == (204 if valid else 400), (body, response.content)
