# ruff: noqa: S608  (SQL of module constants: no outside input)
"""The statements that write a month of the year from its plan (`tools.volume.plan`), once the
plan's references are known to be free (`tools.volume.history`): `WRITE` settles each payment
attempt (`vol_p`), plans the payments' ledger (`vol_e`) and writes the payments; `WRITE_REST`
writes the orders, their items, the orders' ledger (planned in `vol_oe`) and the payments',
refunds, notifications, mails, staff actions and the admin's log. `pg_temp.vr(n, salt)` is the
seeded hash that makes every choice; parameters are `%(name)s`."""

from __future__ import annotations

from tools.volume.plan import TZ, R

# The statuses the provider's detail codes come with, and its words for them (the sandbox's).
CODES = """(VALUES ('AU-CAP01', 'Pending capture'), ('PE-3DS01', 'Waiting 3DS'),
  ('AP-PAI01', 'paid'), ('CA-MER01', 'Cancelled'), ('CA-EXP01', 'Authorization expired'),
  ('CA-VOI01', 'Voided'), ('RF-REF01', 'Refunded'), ('RE-DEC01', 'Declined'),
  ('RE-FUN01', 'Insufficient funds'), ('RE-3DS01', '3-D Secure failed'))"""

WRITE = [
    # Each attempt's final state.
    """ALTER TABLE vol_p ADD COLUMN status text, ADD COLUMN code text,
      ADD COLUMN captured numeric, ADD COLUMN refunded numeric, ADD COLUMN version int,
      ADD COLUMN last_at timestamptz, ADD COLUMN provider_id text""",
    f"""UPDATE vol_p p SET
      status = CASE WHEN p.role = 'failed' THEN 'failed' WHEN p.role = 'declined' THEN 'rejected'
        WHEN o.fate = 'open' AND o.manual THEN 'authorized'
        WHEN o.fate IN ('cancel', 'expire') THEN 'cancelled'
        WHEN o.fate = 'cancel_refund' AND (o.cancel_at AT TIME ZONE '{TZ}')::date
          = (o.accept_at AT TIME ZONE '{TZ}')::date THEN 'cancelled'
        WHEN o.fate IN ('cancel_refund', 'return_refund') THEN 'refunded'
        ELSE 'approved' END,
      captured = CASE WHEN p.role <> 'accepted' OR o.fate IN ('cancel', 'expire')
          OR (o.fate = 'open' AND o.manual) THEN 0
        WHEN o.fate = 'part_capture' THEN o.total - o.last_line ELSE o.total END,
      refunded = CASE WHEN p.role <> 'accepted' THEN 0
        WHEN o.fate IN ('cancel_refund', 'return_refund') THEN o.total
        WHEN o.fate = 'part_refund' THEN o.part ELSE 0 END,
      version = CASE WHEN p.role = 'failed' THEN 0
        WHEN p.role = 'declined' THEN 1 + (p.decline = 'RE-3DS01')::int
        ELSE 1 + o.tds::int + (o.manual AND o.fate NOT IN ('open'))::int
          + (o.fate IN ('cancel_refund', 'return_refund', 'part_refund'))::int END,
      last_at = CASE WHEN p.role <> 'accepted' THEN p.created_at + interval '65 seconds'
        ELSE greatest(o.accept_at,
          CASE WHEN o.manual AND o.fate IN ('ship', 'part_capture', 'return_refund',
            'part_refund') THEN o.ship_at END,
          CASE WHEN o.fate IN ('cancel', 'cancel_refund') THEN o.cancel_at END,
          CASE WHEN o.fate = 'expire' THEN o.expire_at END,
          CASE WHEN o.fate IN ('return_refund', 'part_refund') THEN o.refund_at END) END,
      provider_id = CASE WHEN p.role = 'failed' THEN NULL ELSE pg_temp.vuuid(1, p.id) END
    FROM vol_o o WHERE o.id = p.order_id""",
    f"""UPDATE vol_p p SET code = CASE
      WHEN p.role = 'failed' THEN CASE WHEN {R}(p.id, 23) < .5 THEN 'CL2201'
        ELSE %(not_reached)s END
      WHEN p.role = 'declined' THEN p.decline
      WHEN p.status = 'authorized' THEN 'AU-CAP01' WHEN p.status = 'refunded' THEN 'RF-REF01'
      WHEN p.status = 'approved' THEN 'AP-PAI01'
      WHEN o.fate = 'cancel' THEN 'CA-MER01' WHEN o.fate = 'expire' THEN 'CA-EXP01'
      ELSE 'CA-VOI01' END
    FROM vol_o o WHERE o.id = p.order_id""",
    "ANALYZE vol_p",
    # The payments' ledger, each entry as the shop's services write it.
    """CREATE TEMP TABLE vol_e AS
    SELECT %(ebase)s + row_number() OVER (ORDER BY e.at, e.payment_id, e.seq) AS id, e.*
    FROM (
      SELECT p.id AS payment_id, o.id AS order_id, v.*
      FROM vol_p p JOIN vol_o o ON o.id = p.order_id
      CROSS JOIN LATERAL (VALUES
        (1, CASE WHEN p.role = 'accepted' AND o.scn = 'G' THEN 'unknown' END, 'creating',
          'unknown', NULL::numeric, p.created_at + interval '10 seconds', false),
        (2, CASE WHEN p.role = 'failed' THEN 'failed' ELSE 'created' END,
          CASE WHEN p.role = 'accepted' AND o.scn = 'G' THEN 'unknown' ELSE 'creating' END,
          CASE WHEN p.role = 'failed' THEN 'failed'
            WHEN p.role = 'declined' AND p.decline = 'RE-3DS01' THEN 'pending'
            WHEN p.role = 'declined' THEN 'rejected'
            WHEN o.tds THEN 'pending' WHEN o.manual THEN 'authorized' ELSE 'approved' END,
          NULL, CASE WHEN p.role = 'accepted' AND o.scn = 'G' THEN o.accept_at
            ELSE p.created_at + interval '1 second' END, false),
        (3, CASE WHEN (p.role = 'declined' AND p.decline = 'RE-3DS01')
            OR (p.role = 'accepted' AND o.tds) THEN 'synced' END, 'pending',
          CASE WHEN p.role = 'declined' THEN 'rejected' WHEN o.manual THEN 'authorized'
            ELSE 'approved' END, NULL,
          CASE WHEN p.role = 'declined' THEN p.created_at + interval '64 seconds'
            ELSE o.accept_at END, false),
        (4, CASE WHEN p.role = 'accepted' AND o.manual AND o.fate IN ('ship', 'part_capture',
            'return_refund', 'part_refund') THEN 'captured' END, 'authorized', 'approved',
          p.captured, o.ship_at - interval '1 second', true),
        (5, CASE WHEN p.role = 'accepted' AND o.fate = 'cancel' THEN 'cancelled' END,
          'authorized', 'cancelled', NULL, o.cancel_at, true),
        (6, CASE WHEN p.role = 'accepted' AND o.fate = 'expire' THEN 'expiring' END,
          'authorized', 'authorized', NULL, o.warn_at, false),
        (7, CASE WHEN p.role = 'accepted' AND o.fate = 'expire' THEN 'synced' END,
          'authorized', 'cancelled', NULL, o.expire_at, false),
        (8, CASE WHEN p.role = 'accepted' AND o.fate IN ('cancel_refund', 'return_refund',
            'part_refund') THEN 'refunded' END, 'approved', p.status, p.refunded,
          CASE WHEN o.fate = 'cancel_refund' THEN o.cancel_at + interval '2 seconds'
            ELSE o.refund_at END, true)
      ) v(seq, kind, old, new, amount, at, by_staff)
      WHERE v.kind IS NOT NULL
    ) e""",
    "ANALYZE vol_e",
    """INSERT INTO payments_payment (id, provider_id, external_reference, idempotency_key,
      capture_method, status, status_code, status_message, amount, captured_amount,
      refunded_amount, currency, description, customer_email, card_brand, card_last_digits,
      three_ds_url, provider_version, snapshot, last_error, create_request, intent,
      intent_started_at, authorized_at, authorization_expires_at, expiry_warned_at,
      last_synced_at, created_at, updated_at, installments, installment_amount, checks_done)
    SELECT p.id, p.provider_id, o.reference,
      o.reference || '-' || pg_temp.vhex(7, p.id), CASE WHEN o.manual THEN 'manual'
        ELSE 'automatic' END,
      p.status, p.code, CASE WHEN p.role = 'failed' THEN '' ELSE coalesce(c.message, '') END,
      o.total, p.captured, p.refunded, 'MXN',
      CASE WHEN o.lang = 'en' THEN 'Order ' || o.reference || ' at ' || %(shop)s
        ELSE 'Pedido ' || o.reference || ' en ' || %(shop)s END,
      o.email, CASE WHEN p.role = 'failed' THEN '' ELSE k.brand END,
      CASE WHEN p.role = 'failed' THEN '' ELSE k.last4 END, '', p.version,
      CASE WHEN p.provider_id IS NULL THEN '{}'::jsonb ELSE jsonb_build_object(
        'id', p.provider_id, 'amount', to_char(o.total, 'FM9999999990.00'),
        'amount_refunded', to_char(p.refunded, 'FM9999999990.00'),
        'captured_amount', to_char(p.captured, 'FM9999999990.00'),
        'installments', k.inst, 'installment_amount',
          to_char(round(o.total / k.inst, 2), 'FM9999999990.00'),
        'capture_method', CASE WHEN o.manual THEN 'manual' ELSE 'automatic' END,
        'currency', 'MXN', 'external_reference', o.reference, 'status',
          CASE WHEN p.status = 'authorized' THEN 'authorized' ELSE p.status END,
        'status_detail', jsonb_build_object('code', p.code, 'message', c.message),
        'payment_method', jsonb_build_object('id', k.brand, 'type', 'credit_card',
          'card', jsonb_build_object('bin', k.bin, 'last_digits', k.last4, 'issuer', k.issuer,
            'name', o.first_name || ' ' || o.last_name, 'country', 'MX',
            'exp_month', k.exp_month, 'exp_year', k.exp_year)),
        'customer', jsonb_build_object('email', o.email),
        'created_at', pg_temp.iso(p.created_at),
        'approved_at', CASE WHEN p.captured > 0 THEN pg_temp.iso(CASE WHEN o.manual
          THEN o.ship_at ELSE o.accept_at END) END,
        'version', p.version) END,
      CASE WHEN p.role = 'failed' AND p.code = 'CL2201'
          THEN 'CL2201: The card token is unknown or has expired.'
        WHEN p.role = 'failed' THEN 'The payment service is not reachable right now.'
        ELSE '' END, '', '', NULL,
      CASE WHEN p.role = 'accepted' AND o.manual THEN o.accept_at END,
      CASE WHEN p.role = 'accepted' AND o.manual THEN o.accept_at + interval '30 days' END,
      CASE WHEN p.role = 'accepted' AND o.fate = 'expire' THEN o.warn_at END,
      CASE WHEN p.provider_id IS NULL THEN NULL ELSE p.last_at + interval '2 seconds' END,
      p.created_at, p.last_at + interval '2 seconds',
      CASE WHEN p.role = 'accepted' THEN k.inst ELSE 1 END,
      CASE WHEN p.role = 'accepted' AND k.inst > 1 THEN round(o.total / k.inst, 2) END, 0
    FROM vol_p p JOIN vol_o o ON o.id = p.order_id
    LEFT JOIN """
    + CODES
    + """ c(code, message) ON c.code = p.code
    CROSS JOIN LATERAL (SELECT
      CASE WHEN pg_temp.vr(o.customer, 80 + p.a) < .55 THEN 'visa'
        WHEN pg_temp.vr(o.customer, 80 + p.a) < .9 THEN 'master' ELSE 'amex' END AS brand,
      lpad((floor(pg_temp.vr(o.customer, 90 + p.a) * 10000))::int::text, 4, '0') AS last4,
      CASE WHEN pg_temp.vr(o.customer, 80 + p.a) < .55 THEN '491566'
        WHEN pg_temp.vr(o.customer, 80 + p.a) < .9 THEN '542418' ELSE '377813' END AS bin,
      CASE WHEN pg_temp.vr(o.customer, 80 + p.a) < .3 THEN 'BBVA México'
        WHEN pg_temp.vr(o.customer, 80 + p.a) < .6 THEN 'Banorte'
        WHEN pg_temp.vr(o.customer, 80 + p.a) < .9 THEN 'Santander' ELSE 'American Express'
        END AS issuer,
      lpad((1 + floor(pg_temp.vr(o.customer, 95) * 12))::int::text, 2, '0') AS exp_month,
      (2027 + floor(pg_temp.vr(o.customer, 96) * 5))::int::text AS exp_year,
      CASE WHEN o.total < 300 OR pg_temp.vr(o.id, 16) < .75 THEN 1
        WHEN pg_temp.vr(o.id, 16) < .87 THEN 3 WHEN pg_temp.vr(o.id, 16) < .95 THEN 6
        ELSE 12 END AS inst) k""",
]


SHIPPED_FATES = (
    "('ship', 'ship_twice', 'ship_part', 'part_capture', 'return_refund', 'part_refund')"
)
WRITE_REST = [
    f"""INSERT INTO checkout_order (id, reference, status, fulfilment, first_name, last_name,
      email, phone, street, number, colony, city, state, postal_code, country, total, currency,
      language, reserved_until, created_at, updated_at)
    SELECT o.id, o.reference,
      CASE WHEN NOT o.accepted THEN 'expired'
        WHEN p.status = 'refunded' OR (p.status = 'cancelled' AND p.captured > 0) THEN 'refunded'
        WHEN p.status = 'cancelled' THEN 'cancelled' WHEN p.status = 'authorized' THEN 'authorized'
        WHEN p.refunded > 0 THEN 'partially_refunded' ELSE 'paid' END,
      CASE WHEN o.fate IN ('expired', 'cancel', 'expire', 'cancel_refund') THEN 'cancelled'
        WHEN o.fate = 'open' THEN 'unfulfilled' WHEN o.fate = 'ship_part' THEN 'partially_shipped'
        ELSE 'shipped' END,
      o.first_name, o.last_name, o.email,
      '55' || lpad(floor({R}(o.customer, 74) * 1e8)::bigint::text, 8, '0'), s.street,
      (1 + floor({R}(o.customer, 76) * 480))::int::text, c.colony, t.city, t.state,
      t.cp || lpad(floor({R}(o.customer, 77) * 1000)::int::text, 3, '0'), 'MX', o.total, 'MXN',
      o.lang, o.created_at + make_interval(mins => %(minutes)s), o.created_at,
      greatest(o.created_at, p.last_at, CASE WHEN o.fate IN {SHIPPED_FATES} THEN o.ship_at END,
        CASE WHEN o.fate = 'ship_twice' THEN o.ship2_at END,
        CASE WHEN NOT o.accepted THEN o.created_at + make_interval(mins => %(minutes)s + 1) END)
        + interval '3 seconds'
    FROM vol_o o
    LEFT JOIN vol_p p ON p.order_id = o.id AND p.role = 'accepted'
    JOIN vol_street s ON s.k = floor({R}(o.customer, 78) * (SELECT count(*) FROM vol_street))
    JOIN vol_colony c ON c.k = floor({R}(o.customer, 79) * (SELECT count(*) FROM vol_colony))
    JOIN vol_city t ON t.k = floor({R}(o.customer, 73) * (SELECT count(*) FROM vol_city))""",
    """INSERT INTO checkout_orderitem (order_id, product_id, name, name_en, unit_price,
      quantity, quantity_shipped, quantity_restocked)
    SELECT i.order_id, i.product_id, i.name, i.name_en, i.price, i.quantity,
      CASE WHEN o.fate IN ('ship', 'ship_twice', 'return_refund', 'part_refund') THEN i.quantity
        WHEN o.fate IN ('ship_part', 'part_capture') AND i.k < o.n_items THEN i.quantity
        ELSE 0 END,
      CASE WHEN o.fate IN ('expired', 'cancel', 'expire', 'cancel_refund') THEN i.quantity
        WHEN o.fate = 'part_capture' AND i.k = o.n_items THEN i.quantity ELSE 0 END
    FROM vol_i i JOIN vol_o o ON o.id = i.order_id ORDER BY i.order_id, i.k""",
    # The orders' ledger.
    f"""CREATE TEMP TABLE vol_oe AS
    SELECT %(oebase)s + row_number() OVER (ORDER BY e.at, e.order_id, e.seq) AS id, e.*
    FROM (
      SELECT o.id AS order_id, o.manual, v.*
      FROM vol_o o LEFT JOIN vol_p p ON p.order_id = o.id AND p.role = 'accepted'
      CROSS JOIN LATERAL (VALUES
        (1, CASE WHEN o.fate IN {SHIPPED_FATES} THEN 'shipped' END,
          CASE WHEN o.fate IN ('ship_part', 'ship_twice', 'part_capture') THEN o.items_head
            ELSE o.items_all END
          || CASE WHEN o.manual THEN ' · ' || replace(replace(%(charged_text)s, '{{c}}',
            pg_temp.money(p.captured)), '{{r}}', pg_temp.money(o.total - p.captured)) ELSE ''
            END, o.ship_at, true),
        (2, CASE WHEN o.fate = 'ship_twice' THEN 'shipped' END, o.items_last, o.ship2_at, true),
        (3, CASE WHEN o.fate = 'part_capture' THEN 'restocked' END, o.items_last,
          o.ship_at + interval '1 second', true),
        (4, CASE WHEN o.fate IN ('cancel', 'cancel_refund') THEN 'cancelled' END, '',
          o.cancel_at - interval '1 second', true),
        (5, CASE WHEN o.fate IN ('cancel', 'cancel_refund', 'expire', 'expired')
            THEN 'restocked' END, o.items_all,
          CASE WHEN o.fate = 'expire' THEN o.expire_at + interval '2 seconds'
            WHEN o.fate = 'expired' THEN o.created_at + make_interval(mins => %(minutes)s,
              secs => 6 + 50 * {R}(o.id, 17))
            ELSE o.cancel_at + interval '3 seconds' END, o.fate IN ('cancel', 'cancel_refund')),
        (6, CASE WHEN o.fate = 'expired' THEN 'expired' END, %(expired_text)s,
          o.created_at + make_interval(mins => %(minutes)s, secs => 5 + 50 * {R}(o.id, 17)),
          false),
        (7, CASE WHEN o.fate IN ('return_refund', 'part_refund') THEN 'refunded' END,
          pg_temp.money(p.refunded) || ' ' || (SELECT reason FROM vol_reason r
            WHERE r.k = floor({R}(o.id, 18) * (SELECT count(*) FROM vol_reason))),
          o.refund_at + interval '1 second', true)
      ) v(seq, kind, message, at, by_staff)
      WHERE v.kind IS NOT NULL
    ) e""",
    "ANALYZE vol_oe",
    """INSERT INTO checkout_orderevent (id, order_id, kind, message, actor_id, created_at)
    SELECT id, order_id, kind, message, CASE WHEN by_staff THEN %(actor)s::int END, at
    FROM vol_oe ORDER BY id""",
    """INSERT INTO payments_paymentevent (id, payment_id, kind, old_status, new_status, amount,
      message, error_code, actor_id, created_at)
    SELECT e.id, e.payment_id, e.kind, e.old, e.new, e.amount,
      CASE e.kind WHEN 'refunded' THEN replace(%(refund_text)s, '{id}', pg_temp.vuuid(2, e.id))
        WHEN 'failed' THEN p.code || ': ' || CASE WHEN p.code = 'CL2201'
          THEN 'The card token is unknown or has expired.'
          ELSE 'The payment service is not reachable right now.' END
        WHEN 'unknown' THEN 'The payment service did not answer in time.'
        WHEN 'expiring' THEN replace(replace(replace(%(warning_text)s, '{w}',
          to_char((e.at + interval '3 days') AT TIME ZONE 'America/Mexico_City',
            'YYYY-MM-DD HH24:MI')), '{d}', '2'), '{h}',
          (23 - floor(extract(epoch FROM e.at - o.warn_at) / 3600))::int::text)
        ELSE coalesce(c.code || ' ' || c.message, '') END,
      CASE WHEN e.kind = 'failed' AND p.code = 'CL2201' THEN 'CL2201' ELSE '' END,
      CASE WHEN e.by_staff THEN %(actor)s::int END, e.at
    FROM vol_e e JOIN vol_p p ON p.id = e.payment_id JOIN vol_o o ON o.id = e.order_id
    LEFT JOIN """
    + CODES
    + """ c(code, message) ON c.code = CASE
        WHEN e.new = 'pending' THEN 'PE-3DS01' WHEN e.new = p.status THEN p.code
        WHEN e.new = 'rejected' THEN p.decline WHEN e.new = 'authorized' THEN 'AU-CAP01'
        WHEN e.new = 'approved' THEN 'AP-PAI01' END
    ORDER BY e.id""",
    """INSERT INTO payments_refund (payment_id, provider_id, amount, status, reason, actor_id,
      created_at)
    SELECT e.payment_id, pg_temp.vuuid(2, e.id), e.amount, 'approved',
      (SELECT reason FROM vol_reason r
        WHERE r.k = floor(pg_temp.vr(e.order_id, 18) * (SELECT count(*) FROM vol_reason))),
      %(actor)s::int, e.at - interval '1 second'
    FROM vol_e e WHERE e.kind = 'refunded' ORDER BY e.id""",
    # Notifications: an INSERT when the provider made the payment, an UPDATE for every change
    # of its status; half of them delivered twice; a few hundred a year failed.
    f"""INSERT INTO webhooks_webhookevent (provider_payment_id, event_type, received_at,
      remote_addr, state, attempts, last_error, payment_id, task_id, claimed_at, relayed_at,
      processed_at)
    SELECT p.provider_id, CASE WHEN e.kind = 'created' THEN 'INSERT' ELSE 'UPDATE' END, w.at,
      ('203.0.113.' || (1 + floor({R}(e.id, 61) * 250))::int)::inet,
      CASE WHEN {R}(e.id * 2 + d, 62) < .0001 THEN 'failed' ELSE 'processed' END, 1,
      CASE WHEN {R}(e.id * 2 + d, 62) < .0001
        THEN 'The provider no longer finds payment ' || p.provider_id || '.' ELSE '' END,
      e.payment_id, pg_temp.vuuid(3, e.id * 2 + d), w.at + interval '150 milliseconds', NULL,
      w.at + make_interval(secs => 0.3 + 2 * {R}(e.id * 2 + d, 63))
    FROM vol_e e JOIN vol_p p ON p.id = e.payment_id
    CROSS JOIN LATERAL generate_series(1, 1 + ({R}(e.id, 60) < .5)::int) d
    CROSS JOIN LATERAL (SELECT e.at + make_interval(secs => 1 + 6 * {R}(e.id, 64)
      + (d - 1) * (5 + 55 * {R}(e.id, 65))) AS at) w
    WHERE p.provider_id IS NOT NULL AND e.kind IN ('created', 'synced', 'captured',
      'cancelled', 'refunded') AND (e.kind = 'created' OR e.new <> e.old)
    ORDER BY w.at""",
    f"""INSERT INTO webhooks_webhookevent (provider_payment_id, event_type, received_at,
      remote_addr, state, attempts, last_error, payment_id, task_id, claimed_at, processed_at)
    SELECT pg_temp.vuuid(4, %(obase)s * 4 + g), t.kind, w.at, '203.0.113.7'::inet,
      'unmatched', 1, 'Unmatched: reference ''PED-' || (100000 + %(obase)s + g)
        || ''' matches no order of this shop.', NULL, pg_temp.vuuid(3, -(%(obase)s * 4 + g)),
      w.at + interval '150 milliseconds', w.at + interval '700 milliseconds'
    FROM generate_series(1, %(unmatched)s) g
    CROSS JOIN (VALUES ('INSERT', 0), ('UPDATE', 90)) t(kind, later)
    CROSS JOIN LATERAL (SELECT %(h0)s::timestamptz + (%(h1)s::timestamptz - %(h0)s)
      * {R}(g, 66) + make_interval(secs => t.later) AS at) w
    WHERE w.at < %(hist_end)s""",
    # Mails, each sent within seconds of the event it tells of (keys: mails_due's).
    f"""INSERT INTO checkout_ordermail (order_id, kind, key, amount, released, created_at,
      sent_at, subject, body)
    SELECT m.order_id, m.kind, m.key, m.amount, m.released, m.at + interval '1 second',
      m.at + make_interval(secs => 2 + 18 * {R}(m.order_id, 67)),
      -- The text of what was sent, kept SHOP_MAIL_KEEP_DAYS as retention leaves it.
      CASE WHEN m.at > %(mails_blank_before)s THEN %(shop)s || ': ' || m.kind ELSE '' END,
      CASE WHEN m.at > %(mails_blank_before)s THEN repeat('Hola, gracias por tu compra en '
        || %(shop)s || '. Tu pedido ' || m.order_id || ' va en camino. ', 6) ELSE '' END
    FROM (
      SELECT id AS order_id, 'received' AS kind, 'received' AS key, total AS amount,
        NULL::numeric AS released, created_at AS at FROM vol_o
      UNION ALL SELECT id, CASE WHEN manual THEN 'held' ELSE 'paid' END,
        CASE WHEN manual THEN 'held' ELSE 'paid' END, total, NULL, accept_at
        FROM vol_o WHERE accepted
      UNION ALL SELECT e.order_id, 'charged', 'charged:' || e.id, e.amount, o.total - e.amount,
        e.at FROM vol_e e JOIN vol_o o ON o.id = e.order_id WHERE e.kind = 'captured'
      UNION ALL SELECT oe.order_id, 'shipped', 'shipped:' || oe.id, NULL, NULL, oe.at
        FROM vol_oe oe WHERE oe.kind = 'shipped' AND NOT oe.manual
      UNION ALL SELECT e.order_id, 'refunded', 'refunded:' || e.id, e.amount, NULL, e.at
        FROM vol_e e WHERE e.kind = 'refunded'
      UNION ALL SELECT id, 'cancelled', 'cancelled', NULL, NULL,
        CASE WHEN fate = 'cancel' THEN cancel_at ELSE expire_at END
        FROM vol_o WHERE fate IN ('cancel', 'expire')
      UNION ALL SELECT id, 'expired', 'expired', total, NULL,
        created_at + make_interval(mins => %(minutes)s, secs => 6 + 50 * {R}(id, 17))
        FROM vol_o WHERE fate = 'expired'
    ) m ORDER BY m.at""",
    # What staff did from the admin: each shipment, cancellation and refund, done.
    """INSERT INTO payments_staffaction (kind, target_type_id, target_id, payment_id, reference,
      params, idempotency_key, language, actor_id, state, runs, ok, result, created_at,
      queued_at, started_at, finished_at, shown_at)
    SELECT 'checkout.' || CASE oe.kind WHEN 'shipped' THEN 'ship' WHEN 'cancelled' THEN 'cancel'
        ELSE 'refund' END,
      %(order_type)s, oe.order_id,
      CASE WHEN oe.kind <> 'shipped' OR (oe.manual AND oe.seq = 1) THEN p.id END,
      o.reference,
      CASE oe.kind WHEN 'shipped' THEN jsonb_build_object('quantities', '{}'::jsonb,
          'capture', CASE WHEN oe.manual AND oe.seq = 1 THEN to_char(p.captured,
            'FM9999999990.00') ELSE '0' END, 'claimed', oe.manual AND oe.seq = 1)
        WHEN 'cancelled' THEN jsonb_build_object('how', CASE WHEN oe.manual THEN 'cancel'
          ELSE 'refund' END, 'amount', to_char(o.total, 'FM9999999990.00'), 'claimed', true)
        ELSE jsonb_build_object('amount', to_char(p.refunded, 'FM9999999990.00'),
          'returned', '{}'::jsonb, 'claimed', true) END,
      pg_temp.vhex(8, oe.id), 'es', %(actor)s::int, 'done', 1, true,
      o.reference || CASE oe.kind WHEN 'shipped' THEN ': enviado.'
        WHEN 'cancelled' THEN ': cancelado.' ELSE ': reembolsado ' || pg_temp.money(p.refunded)
        || '.' END,
      oe.at - interval '3 seconds', oe.at - interval '3 seconds', oe.at - interval '2 seconds',
      oe.at, oe.at + interval '4 seconds'
    FROM vol_oe oe JOIN vol_o o ON o.id = oe.order_id
    LEFT JOIN vol_p p ON p.order_id = oe.order_id AND p.role = 'accepted'
    WHERE oe.kind IN ('shipped', 'cancelled', 'refunded') ORDER BY oe.at""",
    """INSERT INTO django_admin_log (action_time, object_id, object_repr, action_flag,
      change_message, content_type_id, user_id)
    SELECT oe.at, oe.order_id::text, o.reference, 2, '[]', %(order_type)s, %(actor)s::int
    FROM vol_oe oe JOIN vol_o o ON o.id = oe.order_id
    WHERE oe.kind IN ('cancelled', 'refunded') AND %(actor)s::int IS NOT NULL ORDER BY oe.at""",
]
