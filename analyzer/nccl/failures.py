"""The knowledge base of NCCL, PyTorch and CUDA failures, read from ``failures.toml``.

Each entry is one failure as data: a pattern for the message (a regular expression over one log
line or exception text), the NCCL / torch releases whose wording it matches, its cause, the fix, a
documentation link, and one example message per release form (tests/nccl/test_knowledge_base.py checks
every pattern against its own examples and no other entry's, unless the overlap is declared).

``classify`` returns the first entry whose pattern matches, in the file's order: an entry that
refines another (a loopback address in a refused connection) comes before the general one.
Patterns are compiled once, case-insensitive, and written linear (bounded gaps, no nested
repetition); text is cut to ``MAX_TEXT`` characters before matching.
"""
from __future__ import annotations

import enum
import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

from .prefilter import required_literals

class EntryKind(enum.StrEnum):
    """What an entry's message is."""

    ERROR = "error"  # a failure
    CONFIG = "config"  # a setting is the cause (the config detector names it)
    NOTE = "note"  # worth saying, argues for no verdict


class EntryVerdict(enum.StrEnum):
    """The verdict an entry argues for when it is the job's first failure (``NONE``: none, never kept on an entry)."""

    CONFIG_ERROR = "config_error"
    CRASH = "crash"
    NONE = "none"


class Area(enum.StrEnum):
    """What an entry's failure is about."""

    INIT = "init"
    BOOTSTRAP = "bootstrap"
    SOCKET = "socket"
    SHM = "shm"
    IB = "ib"
    P2P = "p2p"
    NVLS = "nvls"
    COLLNET = "collnet"
    PROXY = "proxy"
    PLUGIN = "plugin"
    ENQUEUE = "enqueue"
    TOPOLOGY = "topology"
    MISMATCH = "mismatch"
    CUDA = "cuda"
    XID = "xid"
    TORCH_C10D = "torch-c10d"
    TORCH_ELASTIC = "torch-elastic"
    CONTAINER = "container"
    ENVIRONMENT = "environment"
    RELEASE = "release"
    LAUNCHER = "launcher"
    NCCL_BUG = "nccl-bug"


# the areas of torch's distributed set-up and its launchers: their messages say the job is a distributed one (a CUDA
# error alone does not)
DIST_AREAS = frozenset({Area.TORCH_C10D, Area.TORCH_ELASTIC, Area.LAUNCHER, Area.ENVIRONMENT, Area.CONTAINER})
KINDS = tuple(EntryKind)
SEVERITIES = ("info", "warning", "error", "critical")
AREAS = tuple(Area)
# the verdict an entry argues for when it is the job's first failure, by area (an entry's own ``verdict``
# overrides it; notes argue for none): the host, container, driver or fabric set up wrong is a config
# error; a network failure (IB, sockets, the proxy thread carrying them) is a crash no rank is at fault for; the launch
# set up wrong (mpirun's daemons, ssh) is a config error; a known bug of NCCL's own (area nccl-bug) is a crash no rank
# is at fault for, whichever rank's process it happened in
VERDICTS = tuple(EntryVerdict)
AREA_VERDICT = {"shm": "config_error", "nvls": "config_error", "topology": "config_error", "container": "config_error",
                "environment": "config_error", "launcher": "config_error", "ib": "crash", "socket": "crash",
                "proxy": "crash", "nccl-bug": "crash"}
BUG_AREA = Area.NCCL_BUG
MAX_TEXT = 4096
REQUIRED = ("id", "area", "pattern", "releases", "cause", "fix", "link", "examples")


@dataclass(frozen=True, slots=True)
class Example:
    release: str  # the release form the text is written in, e.g. "NCCL 2.21-2.27"
    text: str


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    area: Area
    kind: EntryKind
    severity: str
    pattern: re.Pattern[str]
    releases: tuple[str, ...]
    cause: str
    fix: str
    link: str
    examples: tuple[Example, ...]
    overlaps: tuple[str, ...] = ()  # entries whose examples this pattern may match too
    verdict: EntryVerdict | None = None  # CONFIG_ERROR / CRASH when it is the first failure (``_verdict``)
    settings: tuple[str, ...] = ()  # settings that cause this message when set (a config error naming them)

    @property
    def is_bug(self) -> bool:
        """A known bug of NCCL's own (its area ``nccl-bug``): no rank's code is at fault, whichever rank hit it."""
        return self.area == BUG_AREA

    # the names the detectors used before the knowledge base (catalogue.KnownError)
    @property
    def meaning(self) -> str:
        return self.cause

    @property
    def hint(self) -> str:
        return self.fix

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "area": self.area, "kind": self.kind, "severity": self.severity, "verdict": self.verdict,
                "settings": list(self.settings), "releases": list(self.releases), "cause": self.cause, "fix": self.fix, "link": self.link}


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
    if kind == EntryKind.ERROR and sev in ("info", "warning"):  # the detectors take kind "error" for a failure
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
    verdict = str(raw.get("verdict", EntryVerdict.NONE if kind == EntryKind.NOTE else AREA_VERDICT.get(area, EntryVerdict.NONE)))
    if verdict not in VERDICTS:
        raise KnowledgeBaseError(f"entry {eid}: verdict {verdict!r} unknown")
    if kind == EntryKind.CONFIG and "verdict" not in raw:
        verdict = EntryVerdict.CONFIG_ERROR  # a setting is the cause
    if kind == EntryKind.NOTE and verdict != EntryVerdict.NONE:
        raise KnowledgeBaseError(f"entry {eid}: a note argues for no verdict")
    settings = raw.get("settings", [])
    if not isinstance(settings, list) or not all(isinstance(x, str) and x.startswith("NCCL_") for x in settings):
        raise KnowledgeBaseError(f"entry {eid}: settings must be a list of NCCL_* names")
    return Entry(eid, Area(area), EntryKind(kind), sev, pattern, tuple(str(r) for r in releases), str(raw["cause"]).strip(),
                 str(raw["fix"]).strip(), str(raw["link"]), tuple(exs),
                 tuple(str(o) for o in overlaps) if isinstance(overlaps, list) else (),
                 None if verdict == EntryVerdict.NONE else EntryVerdict(verdict), tuple(settings))


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


def classify_in_area(text: str, area: str) -> Entry | None:
    """``classify(text)`` when its answer is an entry of ``area``, else None, without walking the whole knowledge
    base for a text no entry of the area matches (a large job's thousands of distinct NET lines): the area's entries
    are searched first (a handful), and only when one matches is the full, ordered answer asked for."""
    t = text[:MAX_TEXT]
    low = t.lower() if t.isascii() else None
    for e, lit, gate in _area_index(area):
        if low is not None and (lit not in low if gate is None else gate.search(low) is None):
            continue
        if e.pattern.search(t):
            got = classify(text)  # an earlier entry of another area may match first: the ordered answer decides
            return got if got is not None and got.area == area else None
    return None


@functools.cache
def _area_index(area: str) -> tuple[tuple[Entry, str, re.Pattern[str] | None], ...]:
    """The area's entries, each with the test of its literals on the lower-cased text: one literal (the usual
    case) by ``in``; several by one search of their alternation (no per-literal loop); none: "" (always in)."""
    out = []
    for e, lits in _index():
        if e.area == area:
            gate = re.compile("|".join(map(re.escape, lits))) if len(lits) > 1 else None
            out.append((e, lits[0] if len(lits) == 1 else "", gate))
    return tuple(out)


@functools.cache
def _index() -> tuple[tuple[Entry, tuple[str, ...]], ...]:
    return tuple((e, required_literals(e.pattern.pattern)) for e in entries())


def by_id(eid: str) -> Entry:
    for e in entries():
        if e.id == eid:
            return e
    raise KeyError(eid)
