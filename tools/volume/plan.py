# ruff: noqa: S608  (SQL of module constants: no outside input)
"""The statements that plan a month of the year (`tools.volume.history`) in temporary tables:
`vol_o` its orders (when, who, what they hold, what happened to them), `vol_i` their items,
`vol_p` their payment attempts. `pg_temp.vr(n, salt)` is the seeded hash that makes every
choice; parameters are `%(name)s`. The shop's tables are written from the plan by the
statements of `tools.volume.writes`."""

from __future__ import annotations

TZ = "America/Mexico_City"

R = "pg_temp.vr"
PLAN = [
    "DROP TABLE IF EXISTS vol_o, vol_i, vol_p, vol_e, vol_oe",
    # Orders: when, who, what happened to them (scn: A one attempt accepted, B/C one or two
    # declines then accepted, D a decline only, E no attempt (both expire), F an attempt not
    # created then accepted, G an answer lost then confirmed).
    f"""CREATE TEMP TABLE vol_o AS
    SELECT s.*,
      s.pay_at + make_interval(secs => CASE WHEN s.scn = 'G' THEN 60
        ELSE 2 + CASE WHEN s.tds THEN 30 + 120 * {R}(s.id, 22) ELSE 0 END END) AS accept_at
    FROM (
      SELECT b.*, b.first_at + make_interval(secs => (b.n_att - 1) * (60 + 240 * {R}(b.id, 21)))
          AS pay_at
      FROM (
        SELECT a.*,
          a.created_at + make_interval(secs => 40 + 200 * {R}(a.id, 20)) AS first_at,
          (CASE WHEN scn IN ('B', 'D', 'F') THEN 1 WHEN scn = 'C' THEN 2 ELSE 0 END
            + CASE WHEN scn IN ('D', 'E') THEN 0 ELSE 1 END) AS n_att,
          scn NOT IN ('D', 'E') AS accepted
        FROM (
          SELECT o.id, o.created_at, o.customer,
            CASE WHEN {R}(o.id, 3) < .55 THEN 1 WHEN {R}(o.id, 3) < .85 THEN 2 ELSE 3 END
              AS n_items,
            CASE WHEN {R}(o.id, 5) < .735 THEN 'A' WHEN {R}(o.id, 5) < .885 THEN 'B'
                 WHEN {R}(o.id, 5) < .905 THEN 'C' WHEN {R}(o.id, 5) < .945 THEN 'D'
                 WHEN {R}(o.id, 5) < .985 THEN 'E' WHEN {R}(o.id, 5) < .995 THEN 'F'
                 ELSE 'G' END AS scn,
            {R}(o.id, 6) < .4 AS manual,
            {R}(o.id, 7) < .35 AND {R}(o.id, 5) < .995 AS tds,
            {R}(o.id, 8) AS fate_draw
          FROM (
            SELECT %(obase)s + g.i - %(lo)s + 1 AS id,
              hr.h + make_interval(secs => 3599 * {R}(%(obase)s + g.i - %(lo)s + 1, 1))
                AS created_at,
              floor(%(pool)s * power({R}(%(obase)s + g.i - %(lo)s + 1, 2), 1.6))::bigint
                AS customer
            FROM vol_hours hr CROSS JOIN LATERAL generate_series(hr.n_start, hr.n_end - 1) g(i)
            WHERE hr.h >= %(h0)s AND hr.h < %(h1)s
          ) o
        ) a
      ) b
    ) s""",
    "ALTER TABLE vol_o ADD COLUMN first_name text, ADD COLUMN last_name text, "
    "ADD COLUMN email text, ADD COLUMN lang text",
    """UPDATE vol_o o SET first_name = f.name, last_name = l.name,
      email = f.ascii || '.' || l.ascii || o.customer || '@' || d.domain,
      lang = CASE WHEN pg_temp.vr(o.customer, 75) < .85 THEN 'es' ELSE 'en' END
    FROM vol_first f, vol_last l, vol_domain d
    WHERE f.k = floor(pg_temp.vr(o.customer, 70) * (SELECT count(*) FROM vol_first))
      AND l.k = floor(pg_temp.vr(o.customer, 71) * (SELECT count(*) FROM vol_last))
      AND d.k = floor(pg_temp.vr(o.customer, 72) * (SELECT count(*) FROM vol_domain))""",
    "ANALYZE vol_o",
    # Items: 1-3 of the catalogue, the popular ones more often.
    f"""CREATE TEMP TABLE vol_i AS
    SELECT o.id AS order_id, g.n AS k, o.n_items, p.id AS product_id, p.name, p.name_en, p.price,
      1 + ({R}(o.id, 40 + g.n) < .15)::int AS quantity
    FROM vol_o o CROSS JOIN LATERAL generate_series(1, o.n_items) g(n)
    JOIN vol_prod p ON p.k = floor(power({R}(o.id, 30 + g.n), 1.4)
      * (SELECT count(*) FROM vol_prod))::int""",
    "ANALYZE vol_i",
    # What happened after the payment (`fate`), as far as the year went.
    """ALTER TABLE vol_o ADD COLUMN reference text, ADD COLUMN total numeric,
      ADD COLUMN last_line numeric, ADD COLUMN items_all text, ADD COLUMN items_head text,
      ADD COLUMN items_last text, ADD COLUMN fate text""",
    """UPDATE vol_o o SET reference = pg_temp.vref(o.id), total = t.total,
      last_line = t.last_line, items_all = t.items_all, items_head = t.items_head,
      items_last = t.items_last
    FROM (SELECT order_id, sum(price * quantity) AS total,
            (array_agg(price * quantity ORDER BY k DESC))[1] AS last_line,
            string_agg(quantity || ' × ' || name, ', ' ORDER BY k) AS items_all,
            string_agg(quantity || ' × ' || name, ', ' ORDER BY k)
              FILTER (WHERE k < n_items)
              AS items_head,
            (array_agg(quantity || ' × ' || name ORDER BY k DESC))[1] AS items_last
          FROM vol_i i GROUP BY order_id) t
    WHERE t.order_id = o.id""",
    """ALTER TABLE vol_o ADD COLUMN ship_at timestamptz, ADD COLUMN ship2_at timestamptz,
      ADD COLUMN cancel_at timestamptz, ADD COLUMN refund_at timestamptz,
      ADD COLUMN warn_at timestamptz, ADD COLUMN expire_at timestamptz,
      ADD COLUMN part numeric, ADD COLUMN split boolean""",
    f"""UPDATE vol_o SET
      ship_at = accept_at + interval '18 hours' + make_interval(secs => 302400 * {R}(id, 9)),
      cancel_at = accept_at + make_interval(secs => CASE WHEN manual
        THEN 10800 + 259200 * {R}(id, 11) ELSE 7200 + 100800 * {R}(id, 11) END),
      warn_at = accept_at + interval '27 days' + make_interval(secs => 3000 * {R}(id, 13)),
      expire_at = accept_at + interval '30 days' + make_interval(secs => 2400 * {R}(id, 13)),
      part = greatest(0.01, round(total * (0.1 + 0.5 * {R}(id, 14))::numeric, 2)),
      split = NOT manual AND n_items >= 2 AND {R}(id, 15) < .05""",
    f"""UPDATE vol_o SET
      ship2_at = ship_at + make_interval(secs => 172800 + 345600 * {R}(id, 10)),
      refund_at = ship_at + make_interval(secs => 259200 + 1900800 * {R}(id, 12))""",
    """UPDATE vol_o SET fate = CASE
      WHEN NOT accepted THEN 'expired'
      WHEN NOT manual AND fate_draw < .015 AND cancel_at <= %(hist_end)s THEN 'cancel_refund'
      WHEN manual AND fate_draw < .08 AND cancel_at <= %(hist_end)s THEN 'cancel'
      WHEN manual AND fate_draw >= .08 AND fate_draw < .10 AND expire_at <= %(hist_end)s
        THEN 'expire'
      WHEN ship_at > %(hist_end)s THEN 'open'
      WHEN fate_draw >= .10 AND fate_draw < .125 AND refund_at <= %(hist_end)s
        THEN 'return_refund'
      WHEN fate_draw >= .125 AND fate_draw < .155 AND refund_at <= %(hist_end)s
        THEN 'part_refund'
      WHEN manual AND fate_draw >= .155 AND fate_draw < .175 AND n_items >= 2
        THEN 'part_capture'
      WHEN split AND ship2_at <= %(hist_end)s THEN 'ship_twice'
      WHEN split THEN 'ship_part'
      ELSE 'ship' END""",
    # Payment attempts: declines and attempts not created first, the accepted one last.
    f"""CREATE TEMP TABLE vol_p AS
    SELECT %(pbase)s + row_number() OVER (ORDER BY o.id, a) AS id, o.id AS order_id, a,
      CASE WHEN o.accepted AND a = o.n_att - 1 THEN 'accepted'
           WHEN o.scn = 'F' THEN 'failed' ELSE 'declined' END AS role,
      CASE WHEN o.accepted AND a = o.n_att - 1 THEN o.pay_at
           ELSE o.first_at + make_interval(secs => a * (60 + 240 * {R}(o.id, 21))) END
        AS created_at,
      CASE WHEN {R}(o.id, 50 + a) < .6 THEN 'RE-DEC01' WHEN {R}(o.id, 50 + a) < .9
        THEN 'RE-FUN01' ELSE 'RE-3DS01' END AS decline
    FROM vol_o o CROSS JOIN LATERAL generate_series(0, o.n_att - 1) a""",
    "ANALYZE vol_o",
    "ANALYZE vol_p",
]
