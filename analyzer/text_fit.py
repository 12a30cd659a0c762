"""Text fitted to a terminal line: cut at a word boundary, JSON records said as ``key=value``.

Pure string functions; the caller still passes the result through ``text_safety`` (control
characters, markup) before printing it.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

ELLIPSIS = "\u2026"
MAX_FIELDS = 8
MAX_LITERAL = 2000  # longer printed dicts are shown as text (literal_eval's cost grows with nesting)  # key=value pairs of one record; the rest is counted
# a "key": scalar pair of a JSON object, for a record already cut mid-way (no longer valid JSON)
_PAIR_RE = re.compile(r'"(\w{1,40})"\s*:\s*("(?:[^"\\]|\\.){0,400}"|-?\d[\d.eE+-]{0,30}|true|false|null|[\[{])')


def shorten(text: str, width: int, tail: str = ELLIPSIS) -> str:
    """``text`` cut to at most ``width`` characters at a word boundary, ``tail`` marking the cut."""
    if len(text) <= width:
        return text
    cut = text[: max(1, width - len(tail))]
    space = cut.rfind(" ")
    if space > width // 2:  # a long unbroken token (a path, a URL) is cut where it must be
        cut = cut[:space]
    return cut.rstrip(" ,;:") + tail


def _value(v: Any) -> str | None:
    if isinstance(v, dict):
        return f"{{{len(v)} keys}}" if v else None
    if isinstance(v, list):
        return f"[{len(v)} items]" if v else None
    if isinstance(v, str):  # "KeyboardInterrupt: " (an exception without a message) -> KeyboardInterrupt
        v = v.strip().removesuffix(":").strip()
    if v is None or v == "":
        return None
    return str(v)


def record_text(obj: dict[str, Any]) -> str:
    """``{"type": "stack", "rank": 0, "where": ..., "frames": [...]}`` -> ``stack rank=0 where=... frames=[5 items]``."""
    head = [str(obj["type"])] if isinstance(obj.get("type"), str) else []
    pairs = [f"{k}={v}" for k, v in ((k, _value(v)) for k, v in obj.items() if k not in ("type", "t")) if v is not None]
    more = len(pairs) - MAX_FIELDS
    return " ".join(head + pairs[:MAX_FIELDS] + ([f"(+{more} more)"] if more > 0 else []))


def _cut_record(text: str) -> str | None:
    """The leading ``key=value`` pairs of a JSON object cut before its end, up to its first nested value."""
    pairs: list[tuple[str, Any]] = []
    for m in _PAIR_RE.finditer(text):
        raw = m.group(2)
        if raw in ("[", "{"):
            break
        try:
            pairs.append((m.group(1), json.loads(raw)))
        except ValueError:
            break
    return record_text(dict(pairs)) + " ..." if pairs else None


def _named_dict(s: str) -> str | None:
    """``pg_status[0] = {'last_enqueued': 25, ...}`` (a Python dict printed) -> ``pg_status[0]: last_enqueued=25 ...``."""
    import ast

    name, sep, rest = s.partition(" = {")
    if not sep or len(s) > MAX_LITERAL or " " in name:
        return None
    try:
        obj = ast.literal_eval("{" + rest)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return None
    return f"{name}: {record_text(obj)}" if isinstance(obj, dict) else None


def evidence_line(text: str, width: int = 200) -> str:
    """One line of evidence made readable: a JSON record as ``key=value``, anything else cut at a word."""
    s = text.strip()
    said = _named_dict(s) if " = {" in s else None
    if said:
        s = said
    elif s.startswith("{"):
        try:
            obj = json.loads(s)
        except (ValueError, RecursionError):
            obj = None
        said = record_text(obj) if isinstance(obj, dict) else _cut_record(s)
        if said:
            s = said
    return shorten(s, width)


def rank_runs(ranks: Iterable[int]) -> list[str]:
    """Sorted distinct ranks as runs: ``[0, 1, 2, 3, 5, 7, 8]`` -> ``["0-3", "5", "7-8"]``."""
    rs = sorted(set(ranks))
    runs: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        runs.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return runs
