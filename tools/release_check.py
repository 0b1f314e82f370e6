"""`make release-check`: the new release deployed while the previous one serves, as a rolling
or blue-green deploy does, under shoppers, staff and the provider's notifications.

    .venv/bin/python -m tools.release_check [--previous COMMIT_OR_TAG] [--seconds 30]

1. The previous release (PREVIOUS, else the newest release in CHANGELOG.md before this tree)
   runs from a clone of its own with its own virtual environment (var/release-check/), on a
   fresh database migrated by it: its web server under gunicorn (config/gunicorn.py), the
   Celery workers and beat of its Procfile, behind a proxy standing for the load balancer.
2. Traffic starts (tools/release_traffic.py). The new release's migrations are applied while
   the previous release serves, then the traffic goes on for `--seconds`.
3. The processes are replaced one by one with the new release's: the web server (the proxy
   sends new connections to the new one, the old one finishes what it holds), each worker of
   the new Procfile (then the previous workers stop, finishing their tasks), then beat; the
   traffic goes on for `--seconds` more.
4. The traffic stops, the shop settles, and the check fails unless: no answer of the shop was a
   5xx or missing, no process logged an error or died, every shopper got a final outcome, and
   every order and payment ended right (tools/verdict.py against the provider's records).

It prints how long the migrations took and the longest time a statement waited for a lock.
Needs PostgreSQL and Redis (DATABASE_URL, REDIS_URL; their databases are emptied).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

from tools.release_processes import (
    ROOT,
    WEB,
    LockWatch,
    Process,
    Proxy,
    Release,
    wait_healthy,
)
from tools.release_traffic import Traffic
from tools.release_verdict import error_lines, settle
from tools.services_for_tests import free_port
from tools.soak import SECRET

WORK = ROOT / "var" / "release-check"
LOGS = WORK / "logs"
GIT = shutil.which("git") or "git"


def git(*args: str) -> str:
    return subprocess.run(  # noqa: S603 (git, our own arguments)
        [GIT, "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def previous_release(asked: str) -> str:
    """The commit of `asked` (a commit or a tag), else of the newest release CHANGELOG.md names
    that is an ancestor of this tree's commit and not the commit itself."""
    if asked:
        try:
            return git("rev-parse", "--verify", "--quiet", f"{asked}^{{commit}}")
        except subprocess.CalledProcessError:
            raise SystemExit(f"PREVIOUS={asked} is no commit or tag of this repository.") from None
    head = git("rev-parse", "HEAD")
    for line in (ROOT / "CHANGELOG.md").read_text().splitlines():
        found = re.match(r"^## .*?\bcommit ([0-9a-f]{7,40})\b", line)
        if not found:
            continue
        commit = git("rev-parse", "--verify", f"{found.group(1)}^{{commit}}")
        ancestor = subprocess.run(  # noqa: S603
            [GIT, "-C", str(ROOT), "merge-base", "--is-ancestor", commit, head],
            check=False,
        ).returncode == 0  # fmt: skip
        if commit != head and ancestor:
            return commit
    raise SystemExit("No previous release: name one with PREVIOUS=<commit or tag>.")


def fresh_database(url: str) -> None:
    name = urlsplit(url).path.strip("/")
    server = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


class CheckFailed(Exception):
    """The check cannot go on: what stopped it."""


class Deployment:
    """The processes of the shop and the sandbox as they are replaced, with their logs."""

    def __init__(self, base: dict[str, str]) -> None:
        self.base = base
        self.processes: dict[str, Process] = {}
        self.retired: list[Process] = []

    def start(self, name: str, release: Release, command: list[str], **env: str) -> Process:
        log = LOGS / f"{name}-{release.name}.log"
        process = Process.start(f"{name} ({release.name})", release, command,
                                {**self.base, **env}, log)  # fmt: skip
        self.processes[name] = process
        return process

    def celery(self, release: Release) -> dict[str, list[str]]:
        var = Path(self.base["SHOP_VAR_DIR"]) / release.name
        var.mkdir(parents=True, exist_ok=True)
        return {
            name: [word.replace("var/celerybeat-schedule", str(var / "celerybeat-schedule"))
                   for word in command]
            for name, command in release.celery_commands().items()
        }  # fmt: skip

    def retire(self, process: Process) -> float:
        """Stop a process of the previous release (its log is still read); seconds taken."""
        self.retired.append(process)
        return process.stop()

    def everything(self) -> list[Process]:
        return [*self.retired, *self.processes.values()]

    def stop_all(self) -> None:
        for process in self.processes.values():
            process.stop(timeout=30)


def environment(args: argparse.Namespace, proxy_port: int, sandbox_port: int) -> dict[str, str]:
    """What both releases run with, as one deployment's environment."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SHOP_", "PAY"))}
    return {
        **keep,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DJANGO_DEBUG": "false",
        "DATABASE_URL": args.database_url,
        "REDIS_URL": args.redis_url,
        "LOG_FORMAT": "json",
        "PYTHONUNBUFFERED": "1",
        "SHOP_VAR_DIR": str(WORK / "var"),
        "SHOP_PORT": str(proxy_port),
        "SHOP_BASE_URL": f"http://127.0.0.1:{proxy_port}",
        "SANDBOX_PORT": str(sandbox_port),
        "PAYMENTS_API_BASE_URL": f"http://127.0.0.1:{sandbox_port}",
        "PROMETHEUS_MULTIPROC_DIR": str(WORK / "metrics"),
        # Every shopper is a browser session of its own on this machine's one address: the
        # limits per address are raised for the check only (those per session are the shop's).
        "SHOP_ORDERS_PER_ADDRESS": "100000/h",
        "SHOP_PAY_ATTEMPTS_PER_ADDRESS": "100000/10m",
        "SHOP_ORDER_LISTS_PER_ADDRESS": "100000/h",
    }


class Check:
    """One run of the check: the deployment, the traffic and the figures."""

    def __init__(self, args: argparse.Namespace, previous: Release, new: Release) -> None:
        self.args, self.previous, self.new = args, previous, new
        self.proxy_port, self.sandbox_port = free_port(), free_port()
        self.shop = f"http://127.0.0.1:{self.proxy_port}"
        self.sandbox = f"http://127.0.0.1:{self.sandbox_port}"
        self.base = environment(args, self.proxy_port, self.sandbox_port)
        self.deployment = Deployment(self.base)
        self.traffic = Traffic(self.shop, self.sandbox, args.database_url, args.shoppers)
        self.figures: dict[str, str] = {}

    def say(self, text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)

    def phase(self, name: str, seconds: float = 0) -> None:
        self.traffic.phase = name
        self.say(f"[{name}]")
        time.sleep(seconds)

    def web(self, release: Release) -> int:
        port = free_port()
        self.deployment.start("web", release, [release.python(), "-m", *WEB],
                              GUNICORN_BIND=f"127.0.0.1:{port}")  # fmt: skip
        wait_healthy(f"http://127.0.0.1:{port}/healthz")
        return port

    def start_previous(self) -> Proxy:
        fresh_database(self.args.database_url)
        redis.Redis.from_url(self.args.redis_url).flushdb()
        log = LOGS / "setup.log"
        self.previous.manage(self.base, "migrate", "--noinput", log=log)
        self.previous.manage(self.base, "seed_demo", log=log)
        with psycopg.connect(self.args.database_url, autocommit=True) as conn:
            conn.execute("UPDATE checkout_product SET stock = 100000")  # shelves for the run
        shutil.rmtree(WORK / "sandbox", ignore_errors=True)  # a provider with no payments yet
        sandbox_env = {
            "SANDBOX_VAR_DIR": str(WORK / "sandbox"),
            "SANDBOX_LOG_LEVEL": "WARNING",
            "SANDBOX_PUBLIC_KEY": SECRET[0],
            "SANDBOX_SECRET_KEY": SECRET[1],
        }
        provider = ["-m", "sandbox.manage", "runsandbox", "--port", str(self.sandbox_port)]
        self.deployment.start("sandbox", self.new, [self.new.python(), *provider], **sandbox_env)
        wait_healthy(f"{self.sandbox}/healthz")
        proxy = Proxy(self.proxy_port, self.web(self.previous))
        proxy.start()
        started = [
            self.deployment.start(name, self.previous, command)
            for name, command in self.deployment.celery(self.previous).items()
        ]
        for process in started:
            process.wait_for("Starting" if process.name.startswith("beat") else "ready.")
        wait_healthy(f"{self.shop}/healthz")
        return proxy

    def migrate(self) -> None:
        log = LOGS / "migrate.log"
        with LockWatch(self.args.database_url) as locks:
            try:
                took = self.new.manage(self.base, "migrate", "--noinput", log=log)
            except subprocess.CalledProcessError:
                tail = log.read_text(errors="replace").strip().splitlines()[-3:]
                raise CheckFailed(
                    f"the new release's migrations failed ({log.relative_to(ROOT)}): "
                    + " | ".join(tail)
                ) from None
        self.figures["migrations took"] = f"{took:.1f} s"
        # The demo accounts' authenticators, as an operator's enrolment would give them: the
        # traffic's staff signs in again, with codes, once the new release serves
        # (docs/deployment.md, "Upgrading").
        self.new.manage(self.base, "seed_demo", log=log)
        waited = f"{locks.longest * 1000:.0f} ms"
        if locks.statement:
            waited += f" ({locks.statement[:100]})"
        self.figures["longest lock wait"] = waited

    def replace(self, proxy: Proxy) -> None:
        seconds = self.args.step_seconds
        self.phase("new web server", 0)
        old = self.deployment.processes["web"]
        proxy.switch(self.web(self.new))
        stopped = self.deployment.retire(old)
        self.figures["previous web server stopped in"] = f"{stopped:.1f} s"
        time.sleep(seconds)
        previous_celery = self.deployment.celery(self.previous)
        new_celery = self.deployment.celery(self.new)
        retiring = {name: self.deployment.processes.pop(name) for name in previous_celery}
        for name, command in new_celery.items():
            if name == "beat":
                continue
            self.phase(f"new worker '{name}'")
            self.deployment.start(name, self.new, command).wait_for("ready.")
            time.sleep(seconds)
        self.phase("previous workers stopped")
        for name, process in retiring.items():
            if name != "beat":
                self.deployment.retire(process)
        time.sleep(seconds)
        self.phase("new beat")
        self.deployment.retire(retiring["beat"])
        self.deployment.start("beat", self.new, new_celery["beat"]).wait_for("Starting")

    def run(self) -> list[str]:
        proxy = self.start_previous()
        self.traffic.start()
        self.phase("previous release", self.args.step_seconds)
        self.phase("migrating")
        self.migrate()
        self.phase("new schema, previous release", self.args.seconds)
        self.replace(proxy)
        self.phase("new release", self.args.seconds)
        self.say("traffic stops; the flows under way finish")
        self.traffic.stop()
        self.phase("settling")
        wrong = settle(self.traffic, self.sandbox)
        wrong += self.stranded()
        for process in self.deployment.processes.values():
            if not process.alive():
                wrong.append(f"{process.name} died (see {process.log})")
        return wrong

    def stranded(self) -> list[str]:
        """Tasks left in a queue that no worker of the new release takes (one the previous
        release queued to, say): they would never run."""
        taken = set()
        for command in self.deployment.celery(self.new).values():
            if "-Q" in command:
                taken.update(command[command.index("-Q") + 1].split(","))
        broker = redis.Redis.from_url(self.args.redis_url)
        left = []
        for key in broker.scan_iter():
            queue = key.decode(errors="replace").split("\x06")[0]
            if broker.type(key) == b"list" and queue not in taken and broker.llen(key):
                left.append(f"{broker.llen(key)} task(s) left in queue '{queue}', which no "
                            "worker of the new release takes")  # fmt: skip
        return left

    def report(self, wrong: list[str]) -> list[str]:
        counts = self.traffic.counts
        failures = list(wrong)
        print("\nAnswers of the shop by phase (5xx or none are failures):")
        for phase, answered in counts.answers.items():
            failed = [f for f in counts.failures if f.phase == phase]
            print(f"  {phase:34} {answered:6} answers, {len(failed)} failed")
        failures += [f"{f.phase}: {f.what}" for f in counts.failures[:10]]
        if len(counts.failures) > 10:
            failures.append(f"... and {len(counts.failures) - 10} more failed answers")
        print(
            f"\nOrders placed: {len(counts.orders)}; outcomes: {dict(counts.outcomes)}; "
            f"refunds: {counts.refunds}; notifications sent again: {counts.notifications}"
        )
        print("\nError lines in the processes' logs:")
        for process in self.deployment.everything():
            lines = error_lines(process.log)
            print(f"  {process.name:28} {len(lines)}  ({process.log.relative_to(ROOT)})")
            failures += [f"{process.name}: {line[:300]}" for line in lines[:3]]
        print()
        for name, value in self.figures.items():
            print(f"{name}: {value}")
        return failures


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--previous", default=os.environ.get("PREVIOUS", ""))
    parser.add_argument(
        "--seconds",
        type=float,
        default=30,
        help="traffic after the migrations and after the replacement",
    )
    parser.add_argument(
        "--step-seconds",
        type=float,
        default=8,
        help="traffic before the migrations and after each replaced process",
    )
    parser.add_argument("--shoppers", type=int, default=6)
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/shop_release_check"
        ),
    )
    parser.add_argument("--redis-url", default=os.environ.get(
        "REDIS_URL", "redis://127.0.0.1:6379/8"))  # fmt: skip
    return parser.parse_args()


def main() -> int:
    args = arguments()
    commit = previous_release(args.previous)
    head = git("rev-parse", "HEAD")
    LOGS.mkdir(parents=True, exist_ok=True)
    for old_log in LOGS.glob("*.log"):
        old_log.unlink()
    print(f"Release check: {commit[:10]} (previous) -> {head[:10]} (this tree)", flush=True)
    previous = Release.checked_out("previous", commit, WORK / "previous")
    check = Check(args, previous, Release.this_tree("new", head))
    os.environ.update(check.base)
    try:
        wrong = check.run()
    except CheckFailed as exc:
        check.traffic.stop(timeout=30)
        wrong = [str(exc)]
    finally:
        check.deployment.stop_all()
    failures = check.report(wrong)
    if failures:
        print("\nRELEASE CHECK FAILED:")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print(
        "\nRelease check passed: the previous release served through the migrations and "
        "the replacement, and every order ended right."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
