"""The provider sandbox as `runsandbox` serves it, plus a count of the requests it answers.

    python -m bench.sandbox_server --port 8101 [runsandbox options]

Every request is counted by method and route (ids folded: `GET /payments/{id}`) before the
sandbox handles it; `GET /_bench/counts` answers the counts as JSON. This is how the storm
benchmark knows how many times the shop read a payment from the provider.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

_ID = re.compile(r"/[0-9a-fA-F-]{16,}|/(?:pay|tok|ref|sub|pm)_[\w-]+")


def route(method: str, path: str) -> str:
    return f"{method} {_ID.sub('/{id}', path)}"


def counting(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == "/_bench/counts":
            with lock:
                body = json.dumps(dict(counts)).encode()
            start_response(
                "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            )
            return [body]
        with lock:
            counts[route(environ.get("REQUEST_METHOD", ""), path)] += 1
        return app(environ, start_response)

    return application


def main(argv: list[str]) -> None:
    # The sandbox stands in for a provider with capacity of its own; sharing two cores and one
    # GIL with its own threads, a read whose database answer has arrived should not wait the
    # default 5 ms for the interpreter behind another request's work.
    sys.setswitchinterval(0.0005)
    os.environ["DJANGO_SETTINGS_MODULE"] = "sandbox.settings"
    import django

    django.setup()
    from django.core.management import call_command

    from sandbox.provider.management.commands import runsandbox

    runsandbox.application = counting(runsandbox.application)  # type: ignore[attr-defined]
    call_command("runsandbox", *argv)


if __name__ == "__main__":
    main(sys.argv[1:])
