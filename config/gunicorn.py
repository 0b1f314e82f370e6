"""Gunicorn's configuration for the shop: `gunicorn -c config/gunicorn.py config.wsgi`.

Everything comes from the environment (docs/settings.md, "Gunicorn"): where to listen, how
many workers, timeouts, and whether to write an access log. The access log is off by default;
when it is on, its lines never carry a query string, and the webhook path's secret token is
replaced.
"""

from __future__ import annotations

import gc
import os
import traceback
from typing import Any

from gunicorn.glogging import Logger

from config.logging import redact_webhook_path
from config.settings.env import env_int, env_str

# The production settings unless told otherwise (before Django or the app is imported).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this container may use, not the host's
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_port = env_str(
    "PORT",
    "8000",
    doc="The port gunicorn listens on, on every address, when `GUNICORN_BIND` is unset.",
)
bind = [
    address.strip()
    for address in env_str(
        "GUNICORN_BIND",
        f"0.0.0.0:{_port}",
        doc="The addresses gunicorn listens on, comma-separated.",
        shown_default="`0.0.0.0:{PORT}`",
    ).split(",")
    if address.strip()
]
# Threaded workers (gthread): a request waiting on the provider, a slow client or an idle
# keep-alive connection holds one thread, not a whole process (a sync worker would stay blocked
# on a connection that sends nothing until `timeout`); a process per CPU (two at least) keeps the
# cores busy past the GIL (bench/: more processes only add latency).
workers = env_int(
    "GUNICORN_WORKERS",
    max(2, _cores()),
    doc="Gunicorn's worker processes.",
    shown_default="the CPUs this process may use, 2 at least",
)
threads = env_int(
    "GUNICORN_THREADS",
    4,
    doc="Threads a worker (the gthread worker: a request waiting on the provider, a slow client "
    "or an idle keep-alive connection holds a thread, not a process); 1 for sync workers, only "
    "behind a buffering proxy.",
)
# The threaded worker notes how long each request waited for a thread (the sale day's queue
# counts it in what a page took); one thread is the sync worker.
worker_class = "config.gunicorn_worker.QueueTimedWorker" if threads > 1 else "sync"
# A worker busy with one request for longer than this is killed and replaced. A payment request
# may wait on the provider for up to four attempts of PAYMENTS_READ_TIMEOUT (15 s) plus backoff;
# killing it half way would leave the attempt unconfirmed, so the default is above that.
timeout = env_int(
    "GUNICORN_TIMEOUT",
    90,
    doc="Seconds: a request running longer is killed. Keep it above a payment's worst case (four "
    "provider attempts of `PAYMENTS_READ_TIMEOUT` plus backoff), and the proxy's read timeout "
    "above it.",
)
# On a restart or scale-down, requests in flight get this long to finish.
graceful_timeout = env_int(
    "GUNICORN_GRACEFUL_TIMEOUT",
    timeout,
    doc="On SIGTERM, how long requests in flight may finish (seconds; the orchestrator's grace "
    "period must be longer).",
    shown_default="`GUNICORN_TIMEOUT`",
)
keepalive = env_int(
    "GUNICORN_KEEPALIVE",
    5,
    doc="Seconds an idle keep-alive connection is kept (gthread); above the load balancer's idle "
    "timeout.",
)
# Workers are replaced after this many requests (jittered, so not all at once); 0, the default:
# never. A replaced gthread worker finishes its keep-alive connections first, so replacing them
# often costs throughput (every 1,000 requests halved it, bench/): set it only against a leak.
max_requests = env_int(
    "GUNICORN_MAX_REQUESTS",
    0,
    doc="A worker is replaced after that many requests (0: never). Only against a memory leak: "
    "a replaced worker first finishes its keep-alive connections, so frequent replacing costs "
    "throughput.",
)
max_requests_jitter = env_int(
    "GUNICORN_MAX_REQUESTS_JITTER",
    0,
    doc="Up to this many requests more or less before a worker is replaced, so that they are not "
    "all replaced at once.",
)
# Django is loaded once, in the master, before the workers are forked: a replaced worker starts
# at once instead of importing the project again, and the workers share its memory. (Nothing
# opens a connection at import time; connections are made in each worker on first use.)
preload_app = True
# The workers' heartbeat files; in a container, a memory file system (/dev/shm) is better.
worker_tmp_dir = (
    env_str(
        "GUNICORN_WORKER_TMP_DIR",
        doc="Where the workers' heartbeat files go; `/dev/shm` in containers.",
        shown_default="the system's temporary directory",
    )
    or None
)
# gunicornc's control socket only where asked for (a path): several servers on one machine would
# otherwise share the default one.
_control_socket = env_str(
    "GUNICORN_CONTROL_SOCKET",
    doc="A path turns on gunicorn's control socket (`gunicornc`) there; unset, it is off.",
)
control_socket_disable = not _control_socket
if _control_socket:
    control_socket = _control_socket
loglevel = env_str("GUNICORN_LOG_LEVEL", "info", doc="Gunicorn's own log level.")
errorlog = "-"
# Off unless GUNICORN_ACCESS_LOG is a file or "-" (stdout): the proxy in front logs requests.
accesslog = (
    env_str(
        "GUNICORN_ACCESS_LOG",
        doc="`-` (standard output) or a file turns the access log on: one line a request with "
        "the address, method, path, protocol, status, bytes, milliseconds and request id (no "
        "query strings, no referrer, the webhook token replaced by `[redacted]`), written "
        "straight from the request: about 70 µs of CPU a line. Unset, off (the proxy in front "
        "logs requests).",
    )
    or None
)


class RedactingLogger(Logger):
    """Gunicorn's logger, whose access lines are written straight from the request: the
    client's address, the method, the path (the webhook path's token redacted), the protocol,
    the status, the bytes sent, the milliseconds taken and the request's id (JSON lines carry
    it in `request_id`). Never a query string or a referrer. Gunicorn's own formatting builds
    every atom it knows (every header, every variable) for each line: the shop's writes the
    eight it shows, so that an access log costs a merchant who turns it on little CPU."""

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not self.cfg.accesslog:
            return  # gunicorn would log access lines whenever a logging dict is configured
        from django_guid.context import guid

        request_id = next(
            (value for name, value in resp.headers if name.lower() == "x-request-id"), None
        )
        path = redact_webhook_path(str(environ.get("PATH_INFO") or ""))
        milliseconds = request_time.seconds * 1000 + request_time.microseconds // 1000
        line = (
            f'{environ.get("REMOTE_ADDR") or "-"} "{environ.get("REQUEST_METHOD")} {path} '
            f'{environ.get("SERVER_PROTOCOL")}" {str(resp.status).split(None, 1)[0]} '
            f"{getattr(resp, 'sent', None) or '-'} {milliseconds}ms request_id={request_id or '-'}"
        )
        token = guid.set(request_id)
        try:
            self.access_log.info(line)
        except Exception:  # as gunicorn's own: a line that cannot be written never fails a request
            self.error(traceback.format_exc())
        finally:
            guid.reset(token)


logger_class = RedactingLogger

# LOG_FORMAT=json (the production default): gunicorn's own lines are JSON objects too, through
# the same redaction as the application's.
if env_str("LOG_FORMAT", "json") == "json":
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "config.logging.console_formatter", "log_format": "json"}},
        "filters": {
            "request_id": {"()": "core.request_id.RequestIdFilter"},
            "redact": {"()": "config.logging.RedactSecrets"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["request_id", "redact"],
                "stream": "ext://sys.stderr",
            },
        },
        "root": {"level": "INFO", "handlers": ["console"]},
        "loggers": {
            "gunicorn.error": {
                "level": loglevel.upper(),
                "handlers": ["console"],
                "propagate": False,
            },
            "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
        },
    }


def pre_fork(server: Any, worker: Any) -> None:
    """What the preloaded project allocated is moved out of the collector's reach before each
    fork: the workers' collections never walk it (less CPU), and never touch its pages (they
    stay shared with the master instead of being copied into each worker)."""
    gc.freeze()


# Metrics (docs/monitoring/README.md): with PROMETHEUS_MULTIPROC_DIR set, every worker writes
# its counters there and /metrics sums them.
def child_exit(server: Any, worker: Any) -> None:
    """A worker gone: its live gauges leave the sums (its counters stay counted)."""
    if env_str("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
