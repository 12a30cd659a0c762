"""No free-string comparison of a kind, verdict, format, certainty, state, source, type, area or level in the
package: ``e.kind == "nccl_warn"``, ``cause.verdict != "crash"``, ``kind in ("hang", "desync")`` compare against an
enum member instead (``model.EventKind``, ``rules.cause.CauseVerdict``, ...), so that a renamed word is a name the
type checker sees. The scan reads the source as text, line by line; each offence is named as file:line."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = (ROOT / "analyzer", ROOT / "dashboard")
NAMES = r"\b(?:kind|verdict|fmt|format|certainty|state|source|type|area|level)"
FREE_EQ = re.compile(NAMES + r"\s*(?:==|!=)\s*[\"'][a-z_]+[\"']")
FREE_IN = re.compile(NAMES + r"\s+(?:not\s+)?in\s*[({]\s*[\"'][a-z_]+[\"']\s*[,)}]")


def offences(text: str, name: str) -> list[str]:
    """``name:line: text`` of each line of ``text`` that compares one of the names with a string literal."""
    return [f"{name}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
            if FREE_EQ.search(line) or FREE_IN.search(line)]


def package_offences(folders: tuple[Path, ...] = PACKAGE_DIRS, root: Path = ROOT) -> list[str]:
    out: list[str] = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            out += offences(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
    return out


def test_the_package_compares_no_kind_verdict_format_or_state_with_a_string() -> None:
    found = package_offences()
    assert not found, "compare with an enum member, not a string:\n" + "\n".join(found)


def test_the_scan_finds_each_form() -> None:
    planted = "\n".join([
        'if e.kind == "nccl_warn":',
        "    ok = cause.verdict != 'crash'",
        'if kind in ("hang", "desync"):',
        'if fmt not in {"pickle", "json"}:',
        'x = state == "completed"',
        'if rec.type == "start" and source != "hook":',
    ])
    assert [x.split(":")[1] for x in offences(planted, "planted.py")] == ["1", "2", "3", "4", "5", "6"]


def test_the_scan_leaves_members_and_other_strings_alone() -> None:
    fine = "\n".join([
        "if e.kind == EventKind.NCCL_WARN:",
        'if cause.verdict in (CauseVerdict.HANG, CauseVerdict.DESYNC) and e.text == "x":',
        'if kind in ("ModuleNotFoundError", "ImportError"):',  # Python's exception names, not a word of ours
        'where = e.data.get("kind")',
    ])
    assert offences(fine, "fine.py") == []


def test_a_planted_line_in_a_package_folder_fails_the_scan(tmp_path: Path) -> None:
    pkg = tmp_path / "analyzer"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "planted.py").write_text('def f(e):\n    return e.kind == "nccl_warn"\n')
    assert package_offences((pkg,), tmp_path) == ['analyzer/sub/planted.py:2: return e.kind == "nccl_warn"']
