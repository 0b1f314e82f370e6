"""The live provider sandbox as a merchant calls it (`Api`), its keys and test cards, the
checks of its answers, and the provider made unreachable for the shop."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import requests

PUBLIC_KEY = "pk_test_suite_public"
SECRET_KEY = "sk_test_suite_secret"

# DESIGN.md test cards.
VISA = "4242424242424242"
MASTER = "5555555555554444"
AMEX = "378282246310005"

# A Visa whose BIN the catalogue's installment_pattern names (meses sin intereses).
INSTALLMENTS_VISA = "4152310000000001"
THREE_DS = "4000000000003220"
DECLINED = "4000000000000002"
INSUFFICIENT_FUNDS = "4000000000009995"
PROVIDER_ERROR = "4000000000000119"
CVV_FOR = {VISA: "123", MASTER: "123", AMEX: "1234"}


def decimal_json(response: requests.Response) -> Any:
    return json.loads(response.text, parse_float=Decimal)


class Api:
    """Calls the sandbox as a merchant would; `auth` is 'secret', 'public' or None."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.session = requests.Session()

    def headers(self, auth: str | None) -> dict[str, str]:
        if auth == "secret":
            import base64

            token = base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
            return {"Authorization": f"Basic {token}"}
        if auth == "public":
            return {"Authorization": f"Bearer {PUBLIC_KEY}"}
        return {}

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        auth: str | None = "secret",
        headers: dict[str, str] | None = None,
        raw: bytes | str | None = None,
        params: dict[str, str] | None = None,
    ) -> requests.Response:
        all_headers = {"Content-Type": "application/json", **self.headers(auth), **(headers or {})}
        data = raw if raw is not None else (None if body is None else _dumps(body))
        return self.session.request(
            method,
            f"{self.base_url}{path}",
            data=data,
            headers=all_headers,
            params=params,
            timeout=30,
        )

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, body, **kwargs)

    def patch(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("PATCH", path, body, **kwargs)

    def put(self, path: str, body: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, body, **kwargs)

    # Shortcuts for the common flows.
    def card_token(self, number: str = VISA, **card: Any) -> dict[str, Any]:
        body = {
            "card": {
                "number": number,
                "exp_month": "12",
                "exp_year": "2031",
                "cvv": CVV_FOR.get(number, "123"),
                "holder_name": "Ana Pérez",
                **card,
            }
        }
        response = self.post("/card_tokens", body, auth="public")
        assert response.status_code == 201, response.text
        return decimal_json(response)

    def create_payment(self, number: str = VISA, **fields: Any) -> dict[str, Any]:
        response = self.create_payment_response(number, **fields)
        assert response.status_code == 201, response.text
        return decimal_json(response)

    def create_payment_response(self, number: str = VISA, **fields: Any) -> requests.Response:
        token = self.card_token(number)["id"]
        body = {
            "amount": Decimal("250.00"),
            "currency": "MXN",
            "description": "Taza de barro",
            "payment_method": {"token": token},
            **fields,
        }
        return self.post("/payments", body)

    def payment(self, payment_id: str) -> dict[str, Any]:
        response = self.get(f"/payments/{payment_id}")
        assert response.status_code == 200, response.text
        return decimal_json(response)

    def add_fault(self, **spec: Any) -> int:
        """A fault of the sandbox (`/_sandbox/faults`: path, method, status, latency_ms,
        times...); its id."""
        response = self.post("/_sandbox/faults", spec)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def fault(self, fault_id: int) -> dict[str, Any]:
        return next(f for f in self.get("/_sandbox/faults").json() if f["id"] == fault_id)

    def fault_hits(self, fault_id: int) -> int:
        """How many requests the fault has matched."""
        return self.fault(fault_id)["hits"]

    def payments(self) -> list[dict[str, Any]]:
        return decimal_json(self.get("/_sandbox/payments"))

    def deliveries(self, payment_id: str | None = None) -> list[dict[str, Any]]:
        params = {"payment_id": payment_id} if payment_id else None
        return decimal_json(self.get("/_sandbox/webhooks", params=params))


def _dumps(body: Any) -> str:
    import simplejson

    return simplejson.dumps(body, use_decimal=True)


def same_payment(payment: dict[str, Any]) -> dict[str, Any]:
    """A payment's JSON as compared between two answers: the letter case of a PE-3DS01
    message varies from one answer to the next (the specification says so), nothing else."""
    detail = payment.get("status_detail") or {}
    message = str(detail.get("message", "")).casefold()
    return {**payment, "status_detail": {**detail, "message": message}}


def assert_error(response: requests.Response, status: int, code: str) -> dict[str, Any]:
    """An error answer with the spec's body: {error_code, message, detail: [...]}."""
    assert response.status_code == status, f"{response.status_code} {response.text}"
    body = response.json()
    assert set(body) == {"error_code", "message", "detail"}, body
    assert body["error_code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["detail"], list) and all(isinstance(d, str) for d in body["detail"])
    return body


def refuse_provider_calls(monkeypatch: Any) -> list[tuple[str, str]]:
    """From now on every request the shop tries to send to the provider is recorded, as
    (method, path), and none gets out: the provider is down."""
    from payments.provider.client import PaymentsClient
    from payments.provider.errors import ProviderUnavailable

    sent: list[tuple[str, str]] = []

    def down(self: PaymentsClient, method: str, path: str, **kwargs: Any) -> Any:
        sent.append((method, path))
        raise ProviderUnavailable("the provider is down in this test")

    monkeypatch.setattr(PaymentsClient, "_call", down)
    return sent
