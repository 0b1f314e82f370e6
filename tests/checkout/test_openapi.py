"""The checkout's part of the OpenAPI document (checkout/openapi.py, checkout/api.py): the links
that lead a client from a payment attempt to its outcome and from an outcome to another attempt,
each naming an operation of the document, parameters it takes and members the source's answer
or request has; what the security schemes tell a client about the session and the CSRF pair;
examples the endpoint takes. (That a live client follows the links past the 403 and 404:
tests/core/test_api_contract.py.)"""

from __future__ import annotations

import re
from typing import Any

import pytest

from checkout.serializers import PaymentAttemptSerializer
from tests.core.helpers import shop_schema

DOCUMENT = shop_schema()
OPERATIONS = {
    operation["operationId"]: (path, operation)
    for path, item in DOCUMENT["paths"].items()
    for operation in item.values()
    if isinstance(operation, dict) and "operationId" in operation
}


def component(reference: str) -> dict[str, Any]:
    return DOCUMENT["components"]["schemas"][reference.rsplit("/", 1)[-1]]


def links_of(operation_id: str, status: str) -> dict[str, Any]:
    return OPERATIONS[operation_id][1]["responses"][status].get("links", {})


def json_schema_of(operation: dict[str, Any], part: str, status: str = "") -> dict[str, Any]:
    holder = operation["responses"][status] if part == "response" else operation["requestBody"]
    return component(holder["content"]["application/json"]["schema"]["$ref"])


@pytest.mark.parametrize(
    ("source", "status", "targets"),
    [
        ("pay_attempt", "202", {"payment_status", "payment_status_post", "pay_attempt"}),
        ("pay_attempt", "200", {"payment_status", "payment_status_post", "pay_attempt"}),
        ("payment_status", "200", {"pay_attempt"}),
        ("payment_status_post", "200", {"pay_attempt"}),
    ],
)
def test_an_orders_operations_are_linked(source: str, status: str, targets: set[str]) -> None:
    """From an attempt (taken, or answered as it stands), links lead to its outcome (GET and
    POST) and to the same attempt sent again; from an outcome, to another attempt. Each link
    keeps the order (its reference from the request's path) and takes only what the source
    has: the answer's `payment_id`, the request's `card_token` and `attempt_id`."""
    source_path, source_operation = OPERATIONS[source]
    links = links_of(source, status)

    assert {link["operationId"] for link in links.values()} == targets
    for link in links.values():
        target_path, target = OPERATIONS[link["operationId"]]
        taken = {f"{p['in']}.{p['name']}" for p in target.get("parameters", [])}
        assert link["parameters"]["path.reference"] == "$request.path.reference"
        assert set(link["parameters"]) <= taken, (link, taken)
        for expression in [*link["parameters"].values(), *link.get("requestBody", {}).values()]:
            where, member = re.fullmatch(
                r"\$(request|response)\.(?:body#/|path\.)(\w+)", expression
            ).groups()
            if where == "response":
                assert member in json_schema_of(source_operation, "response", status)["properties"]
            elif expression.startswith("$request.body"):
                assert member in json_schema_of(source_operation, "request")["properties"]
                assert member in json_schema_of(target, "request")["properties"]
            else:
                assert "{" + member + "}" in source_path and "{" + member + "}" in target_path


def test_the_security_schemes_say_how_a_client_gets_a_session_and_a_csrf_pair() -> None:
    """A client reading the document learns where the session that owns an order comes from
    (the checkout's pages, which answer the order's reference) and what the CSRF pair is."""
    schemes = DOCUMENT["components"]["securitySchemes"]

    session = schemes["browserSession"]["description"]
    for step in ("/carrito/agregar/{slug}/", "/checkout/", "/pedidos/{reference}/pagar/", "404"):
        assert step in session
    assert "X-CSRFToken" in schemes["csrfCookie"]["description"]
    assert "csrftoken" in schemes["csrfHeader"]["description"]


def test_an_outcome_may_be_asked_with_or_without_a_session() -> None:
    """Asking an outcome needs no credential the endpoint refuses without (no 401 or 403): a
    request without the session that placed the order is answered 404, as any other session."""
    _path, status = OPERATIONS["payment_status"]

    assert status["security"] == [{"browserSession": []}, {}]
    assert "404" in status["responses"]


def test_the_attempts_examples_are_attempts_the_endpoint_takes() -> None:
    """Each example body of a payment attempt in the document is valid for the endpoint."""
    _path, pay = OPERATIONS["pay_attempt"]
    examples = pay["requestBody"]["content"]["application/json"]["examples"]

    assert examples
    for example in examples.values():
        serializer = PaymentAttemptSerializer(data=example["value"])
        assert serializer.is_valid(), (example, serializer.errors)
