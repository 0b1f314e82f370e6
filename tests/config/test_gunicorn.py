"""Gunicorn (config/gunicorn.py) serves the shop with the production settings: the probes,
whitenoise's static files, and JSON log lines with the webhook token redacted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests

from tests.helpers.metrics import TOKEN as METRICS_TOKEN
from tests.helpers.metrics import samples_of, value
from tests.helpers.paths import ROOT
from tests.helpers.provider import PUBLIC_KEY, SECRET_KEY, Api
from tests.helpers.sandbox import SandboxProcess
from tests.helpers.servers import free_port
from tests.helpers.settings import TOKEN, production_env, run
from tests.helpers.waiting import wait_until

GUNICORN = Path(sys.executable).with_name("gunicorn")


def _test_database_url() -> str:
    from django.db import connection

    url = os.environ.get("DATABASE_URL", "")
    return urlunsplit(urlsplit(url)._replace(path=f"/{connection.settings_dict['NAME']}"))


@pytest.fixture
def served(
    sandbox: SandboxProcess, transactional_db: None, tmp_path: Path
) -> Iterator[SimpleNamespace]:
    """`gunicorn -c config/gunicorn.py config.wsgi` with the production settings, on the test
    database, the test Redis and the live sandbox, static files collected into a temporary
    STATIC_ROOT, access log on; its output is read once it has stopped."""
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        pytest.skip("gunicorn with the production settings needs PostgreSQL (DATABASE_URL)")
    if not os.environ.get("REDIS_URL"):
        pytest.skip("gunicorn with the production settings needs Redis (REDIS_URL)")
    port = free_port()
    env = production_env(
        tmp_path,
        DATABASE_URL=_test_database_url(),
        REDIS_URL=os.environ["REDIS_URL"],
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        PAYMENTS_API_BASE_URL=sandbox.base_url,
        PAYMENTS_PUBLIC_KEY=PUBLIC_KEY,
        PAYMENTS_SECRET_KEY=SECRET_KEY,
        DJANGO_STATIC_ROOT=str(tmp_path / "static"),
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_WORKERS="2",
        GUNICORN_ACCESS_LOG="-",
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
        METRICS_TOKEN=METRICS_TOKEN,
    )
    collected = run(["manage.py", "collectstatic", "--noinput"], env)
    assert collected.returncode == 0, collected.stderr
    output = tmp_path / "gunicorn.log"
    with output.open("wb") as sink:
        process = subprocess.Popen(
            [str(GUNICORN), "-c", "config/gunicorn.py", "config.wsgi"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = SimpleNamespace(
        url=f"http://127.0.0.1:{port}",
        static_root=tmp_path / "static",
        output=lambda: output.read_text(),
    )

    def up() -> bool:
        assert process.poll() is None, output.read_text()
        try:
            return requests.get(f"{server.url}/healthz", timeout=10).status_code == 200
        except requests.RequestException:  # not listening yet, or its workers still booting
            return False

    try:
        wait_until(up, timeout=60, interval=0.2)
        yield server
    finally:
        process.send_signal(signal.SIGTERM)  # a graceful stop
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_gunicorn_serves_the_shop_with_the_production_settings(
    served: SimpleNamespace, provider: Api
) -> None:
    """Given gunicorn with the production settings, then /healthz answers 200 with the request
    id given, /readyz answers JSON that the database is ready, /healthz/deps that the cache and
    the broker answer and the provider did (the stamp in Redis of the provider check that the
    `provider` fixture's catalogue refresh ran, as a worker would), a collected static file is
    served by whitenoise (hashed name, cached forever) over https and redirected to https
    otherwise, and the log output is JSON lines with the access log's webhook token redacted
    and no query string."""
    https = {"X-Forwarded-Proto": "https"}
    manifest = json.loads((served.static_root / "staticfiles.json").read_text())["paths"]
    hashed = next(name for source, name in manifest.items() if source.startswith("css/"))

    health = requests.get(f"{served.url}/healthz", headers={"X-Request-ID": "probe-0001"})
    ready = requests.get(f"{served.url}/readyz", timeout=30)
    deps = requests.get(f"{served.url}/healthz/deps", timeout=30)
    static = requests.get(f"{served.url}/static/{hashed}", headers=https)
    plain = requests.get(f"{served.url}/static/{hashed}", allow_redirects=False)
    hook = requests.post(
        f"{served.url}/webhooks/payments/{TOKEN}/?private=query-secret",
        data="{}",
        headers={**https, "Content-Type": "application/json", "X-Request-ID": "hook-0002"},
    )

    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert health.headers["X-Request-ID"] == "probe-0001"
    assert ready.status_code == 200, ready.text
    assert ready.headers["Content-Type"] == "application/json"
    body = ready.json()
    assert body["status"] == "ready"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True,
    }
    assert deps.status_code == 200, deps.text
    assert {name: check["ok"] for name, check in deps.json()["checks"].items()} == {
        "cache": True,
        "broker": True,
        "provider": True,
    }
    assert static.status_code == 200
    assert static.content == (served.static_root / hashed).read_bytes()
    assert "immutable" in static.headers["Cache-Control"]
    assert "max-age=31536000" in static.headers["Strict-Transport-Security"]
    assert plain.status_code == 301
    assert (
        plain.headers["Location"]
        == f"https://127.0.0.1:{urlsplit(served.url).port}/static/{hashed}"
    )
    assert hook.status_code == 400

    def logged() -> list[dict[str, Any]] | None:
        # Gunicorn writes an access line just after its answer (the receiver's own warning
        # about the bad body may come first): wait for the webhook's access line.
        lines = [json.loads(line) for line in served.output().splitlines() if line.endswith("}")]
        access = [line for line in lines if line["logger"] == "gunicorn.access"]
        return lines if any("/webhooks/" in line["message"] for line in access) else None

    lines = wait_until(logged)
    access = [line for line in lines if line["logger"] == "gunicorn.access"]
    probe_line = next(line for line in access if "request_id=probe-0001" in line["message"])
    assert '"GET /healthz HTTP/1.1" 200' in probe_line["message"]
    assert probe_line["request_id"] == "probe-0001"
    hook_line = next(line for line in access if "/webhooks/" in line["message"])
    assert '"POST /webhooks/payments/[redacted]/ HTTP/1.1" 400' in hook_line["message"]
    assert hook_line["request_id"] == "hook-0002"
    output = served.output()
    assert TOKEN not in output
    assert "query-secret" not in output


def test_metrics_sum_the_requests_of_every_gunicorn_worker(served: SimpleNamespace) -> None:
    """Given two gunicorn workers writing into PROMETHEUS_MULTIPROC_DIR, a scrape counts every
    request, whichever worker answered it (or the scrape); without the token it is refused."""
    bearer = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    labels = {"view": "healthz", "method": "GET", "status": "200"}
    before = requests.get(f"{served.url}/metrics", headers=bearer, timeout=30)
    assert before.status_code == 200, before.text
    for _ in range(20):
        assert requests.get(f"{served.url}/healthz", timeout=10).status_code == 200
    after = requests.get(f"{served.url}/metrics", headers=bearer, timeout=30)
    counted = value(samples_of(after.text), "shop_http_requests_total", **labels) - value(
        samples_of(before.text), "shop_http_requests_total", **labels
    )
    assert counted == 20
    assert requests.get(f"{served.url}/metrics", timeout=10).status_code == 401


def test_a_gone_workers_live_gauges_leave_the_sums(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gunicorn's child_exit hook removes a dead worker's live gauge files."""
    import runpy

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    hooks = runpy.run_path(str(ROOT / "config" / "gunicorn.py"))
    (tmp_path / "gauge_livesum_4242.db").write_bytes(b"")
    (tmp_path / "counter_4242.db").write_bytes(b"")
    hooks["child_exit"](None, SimpleNamespace(pid=4242))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter_4242.db"]
