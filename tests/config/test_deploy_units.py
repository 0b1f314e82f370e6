"""The systemd units shipped for production (docs/deploy/): valid for systemd, running the
commands the operator's guide lists, every process restarted whenever it exits, one worker unit
for each of the shop's queues."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from tests.helpers.paths import ROOT

UNITS = ROOT / "docs" / "deploy"
GUIDE = (ROOT / "docs" / "deployment.md").read_text()
VENV_BIN = "/srv/shop/.venv/bin/"
PROCFILE = ROOT / "Procfile"


def services() -> dict[str, configparser.ConfigParser]:
    parsed = {}
    for path in sorted(UNITS.glob("*.service")):
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.optionxform = str  # type: ignore[assignment,method-assign]  (keys are case-sensitive)
        unit.read_string(path.read_text())
        parsed[path.name] = unit
    return parsed


def test_every_process_of_the_guide_has_a_unit_running_its_command() -> None:
    """Each unit's command, as systemd runs it (%% is a literal %), is one of the commands of
    the guide's Processes table, and each of those commands has its unit."""
    listed = set(re.findall(r"^\| \*\*[^|]+\*\* \| `([^`]+)` \|", GUIDE, flags=re.MULTILINE))
    commands = {
        unit["Service"]["ExecStart"].removeprefix(VENV_BIN).replace("%%H", "%h")
        for unit in services().values()
    }
    assert len(listed) == 5
    assert commands == listed


def test_every_unit_is_restarted_whenever_it_exits_and_never_given_up_on() -> None:
    for name, unit in services().items():
        assert unit["Service"]["Restart"] == "always", name
        assert int(unit["Service"]["RestartSec"]) <= 5, name
        assert unit["Unit"]["StartLimitIntervalSec"] == "0", name
        assert unit["Unit"]["PartOf"] == "shop.target", name
        assert unit["Install"]["WantedBy"] == "shop.target", name


def _pools(commands: list[list[str]]) -> dict[str, str]:
    """The pool each worker command runs its queue's tasks in."""
    pools = {}
    for command in commands:
        if " worker " in f" {' '.join(command)} ":
            pool = next(arg for arg in command if arg.startswith("--pool="))
            for queue in command[command.index("-Q") + 1].split(","):
                pools[queue] = pool.removeprefix("--pool=")
    return pools


# The one queue of the releases before the three (25 November and earlier): taken by the shop
# worker, so that what a previous release queues during an upgrade still runs.
PREVIOUS_RELEASES_QUEUE = "celery"


def test_each_queue_has_its_worker_unit_in_the_procfile_s_pool() -> None:
    """Threads for every queue (the reads, the writes and the shop's tasks wait on the
    provider and the database far longer than they compute): as the demo and the benchmarks
    run them."""
    units = _pools([unit["Service"]["ExecStart"].split() for unit in services().values()])
    procfile = _pools([line.split() for line in PROCFILE.read_text().splitlines()])
    assert set(units) == {*settings.CELERY_TASK_QUEUES, PREVIOUS_RELEASES_QUEUE}
    assert units[PREVIOUS_RELEASES_QUEUE] == units[settings.CELERY_QUEUE_SHOP]
    assert units == procfile
    assert set(units.values()) == {"threads"}


def test_systemd_accepts_the_units(tmp_path: Path) -> None:
    """`systemd-analyze verify` finds nothing to say (paths made local: it checks that the
    commands exist)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    local_bin = f"{Path(sys.executable).parent}/"  # the virtualenv's, with celery and gunicorn
    for path in UNITS.iterdir():
        text = path.read_text().replace(VENV_BIN, local_bin)
        text = text.replace("EnvironmentFile=/", "EnvironmentFile=-/")
        (tmp_path / path.name).write_text(text)
    result = subprocess.run(
        [analyze, "verify", "--man=no", *sorted(str(p) for p in tmp_path.iterdir())],
        capture_output=True,
        text=True,
        check=False,
    )
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    assert not re.search(r"Unknown|nvalid|Failed to parse|not executable", said), said
