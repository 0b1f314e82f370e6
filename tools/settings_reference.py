"""docs/settings.md, the settings reference, generated from the settings' source.

`python -m tools.settings_reference` writes it; with `--check` it writes nothing and exits 1
when the file is not what the code says (tests/test_settings_reference.py runs both ways).

It reads, without running them, the topic files `config/settings/base.py` lists (in its order),
then the production and demo settings and `config/gunicorn.py`: every call of a reader of
`config.settings.env` (`env_str`, `env_int`...) names its variable in full, and one read of each
variable says what it does (`doc=`), whether a shop in production sets it (`production=`) and,
when its default is not a plain value, the default in words (`shown_default=`). A variable read
with no such read, or with two, a name that is not spelled out, or a variable read from
`os.environ` past the readers, is refused with its file and line: the reference cannot be
written until the code says what the variable is.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from config.settings.env import READ_ELSEWHERE, Production

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "settings.md"
COMMAND = "python -m tools.settings_reference"
READERS = {"env_str", "env_bool", "env_int", "env_list", "env_decimal", "env_int_list"}
# Read after the topic files: each with the label its own defaults carry in the reference, and
# the title of its section.
OVERLAYS = (
    ("config/settings/production.py", "production", "Production only"),
    ("config/settings/local.py", "demo", "The demo only"),
    ("config/settings/test.py", "tests", "The tests only"),
    ("config/gunicorn.py", "gunicorn", "Gunicorn"),
)
IN_PRODUCTION = {
    Production.MUST_SET: "**must set**",
    Production.SHOULD_SET: "should set",
    None: "optional",
}


class ReferenceRefused(Exception):
    """The code does not say enough to write the reference: each problem with its place."""


@dataclass(frozen=True)
class Source:
    """A file the settings are read from."""

    path: str  # from the repository's root
    label: str  # the environment its defaults are for ("": every one)
    title: str
    about: str


@dataclass(frozen=True)
class Read:
    """One read of a variable, as written in the source."""

    name: str
    source: Source
    line: int
    default: str  # as the reference shows it
    doc: str
    production: Production | None
    documents: bool  # this read says what the variable is


@dataclass
class Variable:
    """A variable as the reference describes it."""

    name: str
    doc: str
    default: str
    production: Production | None
    source: Source | None  # None: read by the processes, not by the settings
    other_defaults: list[str] = field(default_factory=list)

    @property
    def shown_default(self) -> str:
        return "; ".join([self.default, *self.other_defaults])


# --- Reading the source ---------------------------------------------------------------------


def sources(root: Path = ROOT) -> list[Source]:
    """The topic files `config/settings/base.py` star-imports, in its order, then the overlays."""
    base = ast.parse((root / "config/settings/base.py").read_text())
    topics = [
        f"config/settings/{node.module.rsplit('.', 1)[-1]}.py"
        for node in base.body
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("config.settings.")
        and [alias.name for alias in node.names] == ["*"]
    ]
    return [
        *(_source(root, topic) for topic in topics),
        *(_source(root, path, label, title) for path, label, title in OVERLAYS),
    ]


def _source(root: Path, path: str, label: str = "", title: str = "") -> Source:
    """A topic file's title is its docstring's first line, and the rest says what it holds; an
    overlay's docstring says it all."""
    docstring = ast.get_docstring(ast.parse((root / path).read_text())) or ""
    if not title:
        title, _, docstring = docstring.partition("\n\n")
    return Source(
        path=path,
        label=label,
        title=" ".join(title.split()).rstrip("."),
        about=" ".join(docstring.split()),
    )


def reads(root: Path, source: Source) -> list[Read]:
    """Every read of an environment variable in `source`, in the order of the file."""
    tree = ast.parse((root / source.path).read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found, problems = [], []
    for node in ast.walk(tree):
        where = f"{source.path}:{getattr(node, 'lineno', 0)}"
        if _reads_the_environment_directly(node, parents):
            problems.append(f"{where}: read the variable through config.settings.env's readers")
        elif isinstance(node, ast.Call) and _reader_name(node.func) in READERS:
            try:
                found.append(_read(node, source))
            except ValueError as exc:
                problems.append(f"{where}: {exc}")
    if problems:
        raise ReferenceRefused("\n".join(problems))
    return sorted(found, key=lambda read: read.line)


def _reader_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _reads_the_environment_directly(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    if isinstance(node, ast.ImportFrom) and node.module == "os":
        return any(alias.name in ("environ", "getenv") for alias in node.names)
    if not (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
        and node.attr in ("environ", "getenv")
    ):
        return False
    parent = parents.get(node)
    # Choosing the settings module for the process is not reading a variable.
    return not (isinstance(parent, ast.Attribute) and parent.attr == "setdefault")


def _read(call: ast.Call, source: Source) -> Read:
    if not call.args or not _is_str(call.args[0]):
        raise ValueError("the variable's name must be spelled out, in full, as a string")
    name = call.args[0].value  # type: ignore[attr-defined]
    keywords = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
    doc = _text(keywords.get("doc"), f"{name}: doc")
    shown = _text(keywords.get("shown_default"), f"{name}: shown_default")
    production = _production(keywords.get("production"), name)
    documents = bool(doc)
    if not documents and (shown or production):
        raise ValueError(f"{name}: production= and shown_default= go with its doc=")
    default_node = call.args[1] if len(call.args) > 1 else keywords.get("default")
    default = shown or _shown(default_node, name, needed=documents)
    return Read(name, source, call.lineno, default, " ".join(doc.split()), production, documents)


def _is_str(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _text(node: ast.expr | None, what: str) -> str:
    if node is None:
        return ""
    if not _is_str(node):
        raise ValueError(f"{what} must be a string written out")
    return str(node.value)  # type: ignore[attr-defined]


def _production(node: ast.expr | None, name: str) -> Production | None:
    if node is None:
        return None
    if isinstance(node, ast.Attribute) and node.attr in Production.__members__:
        return Production[node.attr]
    raise ValueError(f"{name}: production= must be Production.MUST_SET or Production.SHOULD_SET")


def _shown(node: ast.expr | None, name: str, *, needed: bool) -> str:
    """The default as the reference shows it: a plain value in code type, "none" for nothing."""
    if node is None:
        return "none"  # env_str's own default, ""
    if isinstance(node, ast.Constant):
        value = node.value
        if value == "" or value is None:
            return "none"
        return f"`{str(value).lower() if isinstance(value, bool) else value}`"
    if isinstance(node, ast.List | ast.Tuple) and all(
        isinstance(item, ast.Constant) for item in node.elts
    ):
        items = [str(item.value) for item in node.elts]  # type: ignore[attr-defined]
        return f"`{','.join(items)}`" if items else "none"
    if isinstance(node, ast.JoinedStr) and all(
        isinstance(part, ast.Constant)
        or (
            isinstance(part, ast.FormattedValue)
            and isinstance(part.value, ast.Name)
            and part.value.id.isupper()
        )
        for part in node.values
    ):
        text = "".join(
            str(part.value) if isinstance(part, ast.Constant) else f"{{{part.value.id}}}"  # type: ignore[attr-defined]
            for part in node.values
        )
        return f"`{text}`"
    if needed:
        raise ValueError(f"{name}: its default is not a plain value: say it with shown_default=")
    return f"`{ast.unparse(node)}`"


# --- What the reference says ------------------------------------------------------------------


def variables(root: Path = ROOT) -> tuple[list[Source], list[Variable]]:
    """The sources, and every variable they read as the reference describes it (the order of
    the sources, then of each file), then those the processes read."""
    all_sources = sources(root)
    by_name, problems = _reads_by_name(root, all_sources)
    found = []
    for name, its_reads in by_name.items():
        try:
            found.append(_variable(name, its_reads))
        except ValueError as exc:
            problems.append(str(exc))
    for elsewhere in READ_ELSEWHERE:
        if elsewhere.name in by_name:
            problems.append(
                f"{elsewhere.name} is read by the settings: drop it from READ_ELSEWHERE"
            )
        found.append(
            Variable(
                elsewhere.name, elsewhere.doc, elsewhere.shown_default, elsewhere.production, None
            )
        )
    if problems:
        raise ReferenceRefused("\n".join(problems))
    order = {source.path: index for index, source in enumerate(all_sources)}
    found.sort(key=lambda v: order[v.source.path] if v.source else len(order))
    return all_sources, found


def _reads_by_name(
    root: Path, all_sources: list[Source]
) -> tuple[dict[str, list[Read]], list[str]]:
    by_name: dict[str, list[Read]] = {}
    problems = []
    for source in all_sources:
        try:
            for read in reads(root, source):
                by_name.setdefault(read.name, []).append(read)
        except ReferenceRefused as exc:
            problems.append(str(exc))
    return by_name, problems


def _variable(name: str, its_reads: list[Read]) -> Variable:
    """The variable its reads describe: the one read with a doc=, and the defaults other
    settings give it."""
    documented = [read for read in its_reads if read.documents]
    if len(documented) != 1:
        places = ", ".join(f"{r.source.path}:{r.line}" for r in documented or its_reads)
        say = "is described twice" if documented else "is read with no doc= saying what it is"
        raise ValueError(f"{name} {say} ({places}): give exactly one of its reads a doc=")
    [read] = documented
    variable = Variable(name, read.doc, read.default, read.production, read.source)
    for other in its_reads:
        shown = f"{other.source.label}: {other.default}"
        if (
            other.source.label != read.source.label
            and other.default != read.default
            and shown not in variable.other_defaults
        ):
            variable.other_defaults.append(shown)
    return variable


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    header = list(header)
    lines = [f"| {' | '.join(header)} |", f"|{'---|' * len(header)}"]
    lines += [f"| {' | '.join(_cell(cell) for cell in row)} |" for row in rows]
    return [*lines, ""]


def render(all_sources: list[Source], found: list[Variable]) -> str:
    """docs/settings.md."""
    # What the processes read first (which settings they load), then the settings' order.
    first = sorted(found, key=lambda v: v.source is not None)
    must = [v for v in first if v.production is Production.MUST_SET]
    should = [v for v in first if v.production is Production.SHOULD_SET]
    lines = [
        "# Settings reference",
        "",
        f"<!-- Generated from the settings' source by `{COMMAND}`: change the code, then run it."
        " tests/test_settings_reference.py fails while this file is out of date. -->",
        "",
        "Every environment variable the shop reads: what it does, its default, and whether a "
        "shop in production sets it. The demo needs none of them (`make demo`). Production runs "
        "every process with `DJANGO_SETTINGS_MODULE=config.settings.production`, whose settings "
        "refuse to start, naming each variable, while one of those it must have is missing or "
        "wrong. Deploying, step by step: [deployment.md](deployment.md).",
        "",
        f"## Must set in production ({len(must)})",
        "",
        *_table(("variable", "what it does"), ((f"`{v.name}`", v.doc) for v in must)),
        f"## Should set in production ({len(should)})",
        "",
        "The shop starts without them, but a shop in production sets them.",
        "",
        *_table(
            ("variable", "default", "what it does"),
            ((f"`{v.name}`", v.shown_default, v.doc) for v in should),
        ),
        "## Every variable, by topic",
        "",
        "One section a settings file, in the order `config/settings/base.py` reads them, then the "
        "production and the demo settings, gunicorn, and what the processes read themselves. A "
        "default marked `production:`, `demo:` or `gunicorn:` is that of those settings; the "
        "others hold everywhere.",
        "",
    ]
    for source in [*all_sources, None]:
        its = [v for v in found if v.source == source]
        if not its:
            continue
        if source is None:
            lines += ["### Read by the processes themselves", ""]
        else:
            lines += [f"### {source.title}", "", f"`{source.path}`. {source.about}".strip(), ""]
        lines += _table(
            ("variable", "default", "in production", "what it does"),
            ((f"`{v.name}`", v.shown_default, IN_PRODUCTION[v.production], v.doc) for v in its),
        )
    lines += [
        "The sandbox (the provider's emulator, for the demo and the tests only) reads its own "
        "`SANDBOX_*` variables: `sandbox/settings.py`.",
        "",
    ]
    return "\n".join(lines)


def reference(root: Path = ROOT) -> str:
    """What docs/settings.md must say, from the code under `root`."""
    return render(*variables(root))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the file is out of date; write nothing"
    )
    parser.add_argument("--file", type=Path, default=REFERENCE, help="default: docs/settings.md")
    args = parser.parse_args(argv)
    try:
        text = reference()
    except ReferenceRefused as exc:
        print(f"The settings do not say enough to write the reference:\n{exc}", file=sys.stderr)
        return 2
    if args.check:
        if not args.file.exists() or args.file.read_text() != text:
            print(f"{args.file} is out of date: run `{COMMAND}`.", file=sys.stderr)
            return 1
        return 0
    args.file.write_text(text)
    print(f"{args.file} written.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
