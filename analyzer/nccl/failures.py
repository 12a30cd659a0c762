"""The knowledge base of NCCL, PyTorch and CUDA failures, read from ``failures.toml``.

Each entry is one failure as data: a pattern for the message (a regular expression over one log
line or exception text), the NCCL / torch releases whose wording it matches, its cause, the fix, a
documentation link, and one example message per release form (tests/test_knowledge_base.py checks
every pattern against its own examples and no other entry's, unless the overlap is declared).

``classify`` returns the first entry whose pattern matches, in the file's order: an entry that
refines another (a loopback address in a refused connection) comes before the general one.
Patterns are compiled once, case-insensitive, and written linear (bounded gaps, no nested
repetition); text is cut to ``MAX_TEXT`` characters before matching.
"""
from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

KINDS = ("error", "config", "note")  # config: a setting is the cause (the config detector names it)
SEVERITIES = ("info", "warning", "error", "critical")
AREAS = (
    "init", "bootstrap", "socket", "shm", "ib", "p2p", "nvls", "collnet", "proxy", "plugin", "enqueue",
    "topology", "mismatch", "cuda", "xid", "torch-c10d", "torch-elastic", "container", "environment", "release",
)
MAX_TEXT = 4096
REQUIRED = ("id", "area", "pattern", "releases", "cause", "fix", "link", "examples")


@dataclass(frozen=True, slots=True)
class Example:
    release: str  # the release form the text is written in, e.g. "NCCL 2.21-2.27"
    text: str


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    area: str
    kind: str
    severity: str
    pattern: re.Pattern[str]
    releases: tuple[str, ...]
    cause: str
    fix: str
    link: str
    examples: tuple[Example, ...]
    overlaps: tuple[str, ...] = ()  # entries whose examples this pattern may match too

    # the names the detectors used before the knowledge base (catalogue.KnownError)
    @property
    def meaning(self) -> str:
        return self.cause

    @property
    def hint(self) -> str:
        return self.fix

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "area": self.area, "kind": self.kind, "severity": self.severity,
                "releases": list(self.releases), "cause": self.cause, "fix": self.fix, "link": self.link}


class KnowledgeBaseError(ValueError):
    """failures.toml does not hold a valid entry (names the entry)."""


def _entry(raw: dict[str, object], n: int) -> Entry:
    eid = str(raw.get("id", f"#{n}"))
    missing = [k for k in REQUIRED if not raw.get(k)]
    if missing:
        raise KnowledgeBaseError(f"entry {eid}: missing {', '.join(missing)}")
    area, kind, sev = str(raw["area"]), str(raw.get("kind", "error")), str(raw.get("severity", "error"))
    if area not in AREAS or kind not in KINDS or sev not in SEVERITIES:
        raise KnowledgeBaseError(f"entry {eid}: area {area!r}, kind {kind!r} or severity {sev!r} unknown")
    if kind == "error" and sev in ("info", "warning"):  # the detectors take kind "error" for a failure
        raise KnowledgeBaseError(f"entry {eid}: a {sev} is kind 'note', not 'error'")
    try:
        pattern = re.compile(str(raw["pattern"]), re.IGNORECASE)
    except re.error as e:
        raise KnowledgeBaseError(f"entry {eid}: pattern does not compile: {e}") from e
    examples = raw["examples"]
    releases = raw["releases"]
    if not isinstance(examples, list) or not isinstance(releases, list):
        raise KnowledgeBaseError(f"entry {eid}: examples and releases must be lists")
    exs = []
    for x in examples:
        if not isinstance(x, dict) or not x.get("release") or not x.get("text"):
            raise KnowledgeBaseError(f"entry {eid}: an example needs a release and a text")
        exs.append(Example(str(x["release"]), str(x["text"])))
    overlaps = raw.get("overlaps", [])
    return Entry(eid, area, kind, sev, pattern, tuple(str(r) for r in releases), str(raw["cause"]).strip(),
                 str(raw["fix"]).strip(), str(raw["link"]), tuple(exs),
                 tuple(str(o) for o in overlaps) if isinstance(overlaps, list) else ())


def parse(text: str) -> tuple[Entry, ...]:
    """Entries of a knowledge-base file's text; KnowledgeBaseError for a bad entry or a duplicate id."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise KnowledgeBaseError(f"failures.toml: {e}") from e
    raw = doc.get("entry", [])
    if not isinstance(raw, list):
        raise KnowledgeBaseError("failures.toml: [[entry]] tables expected")
    out = tuple(_entry(r, n) for n, r in enumerate(raw))
    ids = [e.id for e in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise KnowledgeBaseError(f"failures.toml: duplicate ids {', '.join(dup)}")
    return out


@functools.cache
def entries() -> tuple[Entry, ...]:
    """The knowledge base shipped with ncclscope, read and compiled once per process."""
    return parse(resources.files(__package__).joinpath("failures.toml").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=8192)
def classify(text: str) -> Entry | None:
    """The first entry whose pattern matches ``text``, or None. Cached: one failure is echoed by
    every rank, and the detectors ask about the same lines more than once. An entry is searched only
    when the (ASCII) text holds one of the literals its pattern cannot match without."""
    t = text[:MAX_TEXT]
    low = t.lower() if t.isascii() else None
    for e, lits in _index():
        if low is not None and lits:
            for lit in lits:
                if lit in low:
                    break
            else:
                continue
        if e.pattern.search(t):
            return e
    return None


@functools.cache
def _index() -> tuple[tuple[Entry, tuple[str, ...]], ...]:
    return tuple((e, required_literals(e.pattern.pattern)) for e in entries())


_META = set("()[]{}|.^$*+?\\")
_ESCAPED = set(".()[]{}|^$*+?\\/-:'\"<>=,#&~ ")
MIN_LITERAL = 3


def required_literals(pattern: str) -> tuple[str, ...]:
    """One lower-case literal per top-level alternative that every match of it contains; () when some
    alternative has none of at least MIN_LITERAL characters (the entry is then always searched).
    Conservative: groups and classes end a literal, and a quantified character is dropped."""
    out: list[str] = []
    for branch in _branches(pattern):
        best, run, i = "", "", 0
        while i < len(branch):
            c = branch[i]
            if c == "\\" and i + 1 < len(branch) and branch[i + 1] in _ESCAPED:
                run, i = run + branch[i + 1], i + 2
            elif c in "?*{+":  # the character before a quantifier is optional (or repeats): drop it
                best, run = max(best, run[:-1], key=len), ""
                i = _skip_quantifier(branch, i)
            elif c in _META:  # a group, class, escape like \\d, or '.', with any quantifier after it
                best, run = max(best, run, key=len), ""
                i = _skip_quantifier(branch, _skip_group(branch, i))
            else:
                run, i = run + c, i + 1
        best = max(best, run, key=len)
        if len(best) < MIN_LITERAL:
            return ()
        out.append(best.lower())
    return tuple(out)


def _branches(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern."""
    parts, depth, cur, i = [], 0, "", 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            cur, i = cur + pattern[i:i + 2], i + 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(cur)
            cur, i = "", i + 1
            continue
        cur, i = cur + c, i + 1
    return parts + [cur]


def _skip_group(p: str, i: int) -> int:
    """Past a group or class starting at p[i]; past one character for any other meta character."""
    if p[i] not in "([":
        return i + 2 if p[i] == "\\" else i + 1
    close, depth, j = ")" if p[i] == "(" else "]", 0, i
    while j < len(p):
        if p[j] == "\\":
            j += 2
            continue
        if p[i] == "(" and p[j] == "(":
            depth += 1
        elif p[j] == close:
            depth -= 1 if p[i] == "(" else 1
            if depth <= 0:
                return j + 1
        j += 1
    return j


def _skip_quantifier(p: str, i: int) -> int:
    if i < len(p) and p[i] == "{":
        j = p.find("}", i)
        i = j + 1 if j >= 0 else len(p)
    elif i < len(p) and p[i] in "?*+":
        i += 1
    if i < len(p) and p[i] in "?+":  # lazy / possessive
        i += 1
    return i


def by_id(eid: str) -> Entry:
    for e in entries():
        if e.id == eid:
            return e
    raise KeyError(eid)
