"""Which database errors mean the database cannot be reached (core/db_errors.py): those are
answered 503 with Retry-After; any other database error is the shop's own, answered 500."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from django.db import Error, IntegrityError, InterfaceError, OperationalError

from core.db_errors import database_unavailable


def raised_from(django_error: type[Error], driver_error: Exception) -> Error:
    """Django's error as its backends raise it: from the driver's."""
    try:
        try:
            raise driver_error
        except Exception as driver:
            raise django_error(str(driver)) from driver
    except Error as exc:
        return exc


def sqlite_error(path: str) -> sqlite3.Error:
    """A real error of SQLite's driver, with its error code."""
    try:
        sqlite3.connect(path).execute("SELECT 1")
    except sqlite3.Error as exc:
        return exc
    raise AssertionError("SQLite opened it")


REFUSED = psycopg.OperationalError(
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: Connection refused'
)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(raised_from(OperationalError, REFUSED), id="refused"),
        pytest.param(
            raised_from(OperationalError, psycopg.OperationalError("server closed the connection")),
            id="lost",
        ),
        pytest.param(
            raised_from(OperationalError, psycopg.errors.AdminShutdown("terminating connection")),
            id="shut-down-by-an-administrator",
        ),
        pytest.param(
            raised_from(OperationalError, psycopg.errors.CannotConnectNow("shutting down")),
            id="starting-or-shutting-down",
        ),
        pytest.param(
            raised_from(OperationalError, psycopg.errors.TooManyConnections("too many clients")),
            id="out-of-connection-slots",
        ),
        pytest.param(
            raised_from(OperationalError, psycopg.errors.ConnectionFailure("connection failure")),
            id="connection-exception-class-08",
        ),
        pytest.param(
            raised_from(InterfaceError, psycopg.InterfaceError("the connection is closed")),
            id="closed",
        ),
        pytest.param(
            raised_from(OperationalError, sqlite_error("/nonexistent/folder/shop.sqlite3")),
            id="sqlite-file-cannot-be-opened",
        ),
    ],
)
def test_a_connection_refused_lost_or_not_taken_is_the_database_unavailable(
    error: Error,
) -> None:
    """A connection refused, lost, ended by the server's shutdown, refused while it starts or
    stops or for want of slots, or already closed: the database cannot be reached."""
    assert database_unavailable(error)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(
            raised_from(OperationalError, psycopg.errors.LockNotAvailable("lock timeout")),
            id="lock-timeout",
        ),
        pytest.param(
            raised_from(OperationalError, psycopg.errors.DeadlockDetected("deadlock")),
            id="deadlock",
        ),
        pytest.param(
            raised_from(OperationalError, psycopg.errors.QueryCanceled("statement timeout")),
            id="statement-timeout",
        ),
        pytest.param(
            raised_from(IntegrityError, psycopg.errors.UniqueViolation("duplicate key")),
            id="integrity",
        ),
        pytest.param(OperationalError("no driver error under it"), id="not-from-a-driver"),
        pytest.param(RuntimeError("a bug"), id="not-a-database-error"),
        pytest.param(None, id="no-exception"),
    ],
)
def test_other_errors_are_not_the_database_unavailable(error: BaseException | None) -> None:
    """A lock not taken in time, a deadlock, a cancelled statement, a constraint, or anything
    that is not a database error: the database answered, so it is not an outage."""
    assert not database_unavailable(error)


def test_a_lost_connection_under_another_exception_is_still_found() -> None:
    """A connection error re-raised as another exception (a service wrapping it) is found along
    the exception's causes."""
    try:
        try:
            raise raised_from(OperationalError, REFUSED)
        except Error as lost:
            raise RuntimeError("could not load the cart") from lost
    except RuntimeError as exc:
        assert database_unavailable(exc)
