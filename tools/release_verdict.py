"""What `make release-check` (tools/release_check.py) finds wrong once its traffic stops: the
lines at level ERROR or above (or a traceback) in each process's log, and, once the shop has
settled, the orders and payments that did not end where the provider's records say
(tools/verdict.py) and the shoppers who never got the outcome of their payment."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from tools.release_traffic import Traffic

ERROR_LEVELS = {"ERROR", "CRITICAL"}


def error_lines(log: Path) -> list[str]:
    """The lines of a process's log at level ERROR or above, or showing a traceback."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            if str(record.get("level", "")).upper() in ERROR_LEVELS:
                found.append(line)
        elif "Traceback (most recent call last)" in line or re.search(
            r"\b(ERROR|CRITICAL)\b", line
        ):
            found.append(line)
    return found


def settle(traffic: Traffic, sandbox: str, timeout: float = 240) -> list[str]:
    """Wait for the shop to hold what the provider holds; what is still wrong at the end."""
    import django

    django.setup()
    from tools.soak import provider_payments
    from tools.verdict import verdict

    deadline = time.monotonic() + timeout
    while True:
        found = verdict(provider_payments(sandbox))
        if found.clean or time.monotonic() > deadline:
            break
        time.sleep(5)
    wrong = [f"payments unequal: {m}" for m in found.mismatches[:5]]
    wrong += [f"notifications unsettled: {s} {n}" for s, n in found.unsettled_events.items()]
    wrong += [f"attempt unresolved: {a}" for a in found.unresolved[:5]]
    wrong += [f"order charged twice: {d}" for d in found.double_charges[:5]]
    wrong += [f"order in the wrong status: {o}" for o in found.wrong_orders[:5]]
    unfinished = sum(n for outcome, n in traffic.counts.outcomes.items() if "unfinished" in outcome)
    if unfinished:
        wrong.append(f"{unfinished} shopper(s) never got the outcome of their payment")
    return wrong
