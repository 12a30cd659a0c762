"""Every relative link in the README, ARCHITECTURE.md, CHANGELOG.md and docs/ resolves: the file exists and,
where the link names a heading (``#anchor``), the file has that heading as GitHub spells its anchor.
The README stays short enough to read in one sitting."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

DOCS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
README_MAX_LINES = 400


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces as hyphens,
    a repeated heading numbered (-1, -2, ...). Headings inside fenced code are not headings."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not re.match(r"#{1,6} ", line):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(text: str) -> list[str]:
    """The link targets outside fenced code."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out += LINK.findall(line)
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in links(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, broken


def test_anchor_spelling() -> None:
    assert anchors("## At scale: `benchmarks/live_load.py`\n## Limits\n## Limits\n") == {
        "at-scale-benchmarkslive_loadpy", "limits", "limits-1"}
    assert anchors("```\n# not a heading\n```\n### The whole report\n") == {"the-whole-report"}


def test_readme_reads_in_one_sitting() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES
