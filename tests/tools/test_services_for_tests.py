"""`make test` on a machine with nothing configured: tools.services_for_tests starts a PostgreSQL
and a Redis of the run's own, hands their addresses to the command, and leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from tests.helpers.paths import ROOT

# What the command sees: its two addresses, and that both servers answer there.
PROBE = """
import json, os, psycopg, redis
database, broker = os.environ["DATABASE_URL"], os.environ["REDIS_URL"]
with psycopg.connect(database) as conn:
    version = conn.execute("SHOW server_version").fetchone()[0]
    conn.execute("CREATE TABLE probe (id int)")
print(json.dumps({"database": database, "redis": broker, "version": version,
                  "pong": redis.Redis.from_url(broker).ping()}))
"""


def run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.services_for_tests", "--", *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def listening(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as sock:
        return sock.connect_ex((parts.hostname or "", parts.port or 0)) == 0


def test_with_nothing_configured_the_command_gets_a_postgresql_and_a_redis_of_its_own(
    tmp_path: Path,
) -> None:
    """Given no DATABASE_URL and no REDIS_URL, the command runs against a PostgreSQL and a
    Redis listening on 127.0.0.1, its exit code is the wrapper's, and once it ends both servers
    are stopped and their folder is gone."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["TMPDIR"] = str(tmp_path)

    result = run(env, sys.executable, "-c", PROBE + "\nraise SystemExit(7)")

    assert result.returncode == 7, result.stderr
    seen = json.loads(result.stdout.splitlines()[-1])
    assert urlsplit(seen["database"]).hostname == "127.0.0.1"
    assert urlsplit(seen["database"]).path == "/shop"
    assert urlsplit(seen["redis"]).hostname == "127.0.0.1"
    assert seen["pong"] is True
    assert int(seen["version"].split(".")[0]) >= 16
    assert not listening(seen["database"])
    assert not listening(seen["redis"])
    assert list(tmp_path.iterdir()) == []


def test_configured_services_are_used_as_they_are() -> None:
    """Given DATABASE_URL and REDIS_URL (CI's services), the command gets them unchanged and
    nothing is started."""
    env = {**os.environ, "DATABASE_URL": "postgres://ci@db.example:5432/shop"}
    env["REDIS_URL"] = "redis://cache.example:6379/3"
    probe = "import os; print(os.environ['DATABASE_URL'], os.environ['REDIS_URL'])"

    result = run(env, sys.executable, "-c", probe)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [env["DATABASE_URL"], env["REDIS_URL"]]


# A command that says where its servers are, then waits to be interrupted, and tidies up.
INTERRUPTIBLE = """
import os, signal, sys, threading
stopped = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stopped.set())
print(os.environ["DATABASE_URL"], os.environ["REDIS_URL"], flush=True)
stopped.wait(60)
print("interrupted, tidied up", flush=True)
sys.exit(130)
"""


def test_stopped_from_outside_the_command_is_interrupted_and_the_servers_removed(
    tmp_path: Path,
) -> None:
    """Given a run with servers of its own, when the wrapper is told to stop (SIGTERM, as a
    terminal closing or a CI timeout does), then the command is interrupted as by Ctrl-C (so
    pytest still tears its fixtures down), and then both servers stop and their folder goes."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["TMPDIR"] = str(tmp_path)
    wrapper = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tools.services_for_tests",
            "--",
            sys.executable,
            "-c",
            INTERRUPTIBLE,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert wrapper.stdout is not None
    line = ""
    while not line.startswith("postgres://"):  # the wrapper's own lines come first
        line = wrapper.stdout.readline()
        assert line, "the command never started"
    database, broker = line.split()

    wrapper.send_signal(signal.SIGTERM)

    assert wrapper.wait(timeout=60) == 130
    assert wrapper.stdout.read().strip() == "interrupted, tidied up"
    assert not listening(database)
    assert not listening(broker)
    assert list(tmp_path.iterdir()) == []
