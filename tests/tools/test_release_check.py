"""The pieces of `make release-check` (tools/release_check.py) that decide its verdict: which
release is the previous one, what counts as an error line in a process's log, which Celery
processes a release's Procfile runs, and the proxy that moves new connections to the new web
server while the old one finishes its own. The whole check runs in CI after the tests
(.ci/run)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.helpers.servers import free_port
from tools.release_check import previous_release
from tools.release_processes import Proxy, Release
from tools.release_verdict import error_lines


def test_the_previous_release_is_the_newest_in_the_changelog_before_this_tree() -> None:
    found = previous_release("")
    assert found.startswith("7e974cc")
    assert previous_release("7e974cc") == found


def test_a_release_that_does_not_exist_is_refused() -> None:
    with pytest.raises(SystemExit, match="no commit or tag"):
        previous_release("no-such-release")


def test_error_lines_are_errors_and_tracebacks_in_either_log_format(tmp_path: Path) -> None:
    log = tmp_path / "web.log"
    lines = [
        json.dumps({"level": "INFO", "message": "ready."}),
        json.dumps({"level": "WARNING", "message": "a notification was refused"}),
        json.dumps({"level": "ERROR", "message": "Internal Server Error: /checkout/"}),
        json.dumps({"level": "CRITICAL", "message": "worker lost"}),
        "[2026-11-28 15:01:02 +0000] [12] [INFO] Booting worker with pid: 12",
        "[2026-11-28 15:01:03 +0000] [12] [ERROR] Exception in worker process",
        "Traceback (most recent call last):",
        "plain line mentioning errors in lower case",
    ]
    log.write_text("\n".join(lines) + "\n")
    assert error_lines(log) == [lines[2], lines[3], lines[5], lines[6]]


def test_the_celery_processes_are_those_of_the_releases_procfile(tmp_path: Path) -> None:
    (tmp_path / "Procfile").write_text(
        "sandbox: bin/keep-running python -m sandbox.manage runsandbox --port 8001\n"
        "web: bin/keep-running python manage.py runserver 127.0.0.1:8000 --noreload\n"
        "worker: bin/keep-running celery -A config worker -Q shop,celery --pool=threads\n"
        "beat: bin/keep-running celery -A config beat"
        " --schedule ${SHOP_VAR_DIR:-var}/celerybeat-schedule\n"
    )
    release = Release("previous", "abc", tmp_path, tmp_path / "venv")
    assert release.celery_commands() == {
        "worker": ["celery", "-A", "config", "worker", "-Q", "shop,celery", "--pool=threads"],
        "beat": ["celery", "-A", "config", "beat", "--schedule", "var/celerybeat-schedule"],
    }


@pytest.fixture
def two_servers() -> Iterator[tuple[int, int]]:
    """Two HTTP servers answering 'one' and 'two'."""
    servers = []
    for name in (b"one", b"two"):

        class Answer(http.server.BaseHTTPRequestHandler):
            body = name

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(self.body)))
                self.end_headers()
                self.wfile.write(self.body)

            def log_message(self, *args: object) -> None:
                return None

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield servers[0].server_address[1], servers[1].server_address[1]
    for server in servers:
        server.shutdown()


def test_the_proxy_sends_new_connections_to_the_backend_of_the_moment(
    two_servers: tuple[int, int],
) -> None:
    one, two = two_servers
    proxy = Proxy(free_port(), one)
    proxy.start()
    url = f"http://127.0.0.1:{proxy.port}/"
    assert requests.get(url, timeout=5).text == "one"
    proxy.switch(two)
    assert requests.get(url, timeout=5).text == "two"
