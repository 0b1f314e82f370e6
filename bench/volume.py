"""The admin and the beat schedules on a small and a large year of orders (`fill_volume`).

1. Two databases, DATABASE_URL's name + `_1k`/`_1m`, filled by `fill_volume` (`--reuse`: kept
   if they hold the right count). A sandbox that knows none of their payments (reads get 404s).
2. Per size, in a process of its own (bench.settings, DEBUG off): every admin list of orders,
   payments, notifications, subscriptions and facturas por emitir: as is, by each filter
   choice, by date, searched (real values), sorted by each column offered; an order's and a
   payment's page; every task of CELERY_BEAT_SCHEDULE as beat runs it (10 minutes after a run
   of its own), in process, in a transaction rolled back after each run (the fill's fixed tail
   gives them the same work at both sizes); the accountant's export of the last whole month
   (`EXPORTS`), judged per row. Queries, median ms of 5 after a warm-up. A page showing fewer
   rows at the small size than at the large one is judged against the small size's full list.

    python -m bench.volume [--small 1000] [--large 1000000] [--reuse] [--strict] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench import runtime

RUNS = 5
NOISE_MS = 10
STEADY = timedelta(minutes=10)  # a task's last run before the one measured
# The owner's dashboard sums today's charges and the authorizations held: the day's work (3,308
# charges today at a million orders a year, 3 at a thousand), not the tables' size.
DAY_SUMS = ("home page",)
# The accountant's exports measured (books): a month's orders as CSV and XLSX, and the sales of
# the factura global.
EXPORTS = (("orders", "csv"), ("orders", "xlsx"), ("global", "csv"))


def suffix(size: int) -> str:
    for unit, word in ((1_000_000, "m"), (1_000, "k")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{word}"
    return str(size)


def filled(url: str, size: int, reuse: bool) -> None:
    """The database of `url` holding a fill of `size` orders (filled unless reused)."""
    import psycopg

    name = runtime.database_name(url)
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    manage = [sys.executable, "manage.py"]
    if reuse:
        try:
            with psycopg.connect(url) as c:
                held = c.execute("SELECT count(*) FROM checkout_order").fetchone()[0]
            if size <= held <= size + 100:  # the year, and the tail of work in flight
                subprocess.run([*manage, "migrate", "-v0"], cwd=runtime.ROOT, env=env, check=True)
                return print(f"{name}: reused ({held:,} orders), migrated")
        except psycopg.Error:
            pass
    runtime.database(url, name, fresh=True)
    subprocess.run([*manage, "migrate", "-v0"], cwd=runtime.ROOT, env=env, check=True)
    started = time.monotonic()
    fill = [*manage, "fill_volume", "--orders", str(size)]
    subprocess.run(fill, cwd=runtime.ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    print(f"{name}: filled with {size:,} orders in {time.monotonic() - started:.0f} s")


def timed(work: Callable[[], Any], before: Callable[[], None] = lambda: None) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, queries, result = [], 0, None
    for run in range(RUNS + 1):
        before()
        connection.queries_log.clear()  # it keeps 9,000 queries: past that, none are counted
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            result = work()
            elapsed = (time.perf_counter() - started) * 1000
        if run:
            times.append(elapsed)
            queries = len(captured)
    return {"queries": queries, "ms": statistics.median(times), "result": result}


def sign_in(client: Any, user: Any) -> None:
    """The admin as staff reach it: the password page, then the code page with the code the
    demo authenticator shows (given to the account when it has none)."""
    from staff_signin.demo import DEMO_SECRETS, demo_authenticator
    from tools.admin_sign_in import totp

    demo_authenticator(user, DEMO_SECRETS["admin"])
    if not user.check_password("tienda-demo-2026"):
        user.set_password("tienda-demo-2026")
        user.save(update_fields=["password"])
    answer = client.post("/admin/login/", {"username": "admin", "password": "tienda-demo-2026"})
    assert "/admin/sign-in/code/" in answer.url, answer.status_code
    answer = client.post(answer.url, {"code": totp(DEMO_SECRETS["admin"])})
    assert answer.status_code == 302 and answer.url == "/admin/", answer.status_code


def measure() -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import translation

    translation.activate("en")
    client = Client(HTTP_HOST="127.0.0.1", HTTP_ACCEPT_LANGUAGE="en")
    sign_in(client, get_user_model().objects.get(username="admin"))
    from config.celery import app

    app.loader.import_default_modules()
    return [*measure_pages(client), *measure_exports(), *measure_tasks(app)]


def measure_exports() -> list[dict[str, Any]]:
    """The accountant's export of the last whole month before the fill's moment (its orders as
    CSV and as XLSX, and the factura global's sales as CSV), as its task makes it, in a
    transaction rolled back after each run: its figures and how many rows it wrote (judged per
    row, as a task's items: its queries grow by one a chunk of rows, not a row)."""
    from datetime import date

    from books.models import ExportKind
    from tools.volume.history import fill_moment

    moment = fill_moment()
    if moment is None:
        return []
    end = moment.date().replace(day=1) - timedelta(days=1)
    start = date(end.year, end.month, 1)
    rows = []
    for kind, file_format in EXPORTS:
        label = f"task export {ExportKind(kind).name.lower()} of a month ({file_format})"
        rows.append(
            {"name": label, **timed(lambda k=kind, f=file_format: _export(k, f, start, end))}
        )
        print("ROW " + json.dumps(rows[-1], default=str), file=sys.stderr, flush=True)
    return rows


def _export(kind: str, file_format: str, start: Any, end: Any) -> int:
    """One export made as its task makes it, rolled back; the rows it wrote."""
    from django.db import transaction

    from books.exports import books_export_run
    from books.models import BooksExport

    with transaction.atomic():
        export = BooksExport.objects.create(kind=kind, format=file_format, start=start, end=end)
        books_export_run(export_id=export.pk)
        done = BooksExport.objects.get(pk=export.pk).rows_done
        transaction.set_rollback(True)
    return done


def measure_pages(client: Any) -> list[dict[str, Any]]:
    """Each admin page of `tools.volume.pages`, opened by `client`: its figures and rows shown."""
    from django.contrib.auth import get_user_model

    from tools.volume.pages import admin_pages

    rows = []

    def shown(path: str) -> tuple[int, int]:
        """The page's status, and how many rows its list shows (0 on other pages)."""
        response = client.get(path)
        return response.status_code, response.content.count(b'name="_selected_action"')

    for label, path in admin_pages(get_user_model().objects.get(username="admin")):
        row = timed(lambda path=path: shown(path))
        (status, shown_rows), row["result"] = row["result"], None
        rows.append({"name": label, **row, "rows": shown_rows,
                     "note": "" if status == 200 else status})  # fmt: skip
        print("ROW " + json.dumps(rows[-1], default=str), file=sys.stderr, flush=True)
    return rows


def measure_tasks(app: Any) -> list[dict[str, Any]]:
    """Each task of CELERY_BEAT_SCHEDULE as beat runs it, at the fill's moment: its figures and
    what it returned."""
    import time_machine
    from django.conf import settings
    from django.core.cache import cache
    from django.db import transaction

    from checkout.reservations.rules import SOONEST_END
    from tools.volume.history import fill_moment

    rows = []
    # The tasks run at the fill's moment, whenever it was: its work in flight is as it left it.
    # Each task as beat runs it: Redis emptied, then a run STEADY before the one measured (the
    # last run's cursor, not the first run's look back after Redis lost everything).
    moment = fill_moment()
    traveller = time_machine.travel(moment, tick=True)
    traveller.start()
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        task = app.tasks[entry["task"]]

        def run(task: Any = task) -> Any:
            with transaction.atomic():
                outcome = task.apply()
                transaction.set_rollback(True)
            return outcome.result if outcome.successful() else f"failed: {outcome.result!r}"

        def before(run: Callable[[], Any] = run) -> None:
            runtime.broker().flushdb()
            with time_machine.travel(moment - STEADY, tick=True):
                run()
            # The run was rolled back: the soonest end of a reservation it noted in the cache (the
            # orders it expired still held) is not the database's.
            cache.delete(SOONEST_END)

        rows.append({"name": f"task {name}", **timed(run, before=before)})
        print("ROW " + json.dumps(rows[-1], default=str), file=sys.stderr, flush=True)
    traveller.stop()
    return rows


def report(sizes: list[int], results: list[list[dict[str, Any]]], strict: bool) -> int:
    header = ["page / task", *(f"queries {suffix(s)}" for s in sizes)]
    header += [*(f"ms {suffix(s)}" for s in sizes), "ratio", "note"]
    rows, misses = [], 0
    full = {r["name"].split(":")[0]: r for r in results[0] if r["name"].endswith(": list")}
    for small, large in zip(*results, strict=True):
        ratio = large["ms"] / max(small["ms"], 0.01)
        note = " ".join(str(x) for x in (small.get("note"), large.get("note")) if x)
        # A page that shows fewer rows at the small size (a filter that finds 7 orders in a
        # thousand, a full page in a million) is judged against the small list's full page.
        baseline = full.get(small["name"].split(":")[0])
        if baseline and small.get("rows", 0) < large.get("rows", 0) <= baseline["rows"]:
            ratio = large["ms"] / max(small["ms"], baseline["ms"], 0.01)
            note = f"rows {small['rows']} / {large['rows']}: against the full list"
        slack = 0
        if small["name"].startswith("task "):
            items = (small["result"], large["result"])
            note = f"items {items[0]} / {items[1]}" + (f"; {note}" if note else "")
            slack = 2 if items[0] != items[1] else 0
            if items[0] != items[1] and all(isinstance(n, int) and n > 0 for n in items):
                ratio = (large["ms"] / items[1]) / max(small["ms"] / items[0], 0.001)
                note += "; per item"
                # Queries a batch: no more a item at the large size than at the small one.
                slack = max(slack, small["queries"] * items[1] / items[0] - small["queries"])
        # Under NOISE_MS at the large size, a ratio is the noise of a single run's timing.
        slow = ratio > 2.0 and large["ms"] >= NOISE_MS
        if small["name"].startswith(DAY_SUMS):  # the same queries, over the day's rows
            slow, note = False, "sums the day's work: queries judged"
        missed = abs(large["queries"] - small["queries"]) > slack or slow
        misses += missed
        figures = [small["queries"], large["queries"], f"{small['ms']:.1f}", f"{large['ms']:.1f}"]
        rows.append([small["name"], *figures, f"{ratio:.2f}{' MISS' if missed else ''}", note])
    print(runtime.table(header, rows))
    print("Tasks: provider reads go to a sandbox that knows none of the fill's payments (404s);")
    print("items: what each task returned (payments read, events relayed, orders synced…);")
    print("where they differ (work that grows with the shop), queries and time count per item.")
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    __import__("django").setup()
    from bench.read_capacity import budget_table

    budget_rows, budget_misses = budget_table()
    print("\nRead budget")
    for line in budget_rows:
        print(line)
    misses += len(budget_misses)
    return 1 if strict and misses else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--reuse", action="store_true", help="reuse fills of the right size")
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--json", type=str, default="")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
        sys.path.insert(0, str(runtime.ROOT))
        __import__("django").setup()
        return print("BENCH " + json.dumps(measure(), default=str))
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/shop_bench")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/6")
    url, sizes = os.environ["DATABASE_URL"], [args.small, args.large]
    name = runtime.database_name(url)
    urls = [urlunsplit(urlsplit(url)._replace(path=f"/{name}_{suffix(s)}")) for s in sizes]
    if not all(any(w in runtime.database_name(u) for w in ("bench", "volume")) for u in urls):
        sys.exit("The fills' database names must contain 'bench' or 'volume'.")
    sys.path.insert(0, str(runtime.ROOT))
    runtime.LOG_DIR.mkdir(parents=True, exist_ok=True)
    for size, size_url in zip(sizes, urls, strict=True):
        filled(size_url, size, args.reuse)
    sandbox_file = runtime.LOG_DIR / "volume-sandbox.sqlite3"  # it only answers 404s
    sandbox_file.unlink(missing_ok=True)
    sandbox_url = f"sqlite:///{sandbox_file}"
    results = []
    with runtime.sandbox(runtime.free_port(), sandbox_url) as base:
        for size_url in urls:
            env = {**os.environ, "DATABASE_URL": size_url, "PAYMENTS_API_BASE_URL": base}
            command = [sys.executable, "-m", "bench.volume", "--measure"]
            log = runtime.LOG_DIR / f"volume-{runtime.database_name(size_url)}.log"  # its rows
            with log.open("w") as err:
                out = subprocess.run(command, cwd=runtime.ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=err, text=True)  # fmt: skip
            line = next((x for x in out.stdout.splitlines() if x.startswith("BENCH ")), None)
            if line is None:
                sys.exit(f"the measuring process failed:\n{out.stdout}\nsee {log}")
            results.append(json.loads(line[len("BENCH ") :]))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(dict(zip(map(suffix, sizes), results, strict=True)), handle, indent=1)
    sys.exit(report(sizes, results, args.strict))


if __name__ == "__main__":
    main()
