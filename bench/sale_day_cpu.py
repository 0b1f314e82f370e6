"""Where the CPU goes during a sale day's window: the seconds each group of processes spent,
read from /proc/<pid>/stat (utime + stime) every half second, process by process, so that a
process that ends (a database connection closed after CONN_MAX_AGE) keeps what it spent.

The services run in process groups of their own (`runtime.process` starts each in a new
session: its group id is its pid), so a group is every process whose group id is one of this
process's children: gunicorn's master and workers, each Celery worker and its pool, beat, the
sandbox. PostgreSQL and Redis serve other users of the machine too: every `postgres` and
`redis-server` process counts (`pg_ours`: the backends of this run's databases, the rest
`pg_others`). `load` is this process (the shoppers' threads); `other`, what the machine spent
besides (/proc/stat), whoever spent it.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK")
SERVICES = ("web", "writes", "reads", "worker", "beat", "sandbox")
GROUPS = (*SERVICES, "pg_ours", "pg_others", "redis", "load", "other")
# The shop's own: its processes, its database's and Redis (not the sandbox, the load, the rest).
SHOP = ("web", "writes", "reads", "worker", "beat", "pg_ours", "redis")
CELERY_NODES = {"writes": "writes", "reads": "reads", "shop": "worker"}  # -n NODE@%h
EVERY = 0.5  # seconds between two readings

Key = tuple[int, int]  # a process: its pid and when it started (a pid may be used again)
Reading = dict[Key, tuple[str, int]]  # its group and its ticks of CPU so far


@dataclass(frozen=True)
class Stat:
    """A process as /proc/<pid>/stat tells it; `ticks`: its user and system CPU so far."""

    pid: int
    comm: str
    ppid: int
    pgrp: int
    ticks: int
    started: int


def parse_stat(pid: int, text: str) -> Stat:
    """/proc/<pid>/stat's line (the command name in parentheses may hold spaces and ')')."""
    head, _, rest = text.rpartition(")")
    fields = rest.split()  # fields[0] is the state, the line's third field
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return Stat(pid, head.partition("(")[2], int(fields[1]), int(fields[2]), ticks, int(fields[19]))


def processes(proc: Path = PROC) -> list[Stat]:
    """Every process of the machine (those that ended while read are left out)."""
    found = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                found.append(parse_stat(int(entry.name), (entry / "stat").read_text()))
            except (OSError, ValueError, IndexError):
                continue
    return found


def command_line(pid: int, proc: Path = PROC) -> str:
    try:
        return (
            (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def role_of(command: str) -> str | None:
    """The group a service's command line belongs to (None: not a service of the bench)."""
    if "gunicorn" in command:
        return "web"
    if "runsandbox" in command:
        return "sandbox"
    if "celery" not in command:
        return None
    if re.search(r"\bbeat\b", command):
        return "beat"
    node = re.search(r"-n\s+(\w+)@", command)
    return CELERY_NODES.get(node[1]) if node else None


def leaders(parent: int, proc: Path = PROC) -> dict[int, str]:
    """The process groups led by `parent`'s children that are services, by group id."""
    found = {}
    for stat in processes(proc):
        if stat.ppid == parent and stat.pgrp == stat.pid:
            if role := role_of(command_line(stat.pid, proc)):
                found[stat.pid] = role
    return found


class Meter:
    """The CPU of the groups between `begin()` and `end()`, read every `EVERY` seconds."""

    def __init__(
        self, groups: dict[int, str], me: int, databases: tuple[str, ...], proc: Path = PROC
    ) -> None:
        self.groups, self.me, self.databases, self.proc = groups, me, databases, proc
        self.postgres: dict[Key, str] = {}  # a backend's database does not change
        self.first: Reading = {}
        self.last: Reading = {}
        self.machine = 0.0
        self.peaks = {"pg_ours": 0, "pg_others": 0}  # the most PostgreSQL processes at once
        self.stop, self.thread = threading.Event(), threading.Thread(target=self._run, daemon=True)

    def group_of(self, stat: Stat) -> str | None:
        if stat.pgrp in self.groups:
            return self.groups[stat.pgrp]
        if stat.comm == "redis-server":
            return "redis"
        if stat.comm == "postgres":
            key = (stat.pid, stat.started)
            if key not in self.postgres:
                words = command_line(stat.pid, self.proc).split()
                ours = any(name in words for name in self.databases)
                self.postgres[key] = "pg_ours" if ours else "pg_others"
            return self.postgres[key]
        return "load" if stat.pid == self.me else None

    def read(self) -> Reading:
        """Every process of a group, with its ticks so far."""
        found = {}
        for stat in processes(self.proc):
            if group := self.group_of(stat):
                found[(stat.pid, stat.started)] = (group, stat.ticks)
        for name in self.peaks:
            count = sum(1 for group, _ in found.values() if group == name)
            self.peaks[name] = max(self.peaks[name], count)
        return found

    def begin(self) -> None:
        self.first, self.machine = self.read(), machine_busy(self.proc)
        self.last = dict(self.first)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(EVERY):
            self.last.update(self.read())

    def end(self) -> dict[str, float]:
        """Seconds each group spent since `begin()`, `machine` and `other` too."""
        self.stop.set()
        self.thread.join()
        self.last.update(self.read())
        return with_machine(spent(self.first, self.last), machine_busy(self.proc) - self.machine)


def spent(first: Reading, last: Reading) -> dict[str, float]:
    """Seconds each group spent from `first` to `last` (a process born in between: all of
    its CPU; one that ended: what it had spent when last read)."""
    seconds = dict.fromkeys(GROUPS, 0.0)
    for key, (group, ticks) in last.items():
        seconds[group] += max(0, ticks - first.get(key, (group, 0))[1]) / TICKS
    return seconds


def with_machine(seconds: dict[str, float], machine: float) -> dict[str, float]:
    """The groups' seconds, the machine's (`machine`), and what it spent besides (`other`)."""
    counted = sum(value for name, value in seconds.items() if name != "other")
    return {**seconds, "machine": machine, "other": max(0.0, machine - counted)}


def machine_busy(proc: Path = PROC) -> float:
    """Seconds every CPU of the machine spent busy (not idle, not waiting on a disk)."""
    fields = [int(n) for n in (proc / "stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    guests = sum(fields[8:10])  # counted in user and nice already
    return (sum(fields) - idle - guests) / TICKS


def per_order(seconds: dict[str, float], paid: int) -> dict[str, float]:
    """Milliseconds of CPU per paid order, by group, `postgres` (ours and others'), the `shop`'s
    (`SHOP`) and the `total` (0 without orders)."""
    each = {name: seconds.get(name, 0.0) * 1000 / paid if paid else 0.0 for name in GROUPS}
    each["postgres"] = each["pg_ours"] + each["pg_others"]
    each["total"] = sum(each[name] for name in GROUPS)
    each["shop"] = sum(each[name] for name in SHOP)
    return each
