"""A small HTML tree of a page, to query by id, class, tag and attributes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from django.http import HttpResponse

VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
    "track", "wbr",
}  # fmt: skip


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    @property
    def text(self) -> str:
        parts = [c if isinstance(c, str) else c.text for c in self.children]
        return " ".join(" ".join(parts).split())

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(
        self, tag: str | None = None, *, id: str | None = None, cls: str | None = None, **attrs: str
    ) -> list[Node]:
        found = []
        for node in self.iter():
            if tag and node.tag != tag:
                continue
            if id and node.attrs.get("id") != id:
                continue
            if cls and cls not in node.classes:
                continue
            if any(node.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            found.append(node)
        return found

    def find(self, tag: str | None = None, **kwargs: Any) -> Node | None:
        found = self.find_all(tag, **kwargs)
        return found[0] if found else None

    def one(self, tag: str | None = None, **kwargs: Any) -> Node:
        found = self.find_all(tag, **kwargs)
        assert len(found) == 1, f"expected one {tag} {kwargs}, found {len(found)}"
        return found[0]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def html(response: HttpResponse | str) -> Node:
    """The page as a tree of nodes."""
    text = response if isinstance(response, str) else response.content.decode()
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root
