# ruff: noqa: S608  (SQL of module constants and ints: no outside input)
"""The year, generated in SQL on the server: a month at a time, each table by an
`INSERT ... SELECT` over `generate_series`, every choice a deterministic hash of a row's id and
the fill's seed (`pg_temp.vr`). The orders of a month are planned first in temporary tables
(orders, their items, their payment attempts, both ledgers); each shop table is then written
from the plan with explicit ids where another row names them (a mail's key names the ledger
entry it tells of).

The rows are settled as the shop's services leave them (`checkout.services.order_status`,
`checkout.services.mails_due`): an order's status is what its payments say, amounts add up
(captured <= amount, refunded <= captured), every status change the provider made is notified
(an INSERT, then an UPDATE per change, half of them delivered twice), and every mail is sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from checkout.models import Order
from checkout.words import CHARGED, NOT_PAID_IN_TIME
from payments.words import EXPIRY_WARNING, NOT_REACHED, REFUND
from tools.volume import people
from tools.volume.plan import PLAN, TZ, R
from tools.volume.writes import WRITE, WRITE_REST

# Orders of the year are placed until this long before now; the tail has the last hours.
HISTORY_ENDS = timedelta(hours=1)
# Subscriptions were last read this long before the fill's moment: a benchmark run later finds
# the moment (and travels back to it) from them (`fill_moment`).
SUBSCRIPTIONS_READ = timedelta(hours=2)
# A small shop still has more than a page of subscriptions (the admin's 100 a page).
SUBSCRIPTIONS_AT_LEAST = 120
# Relative weights of an hour of the day (local time), a day of the week (Monday first) and
# a month: more at midday and in the evening, more at the weekend, more before Christmas.
HOURS = [.15, .08, .05, .04, .04, .06, .15, .35, .6, .8, .95, 1.1, 1.3, 1.35, 1.2, 1.0, .95, 1.0,
         1.15, 1.35, 1.5, 1.4, 1.0, .5]  # fmt: skip
WEEKDAYS = [1.0, 0.95, 0.95, 1.0, 1.15, 1.2, 1.1]
MONTHS = [0.85, 0.8, 0.9, 0.9, 1.0, 0.95, 0.9, 0.9, 0.95, 1.0, 1.25, 1.45]


@dataclass(frozen=True)
class Context:
    actor: int
    order_type: int
    payment_type: int
    reservation_minutes: int


def _run(sql: str, params: dict[str, object] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _value(sql: str, params: dict[str, object] | None = None) -> object:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def _lookup(name: str, columns: str, rows: list[tuple[str, ...]]) -> None:
    _run(f"DROP TABLE IF EXISTS {name}")
    _run(f"CREATE TEMP TABLE {name} (k int, {columns})")
    with connection.cursor() as cursor:
        width = len(rows[0])
        marks = ", ".join(["%s"] * (width + 1))
        cursor.executemany(
            f"INSERT INTO {name} VALUES ({marks})", [(k, *row) for k, row in enumerate(rows)]
        )


def prepare(*, seed: int, orders: int, now: datetime) -> Context:
    """The session's helpers: the seeded hash functions, the look-up tables, the hours of the
    year with how many orders each gets."""
    seed = int(seed) % 1_000_000_007
    _run("SET LOCAL synchronous_commit = off")
    _run("SET LOCAL work_mem = '256MB'")
    _run("SET LOCAL jit = off")  # compiling takes seconds; these statements are simple
    _hash_functions(seed)
    _reference_function(seed)
    _format_functions()
    _lookups()
    _hours(orders=orders, now=now)
    actor = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    return Context(
        actor=actor.pk if actor is not None else 0,
        order_type=ContentType.objects.get_for_model(Order).pk,
        payment_type=ContentType.objects.get(app_label="payments", model="payment").pk,
        reservation_minutes=settings.SHOP_RESERVATION_MINUTES,
    )


def _hash_functions(seed: int) -> None:
    """`pg_temp.vr(n, salt)`, the seeded hash of every choice (a float in [0, 1)), and
    `pg_temp.vhex` / `pg_temp.vuuid`, the ids made of it."""
    _run(
        "CREATE OR REPLACE FUNCTION pg_temp.vr(n bigint, salt int) RETURNS float8 "
        "LANGUAGE sql IMMUTABLE AS $$ SELECT (hashint8extended($1, $2::bigint * 7919 + "
        f"{seed}) & 2147483647)::float8 / 2147483648.0 $$"
    )
    # 32 hex digits, and a UUID (version 4) of them, for the `kind`-th sort of id number `n`.
    _run(
        "CREATE OR REPLACE FUNCTION pg_temp.vhex(kind int, n bigint) RETURNS text "
        "LANGUAGE sql IMMUTABLE AS $$ SELECT lpad(to_hex(hashint8extended($2, $1::bigint * 31 + "
        f"{seed})), 16, '0') || lpad(to_hex(hashint8extended($2, $1::bigint * 37 + {seed} + 1)),"
        " 16, '0') $$"
    )
    _run(
        "CREATE OR REPLACE FUNCTION pg_temp.vuuid(kind int, n bigint) RETURNS text "
        "LANGUAGE sql IMMUTABLE AS $$ SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' "
        "|| substr(h, 14, 3) || '-8' || substr(h, 18, 3) || '-' || substr(h, 21, 12) "
        "FROM (SELECT pg_temp.vhex($1, $2) AS h) x $$"
    )


def _reference_function(seed: int) -> None:
    """`pg_temp.vref(n)`: the order reference of order id `n`."""
    mask = 32**5 - 1
    # A bijection of the 25-bit order ids: references are unique, and look random.
    offset = (seed * 2654435761) & mask
    _run(
        f"""CREATE OR REPLACE FUNCTION pg_temp.vref(n bigint) RETURNS text
        LANGUAGE plpgsql IMMUTABLE AS $$
        DECLARE x bigint := ($1 + {offset}) & {mask}; a text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
        BEGIN
          x := (x * 1103515245) & {mask}; x := x # (x >> 12);
          x := (x * 2654435761) & {mask}; x := x # (x >> 11);
          RETURN 'ORD-' || substr(a, ((x >> 20) & 31)::int + 1, 1)
            || substr(a, ((x >> 15) & 31)::int + 1, 1) || substr(a, ((x >> 10) & 31)::int + 1, 1)
            || substr(a, ((x >> 5) & 31)::int + 1, 1) || substr(a, (x & 31)::int + 1, 1);
        END $$"""
    )


def _format_functions() -> None:
    """`pg_temp.money(x)` and `pg_temp.iso(t)`: amounts and moments as the shop writes them."""
    _run(
        "CREATE OR REPLACE FUNCTION pg_temp.money(x numeric) RETURNS text LANGUAGE sql "
        "STABLE AS $$ SELECT '$' || to_char($1, 'FM999,999,999,990.00') $$"
    )
    _run(
        "CREATE OR REPLACE FUNCTION pg_temp.iso(t timestamptz) RETURNS text LANGUAGE sql "
        """STABLE AS $$ SELECT to_char($1 AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') $$"""
    )


def _lookups() -> None:
    """The look-up tables the statements draw from: people, places, reasons, the catalogue."""
    _lookup("vol_first", "name text, ascii text", people.FIRST_NAMES)
    _lookup("vol_last", "name text, ascii text", people.LAST_NAMES)
    _lookup("vol_city", "city text, state text, cp text", people.CITIES)
    _lookup("vol_street", "street text", [(s,) for s in people.STREETS])
    _lookup("vol_colony", "colony text", [(s,) for s in people.COLONIES])
    _lookup("vol_domain", "domain text", [(s,) for s in people.DOMAINS])
    _lookup("vol_reason", "reason text", [(s,) for s in people.REFUND_REASONS])
    _run("DROP TABLE IF EXISTS vol_prod")
    _run(
        "CREATE TEMP TABLE vol_prod AS SELECT (row_number() OVER (ORDER BY id) - 1)::int AS k, "
        "id, price, name, name_en FROM checkout_product WHERE active"
    )


def _hours(*, orders: int, now: datetime) -> None:
    """`vol_hours`: every hour of the year up to HISTORY_ENDS before `now`, with the range of
    order numbers (`n_start` to `n_end`) placed in it."""
    end = now - HISTORY_ENDS
    _run("DROP TABLE IF EXISTS vol_hours")
    _run(
        f"""CREATE TEMP TABLE vol_hours AS
        WITH hours AS (
          SELECT h, h AT TIME ZONE '{TZ}' AS l FROM generate_series(
            date_trunc('hour', %(start)s::timestamptz), date_trunc('hour', %(end)s::timestamptz)
            - interval '1 hour', interval '1 hour') h),
        weighted AS (
          SELECT h, (%(hours)s::float8[])[extract(hour FROM l)::int + 1]
            * (%(weekdays)s::float8[])[extract(isodow FROM l)::int]
            * (%(months)s::float8[])[extract(month FROM l)::int]
            * (0.75 + 0.5 * extract(epoch FROM h - %(start)s) / extract(epoch FROM
               %(end)s::timestamptz - %(start)s))
            * (0.8 + 0.4 * pg_temp.vr(extract(epoch FROM h)::bigint / 3600, 11))
            * CASE WHEN (extract(month FROM l) = 11 AND extract(day FROM l) BETWEEN 14 AND 17)
                     OR (extract(month FROM l) = 5 AND extract(day FROM l) >= 27)
                   THEN 2.2 ELSE 1 END AS w
          FROM hours),
        counted AS (
          SELECT h, round(%(n)s * sum(w) OVER (ORDER BY h) / sum(w) OVER ())::bigint AS n_end
          FROM weighted)
        SELECT h, coalesce(lag(n_end) OVER (ORDER BY h), 0) AS n_start, n_end FROM counted""",
        {
            "start": now - timedelta(days=365),
            "end": end,
            "n": orders,
            "hours": HOURS,
            "weekdays": WEEKDAYS,
            "months": MONTHS,
        },
    )


def _months(now: datetime) -> list[tuple[datetime, datetime]]:
    # From the hour the year starts in: every hour of `vol_hours` falls in one month.
    start = (now - timedelta(days=365)).replace(minute=0, second=0, microsecond=0)
    edges = [start]
    while edges[-1] < now:
        first = edges[-1].replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        edges.append((first + timedelta(days=32)).replace(day=1))
    edges[-1] = now
    return list(pairwise(edges))


def fill_months(*, orders: int, now: datetime, actor: Context) -> Iterator[tuple[str, int]]:
    """Write the year a month at a time; after each, its label and the orders written so far."""
    for start, end in _months(now):
        low, high = _value(
            "SELECT coalesce(min(n_start), 0) || ',' || coalesce(max(n_end), 0) FROM vol_hours "
            "WHERE h >= %(a)s AND h < %(b)s",
            {"a": start, "b": end},
        ).split(",")  # type: ignore[union-attr]
        if int(high) > int(low):
            _chunk(start, end, int(low), int(high), now, actor, orders)
        yield f"{start:%Y-%m}", int(high)


def _bases() -> dict[str, int]:
    tables = {
        "obase": "checkout_order",
        "pbase": "payments_payment",
        "ebase": "payments_paymentevent",
        "oebase": "checkout_orderevent",
    }
    return {key: int(_value(f"SELECT coalesce(max(id), 0) FROM {t}")) for key, t in tables.items()}  # type: ignore[arg-type]


def _chunk(
    start: datetime, end: datetime, low: int, high: int, now: datetime, ctx: Context, total: int
) -> None:
    params: dict[str, object] = {
        **_bases(),
        "lo": low,
        "h0": start,
        "h1": end,
        "hist_end": now - HISTORY_ENDS,
        # As retention leaves them (checkout.retention): older mails keep no text.
        "mails_blank_before": now - timedelta(days=settings.SHOP_MAIL_KEEP_DAYS),
        "pool": max(30, int(total * 0.4)),
        "actor": ctx.actor or None,
        "order_type": ctx.order_type,
        "minutes": ctx.reservation_minutes,
        "unmatched": round((high - low) * 0.01),
        "expired_text": NOT_PAID_IN_TIME(minutes=ctx.reservation_minutes),
        "charged_text": CHARGED(charged="{c}", released="{r}"),
        "refund_text": REFUND(refund="{id}"),
        "warning_text": EXPIRY_WARNING(when="{w}", days="{d}", hours="{h}"),
        "not_reached": NOT_REACHED,
        "shop": settings.SHOP_NAME,
    }
    for statement in PLAN:
        _run(statement, params)
    _fix_reference_collisions()
    for statement in WRITE + WRITE_REST:
        _run(statement, params)
    reset_sequences()


def _fix_reference_collisions() -> None:
    """References of the plan that an order already holds (one placed by the shop, whose
    reference is random) are drawn again from ids above any order's."""
    for attempt in range(1, 10):
        clashes = _value(
            "SELECT count(*) FROM vol_o v JOIN checkout_order o ON o.reference = v.reference"
        )
        if not clashes:
            return
        _run(
            "UPDATE vol_o v SET reference = pg_temp.vref(v.id + %(shift)s) FROM checkout_order o "
            "WHERE o.reference = v.reference",
            {"shift": 2**24 + attempt * 7919},
        )
    raise RuntimeError("could not find free order references")


def reset_sequences() -> None:
    tables = ["checkout_order", "checkout_orderitem", "checkout_orderevent", "checkout_ordermail"]
    tables += ["payments_payment", "payments_paymentevent", "payments_refund"]
    tables += ["payments_staffaction", "payments_subscription", "webhooks_webhookevent"]
    tables += ["django_admin_log"]
    for table in tables:
        _run(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
            f"coalesce((SELECT max(id) FROM {table}), 0) + 1, false)"
        )


def fill_moment() -> datetime | None:
    """The moment of the latest fill of this database (its tail's "now")."""
    from payments.models import Subscription

    latest = Subscription.objects.order_by("-last_synced_at").first()
    return latest.last_synced_at + SUBSCRIPTIONS_READ if latest and latest.last_synced_at else None


def fill_rest(*, orders: int, now: datetime, actor: Context) -> None:
    """What is not an order's: subscriptions, and the browser sessions long expired."""
    params = {
        "n": max(SUBSCRIPTIONS_AT_LEAST, round(orders * 0.003)),
        "sessions": round(orders * 0.03),
        "now": now,
        "base": int(_value("SELECT coalesce(max(id), 0) FROM payments_subscription")),  # type: ignore[arg-type]
        "prices": people.PRICE_IDS,
        "read": now - SUBSCRIPTIONS_READ,
    }
    _run(
        f"""INSERT INTO payments_subscription (provider_id, price_id, customer, customer_email,
          status, invoices, snapshot, last_synced_at, created_at)
        SELECT pg_temp.vuuid(5, %(base)s + g), x.price, jsonb_build_object('first_name', f.name,
            'last_name', l.name, 'email', x.email), x.email, x.status,
          jsonb_build_array(jsonb_build_object('id', pg_temp.vuuid(6, %(base)s + g),
            'status', 'paid', 'amount', '249.00', 'currency', 'MXN',
            'due_date', pg_temp.iso(x.created_at + interval '1 month'))),
          jsonb_build_object('id', pg_temp.vuuid(5, %(base)s + g), 'price_id', x.price,
            'status', x.status), %(read)s, x.created_at
        FROM generate_series(1, %(n)s) g
        CROSS JOIN LATERAL (SELECT
          (%(prices)s::text[])[1 + floor({R}(%(base)s + g, 81) * 3)::int] AS price,
          CASE WHEN {R}(%(base)s + g, 82) < .8 THEN 'active' ELSE 'inactive' END AS status,
          %(now)s::timestamptz - make_interval(secs => 31536000 * {R}(%(base)s + g, 83))
            AS created_at,
          'suscriptor' || (%(base)s + g) || '@example.com' AS email) x
        JOIN vol_first f ON f.k = floor({R}(%(base)s + g, 84) * (SELECT count(*) FROM vol_first))
        JOIN vol_last l ON l.k = floor({R}(%(base)s + g, 85) * (SELECT count(*) FROM vol_last))""",
        params,
    )
    _run(
        f"""INSERT INTO django_session (session_key, session_data, expire_date)
        SELECT substr(pg_temp.vhex(9, %(base)s::bigint * 100000000 + g), 1, 32)
            || substr(pg_temp.vhex(10, g), 1, 8), 'e30:1volume:' || pg_temp.vhex(11, g),
          %(now)s::timestamptz - make_interval(secs => 86400 + 25920000 * {R}(g, 86))
        FROM generate_series(1, %(sessions)s) g
        ON CONFLICT (session_key) DO NOTHING""",
        params,
    )
