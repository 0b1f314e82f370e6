"""Signals of the payments app. `checkout` listens to move orders; payments knows no orders.

`payment_status_changed(sender=Payment, payment, old_status, new_status)` is sent after the
transaction that changed the payment's status (or its captured or refunded amounts, in which
case old_status may equal new_status) commits.
"""

from django.dispatch import Signal

payment_status_changed = Signal()
