"""Links between the pages resolve: each relative link names a file that exists, and each
``#anchor`` names a heading (or an ``id``) of the page it points at."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt
from support.doc_pages import ROOT, pages

_PARSER = MarkdownIt("commonmark")


def _links(page: Path) -> list[str]:
    """Every link target of the page's Markdown (not inside code)."""
    found: list[str] = []
    stack = list(_PARSER.parse(page.read_text(encoding="utf-8")))
    while stack:
        token = stack.pop()
        if token.type == "link_open":
            found.append(str(token.attrs.get("href", "")))
        stack.extend(token.children or ())
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but ``_`` and ``-`` dropped,
    spaces as ``-``."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    seen: dict[str, int] = {}
    found = set(re.findall(r"""<a\s+(?:id|name)=["']([^"']+)["']""", text))
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, flags=re.MULTILINE):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def broken_links(page: Path) -> list[str]:
    broken = []
    for href in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", href):  # http:, https:, mailto:
            continue
        path, _, anchor = href.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            shown = target.relative_to(ROOT) if target.is_relative_to(ROOT) else target
            broken.append(f"{href}: no file {shown}")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{href}: {target.name} has no heading #{anchor}")
    return broken


def test_every_link_of_the_docs_resolves_to_a_file_and_a_heading() -> None:
    found = {str(p.relative_to(ROOT)): broken_links(p) for p in pages()}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_link_check_sees_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Some `code` heading\n\n## Again\n\n## Again\n")
    page = tmp_path / "a.md"
    page.write_text("[ok](b.md#some-code-heading) [ok2](b.md#again-1) [self](#top)\n"
                    "[gone](reference/expressions.md) [no heading](b.md#nowhere)\n\n# Top\n")
    assert sorted(broken_links(page)) == [
        "b.md#nowhere: b.md has no heading #nowhere",
        f"reference/expressions.md: no file {tmp_path / 'reference' / 'expressions.md'}"]
