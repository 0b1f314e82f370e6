"""Production readiness: Django's deploy check finds nothing, the production settings refuse to
start without what they need, request ids travel from the web request to the Celery task and the
provider, log lines are JSON objects with secrets redacted, and gunicorn serves the shop (probes
and whitenoise's static files) with the production settings."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from django.test import Client
from django.urls import reverse

from config.logging import RedactSecrets, console_formatter
from config.request_id import RequestIdFilter, current_request_id, request_id_bound
from payments.client import get_client
from payments.errors import ProviderUnavailable
from tests.support import PUBLIC_KEY, SECRET_KEY, SandboxProcess, free_port, wait_until
from webhooks.models import WebhookEvent, WebhookState

ROOT = Path(__file__).resolve().parent.parent
GUNICORN = Path(sys.executable).with_name("gunicorn")
TOKEN = "hook_Kq7Zt2Vw9Xb4Nc6Md8Lp3Rs5Ty1Uf0Gh"
GENERATED_ID = re.compile(r"[0-9a-f]{32}")
# A production environment as an operator would write it (nothing here is contacted).
PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "DJANGO_SECRET_KEY": "pR0d-5ecret-Kx8vN2qL7mZ4tY9wB3cH6jF1sD5gA0eU-iOkMnBvCxZlQwE",
    "DATABASE_URL": "postgres://shop:secret@db.internal:5432/shop",
    "REDIS_URL": "redis://redis.internal:6379/0",
    "DJANGO_ALLOWED_HOSTS": "tienda.example,www.tienda.example",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://tienda.example",
    "SHOP_BASE_URL": "https://tienda.example",
    "PAYMENTS_API_BASE_URL": "https://api.payments.example",
    "PAYMENTS_PUBLIC_KEY": "pk_live_tienda_public",
    "PAYMENTS_SECRET_KEY": "sk_live_tienda_secret",
    "PAYMENTS_WEBHOOK_TOKEN": TOKEN,
}
# Nothing from the test run's own environment may make a production setting look configured.
_OURS = ("DJANGO_", "PAYMENTS_", "SHOP_", "SANDBOX_", "GUNICORN_", "WEBHOOKS_", "LOG_")
_ALSO_OURS = {"DATABASE_URL", "REDIS_URL", "PORT", "CELERY_VISIBILITY_TIMEOUT"}


def production_env(tmp_path: Path, **changes: str | None) -> dict[str, str]:
    """PRODUCTION_ENV on a clean environment; a change of None removes the variable."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(_OURS) and key not in _ALSO_OURS
    }
    env.update(PRODUCTION_ENV, SHOP_VAR_DIR=str(tmp_path / "var"))
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


# --- 1. The deploy check and the settings production needs -------------------------------------


def test_the_deploy_check_reports_no_issue(tmp_path: Path) -> None:
    """Given a complete production environment, when `manage.py check --deploy` runs, then it
    reports no issue at any level, with no check silenced."""
    result = run(
        ["manage.py", "check", "--deploy", "--fail-level", "DEBUG"], production_env(tmp_path)
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


# Loads the production settings once for each environment given (a JSON object of named
# environments on stdin), in one process, and prints what each gave: some settings, or the error.
SETTINGS_UNDER = """
import importlib, json, os, sys
import config.settings as package
results = {}
for name, env in json.load(sys.stdin).items():
    os.environ.clear()
    os.environ.update(env)
    for module in ("production", "base"):  # read the environment again
        sys.modules.pop(f"config.settings.{module}", None)
        vars(package).pop(module, None)
    try:
        found = importlib.import_module("config.settings.production")
    except Exception as exc:
        results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        continue
    results[name] = {
        "error": None,
        "debug": found.DEBUG,
        "engine": found.DATABASES["default"]["ENGINE"],
        "broker": found.CELERY_BROKER_URL,
        "hosts": found.ALLOWED_HOSTS,
        "origins": found.CSRF_TRUSTED_ORIGINS,
        "proxy": found.SECURE_PROXY_SSL_HEADER,
        "static": found.STORAGES["staticfiles"]["BACKEND"],
        "log_format": found.LOGGING["formatters"]["console"]["log_format"],
        "middleware": found.MIDDLEWARE[0],
        "silenced": found.SILENCED_SYSTEM_CHECKS,
    }
print(json.dumps(results))
"""


def settings_under(envs: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    """The production settings (or the error) under each named environment."""
    result = subprocess.run(
        [sys.executable, "-c", SETTINGS_UNDER],
        cwd=ROOT,
        input=json.dumps(envs),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_settings_come_from_the_environment(tmp_path: Path) -> None:
    """Given the production environment, then the shop runs on PostgreSQL and Redis, with the
    hosts and trusted origins given, manifest static files, JSON logs, the proxy's https header
    and the request id middleware first; the proxy header can be changed or turned off."""
    found = settings_under(
        {
            "default": production_env(tmp_path),
            "ssl-on": production_env(
                tmp_path, DJANGO_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_SSL=on"
            ),
            "no-proxy": production_env(tmp_path, DJANGO_SECURE_PROXY_SSL_HEADER=""),
            "text": production_env(tmp_path, LOG_FORMAT="text"),
        }
    )

    assert found["default"] == {
        "error": None,
        "debug": False,
        "engine": "django.db.backends.postgresql",
        "broker": "redis://redis.internal:6379/0",
        "hosts": ["tienda.example", "www.tienda.example"],
        "origins": ["https://tienda.example"],
        "proxy": ["HTTP_X_FORWARDED_PROTO", "https"],
        "static": "whitenoise.storage.CompressedManifestStaticFilesStorage",
        "log_format": "json",
        "middleware": "config.request_id.RequestIdMiddleware",
        "silenced": [],
    }
    assert found["ssl-on"]["proxy"] == ["HTTP_X_FORWARDED_SSL", "on"]
    assert found["no-proxy"]["proxy"] is None
    assert found["text"]["log_format"] == "text"


SQLITE_URL = "sqlite:////tmp/production-trial.sqlite3"
REFUSED: list[tuple[str, str | None]] = [
    ("DJANGO_SECRET_KEY", None),
    ("DJANGO_SECRET_KEY", "too-short-to-be-a-production-key"),
    ("DJANGO_SECRET_KEY", "ab" * 30),
    ("DJANGO_SECRET_KEY", "django-insecure-" + "k3Jd9Fh2Lm5Np8Qr1St4Vw7Xy0Zb6Cc" * 2),
    ("DATABASE_URL", None),
    ("DATABASE_URL", SQLITE_URL),
    ("DATABASE_URL", "mysql://shop:secret@db.internal:3306/shop"),
    ("REDIS_URL", None),
    ("REDIS_URL", "memory://"),
    ("DJANGO_ALLOWED_HOSTS", None),
    ("SHOP_BASE_URL", None),
    ("SHOP_BASE_URL", "http://tienda.example"),
    ("PAYMENTS_API_BASE_URL", None),
    ("PAYMENTS_PUBLIC_KEY", None),
    ("PAYMENTS_SECRET_KEY", None),
    ("PAYMENTS_WEBHOOK_TOKEN", None),
    ("PAYMENTS_WEBHOOK_TOKEN", "a" * 31),
    ("PAYMENTS_WEBHOOK_TOKEN", "a" * 20 + "/../" + "b" * 20),
    ("LOG_FORMAT", "xml"),
    ("DJANGO_SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto"),
]
ACCEPTED: dict[str, dict[str, str | None]] = {
    "sqlite-allowed": {"DATABASE_URL": SQLITE_URL, "DJANGO_ALLOW_SQLITE": "true"},
    "access-token": {"PAYMENTS_SECRET_KEY": None, "PAYMENTS_ACCESS_TOKEN": "cGtfbGl2ZTpza19s"},
    "redis-over-tls": {"REDIS_URL": "rediss://:secret@redis.internal:6380/1"},
}


def _case(variable: str, value: str | None) -> str:
    return f"{variable}={value}"


@pytest.fixture(scope="module")
def startups(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The production settings loaded under each environment below (one process for all)."""
    tmp = tmp_path_factory.mktemp("startups")
    envs = {_case(*case): production_env(tmp, **{case[0]: case[1]}) for case in REFUSED}
    envs.update({name: production_env(tmp, **changes) for name, changes in ACCEPTED.items()})
    return settings_under(envs)


@pytest.mark.parametrize(("variable", "value"), REFUSED)
def test_production_refuses_to_start_without_what_it_needs(
    startups: dict[str, dict[str, Any]], variable: str, value: str | None
) -> None:
    """Given a production environment with one variable missing or unfit, when the settings
    load (as Django starts), then they raise ImproperlyConfigured naming exactly that variable
    (one problem only)."""
    error = startups[_case(variable, value)]["error"]

    assert error is not None
    assert error.startswith("ImproperlyConfigured: Production settings are incomplete:")
    problems = [line for line in error.splitlines() if line.startswith("- ")]
    assert len(problems) == 1, problems
    assert variable in problems[0]


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_production_starts_with_the_allowed_alternatives(
    startups: dict[str, dict[str, Any]], name: str
) -> None:
    """SQLite when explicitly allowed, an access token instead of the secret key, and Redis
    over TLS are accepted."""
    assert startups[name]["error"] is None


# --- 2. Request ids in and out ------------------------------------------------------------------


@pytest.fixture
def json_log() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The console handler as production builds it (request id, redaction, JSON), on the root
    logger at INFO; returns a function giving the lines written so far, parsed."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactSecrets())
    handler.setFormatter(console_formatter("json"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)

    def lines() -> list[dict[str, Any]]:
        with handler.lock:  # type: ignore[union-attr]
            text = stream.getvalue()
        return [json.loads(line) for line in text.splitlines()]

    yield lines
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.mark.parametrize(
    "incoming",
    ["abcdefgh", "req-2026.11.22_0001", str(uuid.uuid4()), "A" * 64, uuid.uuid4().hex],
)
def test_a_valid_incoming_request_id_is_kept_and_answered(client: Client, incoming: str) -> None:
    """Given a request with a valid X-Request-ID (8 to 64 of letters, digits, '.', '_', '-'),
    then the response carries the same id."""
    response = client.get("/healthz", headers={"X-Request-ID": incoming})

    assert response.status_code == 200
    assert response["X-Request-ID"] == incoming


@pytest.mark.parametrize(
    "incoming",
    [
        "",
        "short",
        "x" * 65,
        "has spaces in it",
        "line\nbreak-12345",
        'quote"12345678',
        "tóken-ñandú-2026",
        "<script>alert(1)</script>",
        "id=1; other=2",
    ],
)
def test_an_invalid_incoming_request_id_is_replaced(client: Client, incoming: str) -> None:
    """Given a request whose X-Request-ID is empty, too short or long, or has other characters,
    then the response carries a new id of the shop's own instead."""
    response = client.get("/healthz", headers={"X-Request-ID": incoming})

    assert response.status_code == 200
    assert GENERATED_ID.fullmatch(response["X-Request-ID"])
    assert response["X-Request-ID"] != incoming


def test_each_request_gets_its_own_id_and_leaves_none_behind(client: Client) -> None:
    """Given requests without an id, then each gets a different one, and none stays current
    once its request is over."""
    first = client.get("/healthz")["X-Request-ID"]
    second = client.get("/healthz")["X-Request-ID"]

    assert GENERATED_ID.fullmatch(first) and GENERATED_ID.fullmatch(second)
    assert first != second
    assert current_request_id() is None


@pytest.mark.django_db
def test_the_log_lines_of_a_request_carry_its_id(
    client: Client, json_log: Callable[[], list[dict[str, Any]]]
) -> None:
    """Given requests with an id, then a line logged by a view and the "Not Found" line that
    Django writes after the middleware has answered both carry that request's id."""
    report = {"csp-report": {"violated-directive": "script-src", "blocked-uri": "inline"}}
    client.post(
        reverse("csp_report"),
        data=json.dumps(report),
        content_type="application/csp-report",
        headers={"X-Request-ID": "csp-report-0001"},
    )
    missing = client.get("/no-such-page/", headers={"X-Request-ID": "not-found-0002"})

    assert missing.status_code == 404
    by_logger = {line["logger"]: line for line in json_log()}
    assert by_logger["csp"]["request_id"] == "csp-report-0001"
    assert by_logger["django.request"]["message"] == "Not Found: /no-such-page/"
    assert by_logger["django.request"]["request_id"] == "not-found-0002"


# --- 3. From the web request to the Celery task and the provider -------------------------------


class _ProviderDown(BaseHTTPRequestHandler):
    """A provider in maintenance: every call is answered 503, and its X-Request-ID recorded."""

    server: _RecordingServer

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("X-Request-ID")))
        body = b'{"message": "maintenance"}'
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _RecordingServer(ThreadingHTTPServer):
    seen: list[tuple[str, str | None]]


@pytest.fixture
def provider_down(settings: Any) -> Iterator[_RecordingServer]:
    """The shop pointed at a provider that answers 503 and records the ids it is sent."""
    server = _RecordingServer(("127.0.0.1", 0), _ProviderDown)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    settings.PAYMENTS_ACCESS_TOKEN = "dGVzdDp0ZXN0"
    yield server
    server.shutdown()
    server.server_close()


def test_the_client_sends_the_current_request_id_to_the_provider(
    provider_down: _RecordingServer,
) -> None:
    """Given a provider call made under a request id, then the provider gets it as
    X-Request-ID; made outside of any request or task, no X-Request-ID is sent."""
    with request_id_bound("call-under-0001"), pytest.raises(ProviderUnavailable):
        get_client().get_payment(str(uuid.uuid4()))
    with pytest.raises(ProviderUnavailable):
        get_client().get_payment(str(uuid.uuid4()))

    ids = [request_id for _, request_id in provider_down.seen]
    assert ids[0] == "call-under-0001"
    assert set(ids) == {"call-under-0001", None}
    assert ids.index(None) > 0 and set(ids[ids.index(None) :]) == {None}


@pytest.mark.django_db(transaction=True)
def test_the_request_id_reaches_the_task_its_retries_and_the_provider(
    worker: Any,
    json_log: Callable[[], list[dict[str, Any]]],
    client: Client,
    settings: Any,
    provider_down: _RecordingServer,
) -> None:
    """Given a real worker and a provider that is down, when a notification arrives with an
    X-Request-ID, then the task queued by the receiver, and its retry, run under that id: their
    log lines carry it, and every provider call they make sends it as X-Request-ID."""
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    settings.WEBHOOKS_MAX_RETRIES = 1
    settings.WEBHOOKS_RETRY_BACKOFF = 1
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 1
    request_id = "hook-" + uuid.uuid4().hex[:20]
    payment_id = str(uuid.uuid4())

    response = client.post(
        reverse("webhooks:payments", kwargs={"token": TOKEN}),
        data=json.dumps({"id": payment_id, "origin": "payments-api", "event_type": "INSERT"}),
        content_type="application/json",
        headers={"X-Request-ID": request_id},
    )

    assert response.status_code == 200, response.content
    assert response["X-Request-ID"] == request_id
    event = WebhookEvent.objects.get()
    wait_until(
        lambda: WebhookEvent.objects.filter(pk=event.pk, state=WebhookState.FAILED).exists(),
        timeout=60,
    )
    lines = json_log()
    calls = [line for line in lines if line["logger"] == "payments.client"]
    assert len(calls) == 2, calls  # the task's first run and its one retry
    assert all(payment_id in line["message"] for line in calls)
    retried = [line for line in lines if " retry: " in line["message"]]
    gave_up = [line for line in lines if "failed after retries" in line["message"]]
    assert len(retried) == 1 and len(gave_up) == 1, lines
    assert {line["request_id"] for line in [*calls, *retried, *gave_up]} == {request_id}
    assert len(provider_down.seen) >= 2
    assert {seen_id for _, seen_id in provider_down.seen} == {request_id}


@pytest.mark.django_db
def test_a_task_without_a_request_runs_under_an_id_of_its_own(
    json_log: Callable[[], list[dict[str, Any]]],
) -> None:
    """Given tasks run outside of any request (as beat's are), then each runs under a new id of
    its own, and none stays current after it."""
    from celery.signals import task_prerun

    from webhooks.tasks import webhook_relay_task

    def log_inside(**_: Any) -> None:  # connected after the shop's: the id is bound by then
        logging.getLogger("tests.production").info("inside the task")

    task_prerun.connect(log_inside, weak=False)
    try:
        webhook_relay_task.apply()
        webhook_relay_task.apply()
    finally:
        task_prerun.disconnect(log_inside)

    inside = [line["request_id"] for line in json_log() if line["message"] == "inside the task"]
    assert len(inside) == 2
    assert all(GENERATED_ID.fullmatch(request_id) for request_id in inside)
    assert inside[0] != inside[1]
    assert current_request_id() is None


# --- 4. JSON lines -------------------------------------------------------------------------------


def test_json_lines_parse_and_are_redacted(
    settings: Any, json_log: Callable[[], list[dict[str, Any]]]
) -> None:
    """Given records mentioning the webhook token and a card number, in the message, in an
    exception and in `extra`, then each is one JSON object with time, level, logger, message
    and request_id (and the exception), and neither secret appears anywhere."""
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    log = logging.getLogger("shop.deploy")
    leaky_request = SimpleNamespace(path=f"/webhooks/payments/{TOKEN}/")

    with request_id_bound("json-lines-0001"):
        log.info("notified at /webhooks/payments/%s/ for card %s", TOKEN, "4242 4242 4242 4242")
        try:
            raise ValueError(f"bad path /webhooks/payments/{TOKEN}/ card 4000000000003220")
        except ValueError:
            log.exception("processing failed")
        log.warning("with extra", extra={"request": leaky_request, "status_code": 400})
    log.info("outside of any request")

    lines = json_log()
    assert [line["message"] for line in lines] == [
        "notified at /webhooks/payments/[redacted]/ for card [card …4242]",
        "processing failed",
        "with extra",
        "outside of any request",
    ]
    for line in lines:
        assert set(line) - {"exception"} == {"time", "level", "logger", "message", "request_id"}
        assert datetime.fromisoformat(line["time"]).utcoffset() == UTC.utcoffset(None)
        assert line["logger"] == "shop.deploy"
    assert [line["level"] for line in lines] == ["INFO", "ERROR", "WARNING", "INFO"]
    assert [line["request_id"] for line in lines] == ["json-lines-0001"] * 3 + ["-"]
    exception = lines[1]["exception"]
    assert exception.startswith("Traceback") and "ValueError" in exception
    assert "/webhooks/payments/[redacted]/ card [card …3220]" in exception
    written = json.dumps(lines)
    assert TOKEN not in written and "4000000000003220" not in written


EMIT = f"""
import logging, django
django.setup()
logging.getLogger("shop.deploy").warning("hook %s", "{TOKEN}")
"""
FORMATS = [
    ("config.settings.production", None, "json"),
    ("config.settings.production", "text", "text"),
    ("config.settings.local", None, "text"),
    ("config.settings.local", "json", "json"),
]


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, subprocess.CompletedProcess]:
    """One warning logged by a process started with each settings module and LOG_FORMAT."""
    tmp = tmp_path_factory.mktemp("emitted")
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            (module, log_format): pool.submit(
                run,
                ["-c", EMIT],
                production_env(tmp, DJANGO_SETTINGS_MODULE=module, LOG_FORMAT=log_format),
            )
            for module, log_format, _ in FORMATS
        }
        return {key: future.result() for key, future in futures.items()}


@pytest.mark.parametrize(("settings_module", "log_format", "written"), FORMATS)
def test_the_log_format_follows_the_settings(
    emitted: dict[Any, subprocess.CompletedProcess],
    settings_module: str,
    log_format: str | None,
    written: str,
) -> None:
    """JSON lines by default in production, plain text in the demo; LOG_FORMAT chooses either
    way, and both are redacted."""
    result = emitted[(settings_module, log_format)]

    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert TOKEN not in line
    if written == "json":
        record = json.loads(line)
        assert (record["level"], record["logger"], record["message"], record["request_id"]) == (
            "WARNING",
            "shop.deploy",
            "hook [redacted]",
            "-",
        )
    else:
        assert re.fullmatch(r"\S+ \S+ WARNING shop\.deploy \[-\] hook \[redacted\]", line), line


# --- 5. Gunicorn with the production settings ----------------------------------------------------


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


def test_gunicorn_serves_the_shop_with_the_production_settings(served: SimpleNamespace) -> None:
    """Given gunicorn with the production settings, then /healthz answers 200 with the request
    id given, /readyz answers JSON that the database and cache are ready, /healthz/deps that
    the broker and the provider answer, a collected static file is
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
        "cache": True,
    }
    assert deps.status_code == 200, deps.text
    assert {name: check["ok"] for name, check in deps.json()["checks"].items()} == {
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
