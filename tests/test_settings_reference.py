"""docs/settings.md says what the code reads: it is the reference the code generates
(`python -m tools.settings_reference`), every environment variable the settings and gunicorn read
is in it, and the variables it says production must set are those the production settings
refuse to start without."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from config.settings.env import Production
from tests.helpers.paths import ROOT
from tests.helpers.settings import PRODUCTION_ENV, production_env, settings_under
from tools.settings_reference import (
    OVERLAYS,
    REFERENCE,
    ReferenceRefused,
    reference,
    variables,
)


def documented() -> set[str]:
    """The variables docs/settings.md has a row for."""
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", REFERENCE.read_text(), re.MULTILINE))


def test_the_reference_is_what_the_code_says() -> None:
    """Given the settings' source, when the reference is generated, then it is docs/settings.md
    as committed, word for word."""
    assert REFERENCE.read_text() == reference(), (
        "docs/settings.md is out of date: run `python -m tools.settings_reference`"
    )


def _check(file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.settings_reference", "--check", "--file", str(file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_check_command_fails_on_a_stale_reference(tmp_path: Path) -> None:
    """Given a copy of the reference with one default changed, when `--check` runs on it, then it
    exits 1 naming the command that rewrites it; on the committed reference it exits 0."""
    stale = tmp_path / "settings.md"
    stale.write_text(
        REFERENCE.read_text().replace(
            "| `SHOP_RESERVATION_MINUTES` | `30`", "| `SHOP_RESERVATION_MINUTES` | `45`"
        )
    )
    assert stale.read_text() != REFERENCE.read_text()

    refused = _check(stale)

    assert refused.returncode == 1
    assert "python -m tools.settings_reference" in refused.stderr
    assert _check(REFERENCE).returncode == 0


# Imports a settings module and runs config/gunicorn.py with os.environ replaced by a mapping
# that notes each variable code under config/ asks for itself (not what a library it imports
# reads), then prints them.
RECORDING = r"""
import importlib, json, os, runpy, sys
from pathlib import Path

CONFIG = str(Path("config").resolve()) + os.sep
read = set()


class Recorded(dict):
    def _note(self, key):
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename == os.__file__:  # os.getenv
            frame = frame.f_back
        if frame is not None and frame.f_code.co_filename.startswith(CONFIG):
            read.add(key)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)


os.environ = Recorded(os.environ)
importlib.import_module(dict(os.environ)["DJANGO_SETTINGS_MODULE"])
runpy.run_path("config/gunicorn.py")
print(json.dumps(sorted(read)))
"""


def variables_read(env: dict[str, str]) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", RECORDING],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def test_every_variable_the_settings_read_is_in_the_reference(tmp_path: Path) -> None:
    """Given the demo, the tests' and the production settings (Redis or not, mail over SMTP),
    and gunicorn's configuration, when they load, then every environment variable they read
    has its row in docs/settings.md."""
    demo = production_env(tmp_path, **{name: None for name in PRODUCTION_ENV})
    environments = {
        "demo": {**demo, "DJANGO_SETTINGS_MODULE": "config.settings.local"},
        "demo on Redis": {
            **demo,
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
        },
        "tests": {**demo, "DJANGO_SETTINGS_MODULE": "config.settings.test"},
        "production": production_env(tmp_path, EMAIL_HOST="smtp.tienda.example"),
    }

    missing = {
        name: sorted(variables_read(env) - documented()) for name, env in environments.items()
    }

    assert missing == {name: [] for name in environments}
    assert {"DATABASE_URL", "REDIS_URL", "EMAIL_HOST_PASSWORD", "GUNICORN_WORKERS"} <= set(
        variables_read(environments["production"])
    )


def test_the_reference_is_complete_and_lists_the_few_a_deploy_must_set_first() -> None:
    """The reference has a row for every variable the code reads, the must-set ones first."""
    _, found = variables()
    text = REFERENCE.read_text()
    must = [v.name for v in found if v.production is Production.MUST_SET]

    assert {v.name for v in found} == documented()
    assert 0 < len(must) <= 12
    must_section = text[text.index("## Must set") : text.index("## Should set")]
    assert set(re.findall(r"^\| `([A-Z0-9_]+)` \|", must_section, re.MULTILINE)) == set(must)
    assert text.index("## Must set") < text.index("## Every variable")


def test_production_refuses_to_start_without_each_variable_it_must_have(
    tmp_path: Path,
) -> None:
    """Given the production environment reduced to the variables the reference says production
    must set, then the production settings start; without any one of them, they refuse,
    naming it (the processes' DJANGO_SETTINGS_MODULE aside: it is what chooses them)."""
    _, found = variables()
    must = {v.name for v in found if v.production is Production.MUST_SET}
    checked = must - {"DJANGO_SETTINGS_MODULE"}
    assert checked <= set(PRODUCTION_ENV), (
        f"{checked - set(PRODUCTION_ENV)}: said to be a must, missing from PRODUCTION_ENV"
    )
    only_must = {name: None for name in PRODUCTION_ENV if name not in must}
    envs = {"only those": production_env(tmp_path, **only_must)}
    envs.update({name: production_env(tmp_path, **only_must, **{name: None}) for name in checked})

    started = settings_under(envs)

    assert started["only those"]["error"] is None
    for name in checked:
        assert name in (started[name]["error"] or ""), (name, started[name])


def fake_settings(root: Path, topic: str) -> Path:
    """A project whose only settings file read by base.py is `topic`, for the tool to read."""
    (root / "config/settings").mkdir(parents=True)
    (root / "config/settings/base.py").write_text("from config.settings.topic import *\n")
    (root / "config/settings/topic.py").write_text(f'"""A topic (TOPIC_*)."""\n\n{topic}\n')
    for path, *_ in OVERLAYS:
        (root / path).write_text('"""Nothing read here."""\n')
    return root


def test_a_described_read_makes_its_row(tmp_path: Path) -> None:
    """A read that says what its variable does gives the variable its row, default included."""
    root = fake_settings(
        tmp_path, 'TOPIC_KNOB = env_int("TOPIC_KNOB", 3, doc="How far the knob turns.")'
    )

    _, found = variables(root)

    [knob] = [v for v in found if v.name == "TOPIC_KNOB"]
    assert (knob.default, knob.doc, knob.production) == ("`3`", "How far the knob turns.", None)


@pytest.mark.parametrize(
    ("topic", "said"),
    [
        ('TOPIC_KNOB = env_int("TOPIC_KNOB", 3)', "TOPIC_KNOB is read with no doc="),
        (
            'A = env_int("TOPIC_KNOB", 3, doc="One.")\nB = env_int("TOPIC_KNOB", 3, doc="Two.")',
            "TOPIC_KNOB is described twice",
        ),
        ('KNOB = env_int(f"{PREFIX}_KNOB", 3, doc="A knob.")', "must be spelled out"),
        ('import os\nTOPIC_KNOB = os.environ.get("TOPIC_KNOB")', "through config.settings.env"),
        ('import os\nTOPIC_KNOB = os.getenv("TOPIC_KNOB")', "through config.settings.env"),
        (
            'TOPIC_DIR = env_str("TOPIC_DIR", str(BASE / "x"), doc="A folder.")',
            "say it with shown_default=",
        ),
        (
            'TOPIC_KNOB = env_int("TOPIC_KNOB", 3, production=Production.MUST_SET)',
            "go with its doc=",
        ),
    ],
)
def test_a_read_that_does_not_say_what_it_reads_is_refused(
    tmp_path: Path, topic: str, said: str
) -> None:
    """Given a settings file that reads a variable without describing it (or twice), by a
    computed name, past the readers, or with a default the reference cannot show, when the
    reference is generated, then it is refused, saying why and where."""
    root = fake_settings(tmp_path, topic)

    with pytest.raises(ReferenceRefused) as refused:
        variables(root)

    assert said in str(refused.value)
    assert "config/settings/topic.py" in str(refused.value)
