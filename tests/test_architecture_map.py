"""docs/architecture.md is true: every file or folder it names exists, every `path.py::name` is
defined in that file, every pinned task name has its row in the map's task table (naming the
function that runs it), and no link leaves the repository. A failure names the line of the map
and what is missing there."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

MAP = ROOT / "docs" / "architecture.md"
TASK_TABLE = "## Every task by its pinned name"

# In backticks: a path with at least one "/" (a folder ends with "/"), and `::name` or
# `::Class.member` after a file.
REFERENCE = re.compile(r"^(?P<path>[\w.-]+(?:/[\w.-]+)*/?)(?:::(?P<name>[A-Za-z_][\w.]*))?$")
BACKTICKED = re.compile(r"`([^`\n]+)`")
MARKDOWN_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
ADDRESS = re.compile(r"(?:https?|ftp|file)://[^\s)>`]*|mailto:[^\s)>`]+|www\.[^\s)>`]+", re.I)
TASK_NAME = re.compile(r"^[a-z_]+(?:\.[a-z_]+)+$")
# The project's own packages: their modules can hold tasks (not the tests, the environment or
# generated files).
NOT_PRODUCT = {"tests", ".venv", "var", "node_modules", ".git"}


@dataclass(frozen=True)
class Mention:
    line: int
    text: str  # what is in the backticks


def map_lines(text: str) -> list[str]:
    return text.splitlines()


def mentions(lines: list[str]) -> Iterator[Mention]:
    """Every backticked text of the map, with its line (1-based); fenced blocks are drawings,
    not references."""
    fenced = False
    for number, line in enumerate(lines, start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            for found in BACKTICKED.finditer(line):
                yield Mention(number, found.group(1).strip())


# --- What a Python file defines ------------------------------------------------------------


@cache
def module_of(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _assigned(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def defined(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """The names a module (or a class body) defines at its top level: functions, classes and
    assigned names, with their nodes."""
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        for name in _assigned(node):
            names[name] = node
    return names


def missing_name(path: Path, dotted: str) -> str | None:
    """What of `dotted` (a name, or Class.member) `path` does not define; None when all is."""
    body = module_of(path).body
    parts = dotted.split(".")
    for depth, part in enumerate(parts):
        names = defined(body)
        if part not in names:
            where = path.relative_to(ROOT).as_posix()
            if depth == 0:
                return f"{where} defines no `{part}`"
            return f"`{'.'.join(parts[:depth])}` in {where} has no `{part}`"
        node = names[part]
        body = node.body if isinstance(node, ast.ClassDef) else []
    return None


# --- The pinned task names, from the code ----------------------------------------------------


def product_files() -> list[Path]:
    files = []
    for package in sorted(ROOT.iterdir()):
        if package.name in NOT_PRODUCT or not (package / "__init__.py").exists():
            continue
        files += [p for p in package.rglob("*.py") if "migrations" not in p.parts]
    return files


def _string_constants(path: Path) -> dict[str, str]:
    """The module's top-level names assigned a string."""
    constants = {}
    for node in module_of(path).body:
        value = getattr(node, "value", None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            constants.update(dict.fromkeys(_assigned(node), value.value))
    return constants


def _module_path(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _resolved(path: Path, argument: ast.expr) -> str | None:
    """The string a decorator's first argument is: a literal, a constant of the module, or a
    constant imported from another of the project's modules."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value
    if not isinstance(argument, ast.Name):
        return None
    own = _string_constants(path)
    if argument.id in own:
        return own[argument.id]
    for node in module_of(path).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == argument.id:
                    source = _module_path(node.module)
                    if source is not None:
                        return _string_constants(source).get(alias.name)
    return None


def _is_shop_task(decorator: ast.Call) -> bool:
    called = decorator.func
    name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", "")
    return name == "shop_task" and bool(decorator.args)


def task_functions(path: Path) -> dict[str, str]:
    """The functions of a module declared with `shop_task`: function name -> pinned name."""
    tasks = {}
    for node in module_of(path).body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and _is_shop_task(decorator):
                    name = _resolved(path, decorator.args[0])
                    if name is not None:
                        tasks[node.name] = name
    return tasks


def pinned_in_code() -> dict[str, str]:
    """Every pinned task name, with where it is pinned: the constants of each app's
    `task_names.py`, and the names each `shop_task` declares."""
    pinned: dict[str, str] = {}
    for path in product_files():
        where = path.relative_to(ROOT).as_posix()
        if path.name == "task_names.py":
            for constant, value in _string_constants(path).items():
                if TASK_NAME.match(value):
                    pinned.setdefault(value, f"{where}::{constant}")
        for function, name in task_functions(path).items():
            pinned.setdefault(name, f"{where}::{function}")
    return pinned


def registered_in_celery() -> set[str]:
    from config.celery import app

    app.loader.import_default_modules()
    return {name for name in app.tasks if not name.startswith("celery.")}


# --- The map's checks ----------------------------------------------------------------------


def reference_problems(lines: list[str]) -> list[str]:
    """Each path the map names that does not exist, and each `path.py::name` not defined."""
    problems = []
    for mention in mentions(lines):
        found = REFERENCE.match(mention.text)
        if found is None or "/" not in found.group("path"):
            continue  # not a path: a setting, a name, a command, a URL ...
        path, name = found.group("path"), found.group("name")
        where = f"docs/architecture.md:{mention.line}: `{mention.text}`"
        target = ROOT / path
        if not target.exists():
            problems.append(f"{where}: no such {'folder' if path.endswith('/') else 'file'}")
        elif name is not None and target.suffix != ".py":
            problems.append(f"{where}: `::{name}` names a definition, and {path} is no .py")
        elif name is not None and (absent := missing_name(target, name)):
            problems.append(f"{where}: {absent}")
    return problems


def link_problems(lines: list[str]) -> list[str]:
    """Links that leave the repository: addresses, and relative links outside it (or to
    nothing)."""
    problems = []
    for number, line in enumerate(lines, start=1):
        where = f"docs/architecture.md:{number}"
        for address in ADDRESS.findall(line):
            problems.append(f"{where}: `{address}` is an address outside the repository")
        for target in MARKDOWN_LINK.findall(line):
            if ADDRESS.match(target) or target.startswith("#"):
                continue  # said above, or a heading of this page
            resolved = (MAP.parent / target.split("#", 1)[0]).resolve()
            if not resolved.is_relative_to(ROOT):
                problems.append(f"{where}: the link `{target}` leaves the repository")
            elif not resolved.exists():
                problems.append(f"{where}: the link `{target}` leads to nothing")
    return problems


@dataclass(frozen=True)
class TaskRow:
    line: int
    name: str
    runner: str  # path.py::function


def task_rows(lines: list[str]) -> list[TaskRow]:
    """The rows of the map's task table: its pinned name (the first column's backticks) and the
    function that runs it (the second column's first `path.py::function`)."""
    start = lines.index(TASK_TABLE)
    rows = []
    for number, line in enumerate(lines[start + 1 :], start=start + 2):
        if line.startswith("## "):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2:
            continue
        name, runner = BACKTICKED.search(cells[0]), BACKTICKED.search(cells[1])
        if name is None or runner is None:
            continue  # the header and its rule
        rows.append(TaskRow(number, name.group(1), runner.group(1)))
    return rows


def task_table_problems(lines: list[str], pinned: set[str]) -> list[str]:
    """Pinned names with no row, rows for names nothing pins, and rows whose function is not
    the one `shop_task` declares with that name."""
    if TASK_TABLE not in lines:
        return [f"docs/architecture.md: no section `{TASK_TABLE}`"]
    rows = task_rows(lines)
    listed = {row.name for row in rows}
    problems = [
        f"docs/architecture.md: the task table has no row for the pinned name `{name}`"
        for name in sorted(pinned - listed)
    ]
    for row in rows:
        where = f"docs/architecture.md:{row.line}: `{row.name}`"
        if row.name not in pinned:
            problems.append(f"{where}: no task is pinned by this name")
            continue
        found = REFERENCE.match(row.runner)
        if found is None or found.group("name") is None or not found.group("path").endswith(".py"):
            problems.append(f"{where}: `{row.runner}` is not a `path.py::function`")
            continue
        path = ROOT / found.group("path")
        function = found.group("name")
        if not path.exists():
            continue  # said by reference_problems
        declared = task_functions(path).get(function)
        if declared != row.name:
            runs = f"declares `{declared}`" if declared else "is no shop_task there"
            problems.append(f"{where}: `{row.runner}` {runs}")
    return problems


# --- The tests -----------------------------------------------------------------------------


def test_every_file_and_definition_the_map_names_exists() -> None:
    """A path named in backticks exists; `path.py::name` (or `::Class.member`) is defined in that
    file."""
    problems = reference_problems(map_lines(MAP.read_text(encoding="utf-8")))
    assert not problems, "\n".join(problems)


def test_the_task_table_names_every_pinned_task_and_the_function_that_runs_it() -> None:
    """Every name in an app's `task_names.py`, every name a `shop_task` declares and every task
    the Celery app registers has its row, naming the function declared with that name."""
    pinned = set(pinned_in_code()) | registered_in_celery()
    problems = task_table_problems(map_lines(MAP.read_text(encoding="utf-8")), pinned)
    assert not problems, "\n".join(problems)


def test_no_link_leaves_the_repository() -> None:
    problems = link_problems(map_lines(MAP.read_text(encoding="utf-8")))
    assert not problems, "\n".join(problems)


# --- The checks catch what they name (each on a copy of the map with one thing broken) ------


def _broken(old: str, new: str) -> list[str]:
    text = MAP.read_text(encoding="utf-8")
    assert old in text, f"the map no longer says {old!r}: choose another line to break"
    return map_lines(text.replace(old, new, 1))


def _line_of(lines: list[str], text: str) -> int:
    return next(number for number, line in enumerate(lines, start=1) if text in line)


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (
            "`payments/records.py::notify_status_changed_on_commit`",
            "`payments/snapshots.py::notify_status_changed_on_commit`",
            "payments/snapshots.py defines no `notify_status_changed_on_commit`",
        ),
        (
            "`checkout/mails/rules.py::queue_order_mails`",
            "`checkout/mail/rules.py::queue_order_mails`",
            "no such file",
        ),
        (
            "`staff_actions/admin.py::StaffActionsAdmin.action_view`",
            "`staff_actions/admin.py::StaffActionsAdmin.action_page`",
            "`StaffActionsAdmin` in staff_actions/admin.py has no `action_page`",
        ),
        ("`tests/e2e/`", "`tests/browser/`", "no such folder"),
    ],
)
def test_a_wrong_path_or_name_is_named_with_its_line(old: str, new: str, said: str) -> None:
    lines = _broken(old, new)
    problems = reference_problems(lines)
    line = _line_of(lines, new)
    assert any(
        p.startswith(f"docs/architecture.md:{line}: {new}") and said in p for p in problems
    ), problems


def test_a_pinned_task_missing_from_the_table_is_named() -> None:
    pinned = set(pinned_in_code())
    row = next(
        line
        for line in map_lines(MAP.read_text(encoding="utf-8"))
        if line.startswith("| `checkout.tasks.order_sync_task` |")
    )
    problems = task_table_problems(_broken(row + "\n", ""), pinned)
    assert problems == [
        "docs/architecture.md: the task table has no row for the pinned name "
        "`checkout.tasks.order_sync_task`"
    ]


def test_a_row_naming_the_wrong_function_is_named() -> None:
    """The task queued as `checkout.tasks.order_mail_send_task` is run by
    `order_mail_deliver_task`: a row that names a function by the task's name is wrong."""
    lines = _broken(
        "| `checkout.tasks.order_mail_send_task` | `checkout/tasks.py::order_mail_deliver_task`",
        "| `checkout.tasks.order_mail_send_task` | `checkout/tasks.py::order_mails_sweep_task`",
    )
    problems = task_table_problems(lines, set(pinned_in_code()))
    line = _line_of(lines, "`checkout/tasks.py::order_mails_sweep_task` (the name")
    assert problems == [
        f"docs/architecture.md:{line}: `checkout.tasks.order_mail_send_task`: "
        "`checkout/tasks.py::order_mails_sweep_task` declares "
        "`checkout.tasks.order_mails_sweep_task`"
    ]


@pytest.mark.parametrize(
    ("link", "said"),
    [
        ("[the design](../../shared/DESIGN.md)", "leaves the repository"),
        ("[the design](https://example.com/DESIGN.md)", "an address outside the repository"),
        ("[deployment](deployment.md)", None),
        ("[nothing](nowhere.md)", "leads to nothing"),
    ],
)
def test_a_link_out_of_the_repository_is_named(link: str, said: str | None) -> None:
    lines = _broken("## The layers\n", f"## The layers\n\nSee {link}.\n")
    problems = link_problems(lines)
    if said is None:
        assert problems == []
    else:
        line = _line_of(lines, link)
        assert len(problems) == 1 and problems[0].startswith(f"docs/architecture.md:{line}:")
        assert said in problems[0]
