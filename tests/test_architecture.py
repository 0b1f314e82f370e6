"""The apps' import rules (pyproject.toml [tool.importlinter]) hold, and are enforced."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

PACKAGES = (
    "config",
    "dashboard",
    "monitoring",
    "books",
    "checkout",
    "webhooks",
    "payments",
    "staff_actions",
    "staff_signin",
    "core",
    "sandbox",
)


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_import_rules_between_the_apps_hold() -> None:
    """The layers look only down (config; dashboard, monitoring and books; checkout and
    webhooks; payments; staff actions and staff sign-in, apart; the shared core); nothing
    imports books, which reads only checkout, payments and the core; no app imports config;
    checkout uses payments' features (never its client or types, never webhooks); no rules
    module, admin or view reaches the provider's client; the sandbox and the shop import
    nothing of each other; checkout's and webhooks' features queue their tasks by name."""
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "9 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (
            "checkout/orders/rules.py",
            "from payments.provider.client import get_client",
            "checkout is not allowed to import payments.provider.client",
        ),
        (
            "checkout/mails/rules.py",
            "from checkout import tasks",
            "checkout.mails is not allowed to import checkout.tasks",
        ),
        (
            "webhooks/rules.py",
            "from webhooks import tasks",
            "webhooks.rules is not allowed to import webhooks.tasks",
        ),
        (
            "payments/actions/rules.py",
            "from payments.actions import calls",
            "payments.actions.rules is not allowed to import payments.provider.client",
        ),
        (
            "core/money.py",
            "from payments import models",
            "core is not allowed to import payments",
        ),
        (
            "payments/models.py",
            "from config import settings",
            "payments is not allowed to import config",
        ),
        (
            "staff_signin/site.py",
            "from dashboard import figures",
            "staff_signin is not allowed to import dashboard",
        ),
        (
            "checkout/views.py",
            "from books import rules",
            "checkout is not allowed to import books",
        ),
        (
            "dashboard/figures.py",
            "from books import selectors",
            "dashboard is not allowed to import books",
        ),
        (
            "books/rules.py",
            "from staff_actions import rules",
            "books is not allowed to import staff_actions",
        ),
    ],
)
def test_a_forbidden_import_breaks_the_rules(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    """A copy of the project where checkout imports the provider's client, or where one of its
    features imports its tasks, breaks a contract."""
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a") as source:
        source.write(f"\n{line}  # noqa\n")

    result = lint_imports(tmp_path)

    assert result.returncode == 1, result.stdout
    assert broken in result.stdout
