"""The shop's OpenAPI document is its contract: Schemathesis with every check and every phase
(examples, coverage, fuzzing, and the stateful one that follows the document's links), against
the shop as production runs it (gunicorn with DEBUG off, Celery workers and beat, PostgreSQL,
Redis, the sandbox as the provider), finds no failure. It runs as `tools/api_contract.py` runs
it by hand: as the browser that placed an order through the shop's pages, so that it reaches an
order's payment attempt and its outcome through the document's links, past their 403 and 404.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
import requests

from tests.factories import ProductFactory
from tests.helpers.paths import ROOT
from tests.helpers.processes import Processes
from tests.helpers.waiting import wait_until
from tools import api_contract

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

# Schemathesis' budget: its four phases in about a minute (the shop's processes start in ~20 s).
MAX_TIME = 75
PAY = "POST /pedidos/{reference}/pagos/"
STATUS = ("GET /pedidos/{reference}/estado-pago/", "POST /pedidos/{reference}/estado-pago/")


@pytest.fixture
def live_shop(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Processes:
    """The shop's processes (tests/helpers/processes.py) with DEBUG off, as it is deployed,
    once `/healthz/deps` says every dependency is up: the provider's check, which beat makes
    every minute, is made once at the start here, in a process of the shop's."""
    monkeypatch.setenv("DJANGO_DEBUG", "0")
    shop: Processes = request.getfixturevalue("processes")
    check = "from payments.tasks import provider_check_task; provider_check_task()"
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", check],
        cwd=ROOT, env=shop.env, check=True, capture_output=True, timeout=60,
    )  # fmt: skip

    def dependencies_up() -> bool:
        return requests.get(f"{shop.url}/healthz/deps", timeout=30).status_code == 200

    wait_until(dependencies_up, timeout=30, interval=0.5)
    return shop


def followed_links(events: Path) -> Counter[tuple[str, str, int]]:
    """The requests the stateful phase made by following a link of the document, as (the
    operation it came from and its answer, the operation reached, the answer it got)."""
    followed: Counter[tuple[str, str, int]] = Counter()
    for line in events.read_text().splitlines():
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if finished is None or finished["phase"] != "stateful":
            continue
        recorder = finished["recorder"]
        for case_id, case in recorder.get("cases", {}).items():
            answer = (recorder.get("interactions", {}).get(case_id) or {}).get("response")
            if not case.get("is_transition_applied") or answer is None:
                continue
            source, _name, target = case["transition"]["id"].split(" -> ")
            followed[(source, target, answer["status_code"])] += 1
    return followed


def test_schemathesis_finds_no_failure_and_reaches_pay_and_status_through_the_links(
    live_shop: Processes, tmp_path: Path
) -> None:
    """Given the shop running with DEBUG off and a product in stock, when Schemathesis runs
    every check and every phase as the browser that placed an order (its session, its CSRF
    pair, the order's reference; the webhook token), then no check fails; and following the
    document's links, it got a stored attempt (202) from the pay operation, and the outcome
    (200) of an attempt it had just made."""
    ProductFactory(slug="jarron-contrato", name="Jarrón", price=Decimal("450.00"), stock=50)
    not_a_page = requests.get(f"{live_shop.url}/no-such-page/", timeout=30)
    assert not_a_page.status_code == 404 and "URLconf" not in not_a_page.text  # DEBUG is off
    events = tmp_path / "events.ndjson"

    ran = api_contract.run(
        live_shop.url,
        max_time=MAX_TIME,
        webhook_token=live_shop.env["PAYMENTS_WEBHOOK_TOKEN"],
        extra=["--report", "ndjson", "--report-ndjson-path", str(events)],
    )

    assert ran.returncode == 0, ran.output[-6000:]
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in ran.output, ran.output[-6000:]
    followed = followed_links(events)
    attempts_stored = sum(
        n for (_s, target, status), n in followed.items() if (target, status) == (PAY, 202)
    )
    outcomes_of_an_attempt = sum(
        n
        for (source, target, status), n in followed.items()
        if source == PAY and target in STATUS and status == 200
    )
    assert attempts_stored and outcomes_of_an_attempt, followed
