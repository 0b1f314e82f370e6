"""Which database errors mean "the database cannot be reached": a connection refused, lost or
not taken. Those are answered 503 with `Retry-After` (core/error_pages.py) and logged as one
warning line (config/logging/); any other database error is a bug or a conflict of the shop's
own, answered 500 with its traceback logged."""

from __future__ import annotations

from collections.abc import Iterator

from django.db import InterfaceError, OperationalError

# PostgreSQL's SQLSTATEs of a server that drops or refuses connections, beside class 08
# (connection exception): shut down by an administrator or after a crash, starting up or shutting
# down, out of connection slots.
UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# How far along an exception's causes and contexts to look (a DB error re-raised as another).
_CHAIN_DEPTH = 8


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether `exc`, or an exception it was raised from or while handling, says the database
    cannot be reached: Django's InterfaceError (the connection is closed), or its
    OperationalError from a connection that could not be made or was lost (psycopg: no SQLSTATE,
    a client-side failure, or one of a server that refuses or drops connections; SQLite: the
    file cannot be opened). A lock timeout, a deadlock or a cancelled statement is not one."""
    return any(_unreachable(link) for link in _chain(exc))


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(seen) < _CHAIN_DEPTH:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _unreachable(exc: BaseException) -> bool:
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    driver = exc.__cause__  # Django's errors are raised from the driver's
    if driver is None:
        return False
    if hasattr(driver, "sqlstate"):  # psycopg
        state = driver.sqlstate
        return state is None or state.startswith("08") or state in UNAVAILABLE_STATES
    return getattr(driver, "sqlite_errorname", "") == "SQLITE_CANTOPEN"
