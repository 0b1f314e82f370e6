"""Signals of the payments app. `checkout` listens to move orders; payments knows no orders.

`payment_status_changed(sender=Payment, payment, old_status, new_status)` is sent after the
transaction that changed the payment's status (or its captured or refunded amounts, in which
case old_status may equal new_status) commits.

`payment_reference_lookup(sender=Payment, reference)` asks whether an `external_reference` is one
of the shop's own (a receiver answers True): a provider payment for it that the shop never heard
about is then adopted instead of being left unmatched.
"""

from django.dispatch import Signal

payment_status_changed = Signal()
payment_reference_lookup = Signal()
